#!/bin/sh
# Builds __NAME__ and calls it through piton, checking its answers.
# Run: sh test.sh            (PITON=/path/to/piton to use another piton)
set -eu
cd "$(dirname "$0")"
piton=${PITON:-piton}
fail() { echo "FAIL: $*" >&2; exit 1; }

"$piton" build . -o __PROJECT__.wasm >/dev/null

out=$("$piton" call __NAME__ '{"text": "one two  three"}' --plugins .) || fail "call exited $?"
[ "$out" = "3" ] || fail "expected 3, got: $out"

# Arguments that do not fit the schema: an input error, exit 1.
if out=$("$piton" call __NAME__ '{"text": 3}' --plugins . 2>&1); then fail "accepted a number"; fi
case $out in *"(input error:"*) ;; *) fail "expected an input error, got: $out" ;; esac

# The tool's own error result, exit 1.
if out=$("$piton" call __NAME__ '{"text": "   "}' --plugins . 2>&1); then fail "no words accepted"; fi
case $out in *"the text has no words"*) ;; *) fail "expected the error result, got: $out" ;; esac

echo "ok: __NAME__ works"
