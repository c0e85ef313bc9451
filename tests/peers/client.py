"""An MCP client made of the official Python SDK (`mcp.Client`), for piton's tests.

Connects to one server, lists its tools, makes the calls asked for, and prints one JSON
object on stdout for the test to assert on; it judges nothing itself.

    python client.py [--mode auto|legacy|2026-07-28] [--call NAME ARGS_JSON]... --url URL
    python client.py [--mode auto|legacy|2026-07-28] [--call NAME ARGS_JSON]... -- COMMAND [ARG]...

`--elicit ANSWER` (repeatable) declares the elicitation capability and answers each
question the server asks, in order: `allow_once`, `allow_for_a_while` or `deny` (accept
with that decision), `decline`, `cancel`, or `error` (the callback fails).
`--elicit-content JSON` (repeatable, in turn with `--elicit`) answers a question with
accept and that content instead. Without either the client declares no elicitation. `--round NAME ARGS_JSON STATE ANSWER` (2026-07-28) makes
one round by hand: a `tools/call` that may answer input_required, with `requestState`
STATE (`@N`: the one round N answered with) and the answer ANSWER in `inputResponses`
under piton's approval key, or the key `--round-key` names (`-` for none of either).

`--url` is Streamable HTTP; `-- COMMAND` starts the server over stdio, with the
environment variables named PITON_* passed on (the SDK passes only a safe few).
The default mode, `auto`, is the SDK's: it first sends `server/discover` and falls back
to `initialize` on an error.

Output:
    {"protocol_version": "...", "server_info": {...} | null,
     "tools": [Tool as on the wire, camelCase],
     "calls": [{"name": ..., "arguments": ..., "result": CallToolResult as on the wire}
               or {"name": ..., "arguments": ..., "error": {"code": int, "message": str}}],
     "asked": [{"message": str, "requested_schema": {...}}],
     "rounds": [{"name": ..., "result": CallToolResult or InputRequiredResult} or {..., "error"}]}
Exit 0 whenever that JSON was printed; anything else is a traceback and exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from mcp import Client, MCPError, StdioServerParameters, types

QUESTION_KEY = "piton_approval"
# How an `--elicit-content` answer is kept among the `--elicit` ones.
CONTENT = "content:"


def answer(word: str) -> types.ElicitResult:
    """The ElicitResult an answer word stands for."""
    if word.startswith(CONTENT):
        return types.ElicitResult(action="accept", content=json.loads(word[len(CONTENT) :]))
    if word in ("decline", "cancel"):
        return types.ElicitResult(action=word)
    return types.ElicitResult(action="accept", content={"decision": word})


def wire(model: Any) -> Any:
    """A pydantic model as the JSON the server sent (aliases, no unset fields)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.url:
        target: Any = args.url
    else:
        command, *rest = args.command
        env = {k: v for k, v in os.environ.items() if k.startswith("PITON_")}
        target = StdioServerParameters(command=command, args=rest, env=env)
    calls = [(name, json.loads(arguments)) for name, arguments in args.call or []]
    asked: list[dict[str, Any]] = []
    answers = list(args.elicit or [])

    async def on_elicit(context: Any, params: Any) -> Any:
        asked.append(
            {"message": params.message, "requested_schema": getattr(params, "requested_schema", None)}
        )
        if not answers:
            return types.ErrorData(code=-32600, message="the test gave no more answers")
        word = answers.pop(0)
        if word == "error":
            return types.ErrorData(code=-32600, message="the user's client failed")
        return answer(word)

    extra: dict[str, Any] = {}
    if args.elicit is not None or args.round:
        extra["elicitation_callback"] = on_elicit
    async with Client(
        target, mode=args.mode, read_timeout_seconds=args.timeout, **extra
    ) as client:
        info = client.server_info
        report: dict[str, Any] = {
            "protocol_version": client.protocol_version,
            "server_info": wire(info) if info is not None else None,
            "tools": [wire(tool) for tool in (await client.list_tools()).tools],
            "calls": [],
        }
        for name, arguments in calls:
            entry: dict[str, Any] = {"name": name, "arguments": arguments}
            try:
                entry["result"] = wire(await client.call_tool(name, arguments))
            except MCPError as error:
                entry["error"] = {"code": error.code, "message": error.message}
            report["calls"].append(entry)
        report["asked"] = asked
        report["rounds"] = []
        for name, arguments, state, word in args.round or []:
            entry = {"name": name, "arguments": json.loads(arguments)}
            if state.startswith("@"):
                state = report["rounds"][int(state[1:])].get("result", {}).get("requestState", "-")
            try:
                result = await client.session.call_tool(
                    name,
                    entry["arguments"],
                    request_state=None if state == "-" else state,
                    input_responses=None if word == "-" else {args.round_key: answer(word)},
                    allow_input_required=True,
                )
                entry["result"] = wire(result)
            except MCPError as error:
                entry["error"] = {"code": error.code, "message": error.message}
            report["rounds"].append(entry)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="auto", help="auto (discover first), legacy or 2026-07-28")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    parser.add_argument(
        "--call", nargs=2, action="append", metavar=("NAME", "ARGS_JSON"), help="a tools/call"
    )
    parser.add_argument(
        "--elicit", action="append", metavar="ANSWER", help="declare elicitation; answer so"
    )
    parser.add_argument(
        "--elicit-content",
        action="append",
        dest="elicit",
        type=lambda content: CONTENT + content,
        metavar="JSON",
        help="declare elicitation; accept with this content",
    )
    parser.add_argument(
        "--round",
        nargs=4,
        action="append",
        metavar=("NAME", "ARGS_JSON", "STATE", "ANSWER"),
        help="one tools/call round by hand (2026-07-28)",
    )
    parser.add_argument(
        "--round-key", default=QUESTION_KEY, help="the inputResponses key of --round answers"
    )
    parser.add_argument("--url", help="a Streamable HTTP endpoint")
    parser.add_argument("command", nargs="*", help="a stdio server: COMMAND [ARG]...")
    args = parser.parse_args()
    if bool(args.url) == bool(args.command):
        parser.error("give either --url URL or -- COMMAND [ARG]...")
    report = asyncio.run(run(args))
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
