// Unit tests of the SDK's pure part, run with Node's own runner:
//   node --test guest-sdk/js/
// (tests/it/lang/js.rs runs them under cargo test with Node 22 from target/peers).

import { test } from "node:test";
import assert from "node:assert/strict";

import {
  FunctionTool,
  Hints,
  Image,
  Tool,
  ToolError,
  ToolInputError,
  callTool,
  toContent,
  tool,
  toolboxOf,
  toolsOf,
  validate,
} from "./piton.js";

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1];

const wordCount = tool(
  function word_count({ text }) {
    return String(text.split(/\s+/).filter(Boolean).length);
  },
  {
    description: "Count the words in a text.",
    inputSchema: {
      type: "object",
      properties: { text: { type: "string" } },
      required: ["text"],
    },
    readOnly: true,
    openWorld: false,
  },
);

test("a hint left out assumes the worst", () => {
  const t = tool(function anything() {});
  assert.deepEqual({ ...t.hints }, { readOnly: false, destructive: true, idempotent: false, openWorld: true });
  assert.deepEqual({ ...new Hints() }, { ...t.hints });
});

test("readOnly sets destructive false and idempotent true", () => {
  assert.deepEqual({ ...new Hints({ readOnly: true }) }, {
    readOnly: true,
    destructive: false,
    idempotent: true,
    openWorld: true,
  });
  assert.deepEqual({ ...wordCount.hints }, { readOnly: true, destructive: false, idempotent: true, openWorld: false });
  const adds = tool(function add() {}, { destructive: false });
  assert.equal(adds.hints.destructive, false);
  assert.equal(adds.hints.idempotent, false);
});

test("contradicting or non-boolean hints throw at definition", () => {
  assert.throws(() => tool(function f() {}, { readOnly: true, destructive: true }), RangeError);
  assert.throws(() => tool(function f() {}, { readOnly: true, idempotent: false }), RangeError);
  assert.throws(() => new Hints({ readOnly: "yes" }), TypeError);
  assert.throws(() => new Hints({ readonly: true }), /no hint `readonly`/);
  assert.throws(() => tool(function f() {}, { parallel: 1 }), TypeError);
});

test("the name defaults to the function's and must match the rule", () => {
  assert.equal(wordCount.name, "word_count");
  assert.equal(tool(function f() {}, { name: "files-v2" }).name, "files-v2");
  assert.equal(tool(function f() {}, { name: "x".repeat(64) }).name.length, 64);
  for (const bad of ["bad name", "", "x".repeat(65), "é", "a.b"]) {
    assert.throws(() => tool(function f() {}, { name: bad }), TypeError, bad);
  }
  assert.throws(() => tool(() => 1), /anonymous function needs a name/);
  assert.throws(() => tool(wordCount), /applied twice/);
  assert.throws(() => tool("f"), /takes a function/);
  assert.throws(() => tool(function f() {}, { read_only: true }), /unknown option `read_only`/);
});

test("an input schema must be an object schema that compiles", () => {
  assert.deepEqual(tool(function f() {}).inputSchema, { type: "object", properties: {}, additionalProperties: false });
  assert.throws(() => tool(function f() {}, { inputSchema: { type: "string" } }), /object schema/);
  assert.throws(() => tool(function f() {}, { inputSchema: [] }), TypeError);
  assert.throws(
    () => tool(function f() {}, { inputSchema: { type: "object", properties: { a: { type: "string", pattern: "(" } } } }),
    /inputSchema.properties.a: pattern "\(" is not a regular expression/,
  );
  assert.throws(() => tool(function f() {}, { inputSchema: { type: "object", properties: { a: { type: "text" } } } }), /type "text"/);
  assert.throws(() => tool(function f() {}, { inputSchema: { type: "object", properties: { a: { $ref: "#/$defs/x" } } } }), /\$ref/);
  assert.throws(() => tool(function f() {}, { inputSchema: { type: "object", n: 1n } }), /cannot become JSON/);
});

test("arguments are checked against the schema, naming the path", () => {
  const schema = {
    type: "object",
    properties: {
      text: { type: "string", minLength: 1, maxLength: 5, pattern: "^[a-z]+$" },
      n: { type: "integer", minimum: 1, maximum: 3 },
      tags: { type: "array", items: { type: "string" }, maxItems: 2 },
      mode: { enum: ["a", "b"] },
      fixed: { const: 7 },
      either: { anyOf: [{ type: "string" }, { type: "number" }] },
      one: { oneOf: [{ type: "integer" }, { type: "number", minimum: 10 }] },
      nested: {
        type: "object",
        properties: { deep: { $ref: "#/$defs/point" } },
        additionalProperties: false,
      },
    },
    required: ["text"],
    additionalProperties: false,
    $defs: { point: { type: "object", properties: { x: { type: "number" } }, required: ["x"] } },
  };
  const fits = (v) => validate(schema, v);
  assert.equal(fits({ text: "abc" }), undefined);
  assert.equal(fits({ text: 3 }), "text: expected a string, not a number");
  assert.equal(fits({}), "text: required, but missing");
  assert.equal(fits([]), "the arguments must be an object, not an array");
  assert.equal(fits({ text: "" }), "text: must have at least 1 characters, not 0");
  assert.equal(fits({ text: "abcdef" }), "text: must have at most 5 characters, not 6");
  assert.equal(fits({ text: "AB" }), 'text: must match ^[a-z]+$, not "AB"');
  assert.equal(fits({ text: "a", n: 1.5 }), "n: expected an integer, not a number");
  assert.equal(fits({ text: "a", n: 4 }), "n: must be at most 3, not 4");
  assert.equal(fits({ text: "a", n: 0 }), "n: must be at least 1, not 0");
  assert.equal(fits({ text: "a", tags: ["x", 2] }), "tags[1]: expected a string, not a number");
  assert.equal(fits({ text: "a", tags: ["x", "y", "z"] }), "tags: must have at most 2 items, not 3");
  assert.equal(fits({ text: "a", mode: "c" }), 'mode: must be one of "a", "b", not "c"');
  assert.equal(fits({ text: "a", fixed: 8 }), "fixed: must be 7");
  assert.equal(fits({ text: "a", either: 1 }), undefined);
  assert.match(fits({ text: "a", either: null }), /^either: fits none of its 2 choices/);
  assert.equal(fits({ text: "a", one: 3 }), undefined);
  assert.equal(fits({ text: "a", one: 11 }), "one: fits 2 of its choices where exactly one must fit");
  assert.equal(fits({ text: "a", nested: { deep: { x: 1 } } }), undefined);
  assert.equal(fits({ text: "a", nested: { deep: {} } }), "nested.deep.x: required, but missing");
  assert.equal(fits({ text: "a", nested: { other: 1 } }), "nested.other: unknown argument; the arguments are deep");
  assert.equal(fits({ text: "a", "odd key": 1 }), '"odd key": unknown argument; the arguments are text, n, tags, mode, fixed, either, one, nested');
  assert.equal(validate({ type: "object", properties: { x: { type: "number" } } }, { x: Infinity }), "x: expected a number, not a number");
  assert.equal(validate(tool(function f() {}).inputSchema, { a: 1 }), "a: unknown argument; this tool takes none");
});

test("return values become content as the Tools API says", () => {
  assert.deepEqual(toContent("hi"), [{ tag: "text", val: "hi" }]);
  assert.deepEqual(toContent(undefined), []);
  assert.deepEqual(toContent(null), []);
  assert.deepEqual(toContent({ a: [1, 2] }), [{ tag: "json", val: '{"a":[1,2]}' }]);
  assert.deepEqual(toContent(3), [{ tag: "json", val: "3" }]);
  assert.deepEqual(toContent(false), [{ tag: "json", val: "false" }]);
  assert.deepEqual(toContent([1, 2]), [{ tag: "json", val: "[1,2]" }]);
  assert.deepEqual(toContent([]), [{ tag: "json", val: "[]" }]);
  assert.deepEqual(toContent(["a", "b"]), [{ tag: "text", val: "a" }, { tag: "text", val: "b" }]);
  const image = new Image(PNG);
  assert.equal(image.mimeType, "image/png");
  assert.deepEqual(toContent(image), [{ tag: "image", val: { mimeType: "image/png", data: Uint8Array.from(PNG) } }]);
  assert.deepEqual(toContent(["Page loaded", image, { n: 1 }]), [
    { tag: "text", val: "Page loaded" },
    { tag: "image", val: { mimeType: "image/png", data: Uint8Array.from(PNG) } },
    { tag: "json", val: '{"n":1}' },
  ]);
});

test("a value that cannot become JSON throws TypeError", () => {
  const cycle = {};
  cycle.self = cycle;
  for (const bad of [10n, cycle, () => 1, { f() {} }, NaN, { x: Infinity }, new Map(), new Set([1]), Symbol("s"), { img: new Image(PNG) }, new Uint8Array(2)]) {
    assert.throws(() => toContent(bad), TypeError, String(typeof bad));
  }
});

test("an Image checks its bytes and media type", () => {
  assert.equal(new Image([0xff, 0xd8, 0xff, 0]).mimeType, "image/jpeg");
  assert.equal(new Image(new TextEncoder().encode("<svg/>"), "image/svg+xml").mimeType, "image/svg+xml");
  assert.throws(() => new Image([1, 2, 3]), /give its mimeType/);
  assert.throws(() => new Image(PNG, "text/plain"), /image\//);
  assert.throws(() => new Image("abc"), TypeError);
  assert.throws(() => new Image([256]), TypeError);
});

test("a call's outcome: content, input error, error result, or a trap", async () => {
  assert.deepEqual(await callTool(wordCount, '{"text":"a b c"}'), { tag: "ok", val: [{ tag: "text", val: "3" }] });
  assert.deepEqual(await callTool(wordCount, '{"text":3}'), {
    tag: "err",
    val: { tag: "input", val: "text: expected a string, not a number" },
  });
  assert.deepEqual(await callTool(wordCount, "{"), {
    tag: "err",
    val: { tag: "input", val: (await callTool(wordCount, "{")).val.val },
  });
  assert.match((await callTool(wordCount, "{")).val.val, /^the arguments are not JSON/);

  const failing = tool(
    async function failing({ how }) {
      if (how === "error") throw new ToolError("the disk is full");
      if (how === "input") throw new ToolInputError("how must be something else");
      if (how === "bug") throw new RangeError("a bug");
      if (how === "string") throw "just a string";
      if (how === "payload") throw Object.assign(new Error("x"), { payload: { tag: "failed", val: "sneaky" } });
      if (how === "bigint") return 5n;
      return { how };
    },
    { inputSchema: { type: "object", properties: { how: { type: "string" } } } },
  );
  assert.deepEqual(await callTool(failing, '{"how":"error"}'), { tag: "err", val: { tag: "failed", val: "the disk is full" } });
  assert.deepEqual(await callTool(failing, '{"how":"input"}'), { tag: "err", val: { tag: "input", val: "how must be something else" } });
  assert.deepEqual(await callTool(failing, '{"how":"ok"}'), { tag: "ok", val: [{ tag: "json", val: '{"how":"ok"}' }] });
  await assert.rejects(callTool(failing, '{"how":"bug"}'), (e) => e instanceof RangeError && e.message === "a bug");
  await assert.rejects(callTool(failing, '{"how":"string"}'), /tool failing threw a string \("just a string"\), not an Error/);
  // In the toolbox a trap is a result that throws when the bindings read it, even for
  // an exception carrying a `payload` (componentize-js's way to return an error).
  const box = toolboxOf({ failing }, "tools.js");
  for (const [how, message] of [["bug", /^RangeError: a bug$/], ["payload", /^Error: x$/], ["string", /^TypeError: tool failing threw a string/]]) {
    const trapped = await box.run("failing", JSON.stringify({ how }));
    assert.throws(() => trapped.val, (e) => message.test(e.message), how);
  }
  await assert.rejects(callTool(failing, '{"how":"bigint"}'), /BigInt, which cannot become JSON/);
});

test("hintsFor narrows one call, and must return Hints or nothing", () => {
  const bash = tool(function bash() {}, {
    hintsFor: (args) => (["ls", "pwd"].includes(args.command) ? new Hints({ readOnly: true }) : null),
  });
  assert.equal(bash.hasHintsFor, true);
  assert.equal(wordCount.hasHintsFor, false);
  assert.equal(bash.hintsFor({ command: "ls" }).readOnly, true);
  assert.equal(bash.hintsFor({ command: "rm" }), bash.hints);
  const bad = tool(function bad() {}, { hintsFor: () => ({ readOnly: true }) });
  assert.throws(() => bad.hintsFor({}), /return new Hints/);
  assert.throws(() => tool(function f() {}, { hintsFor: true }), TypeError);

  const box = toolboxOf({ bash, bad }, "tools.js");
  assert.deepEqual(box.hintsFor("bash", '{"command":"pwd"}'), { readOnly: true, destructive: false, idempotent: true, openWorld: true });
  assert.equal(box.hintsFor("bash", "not json"), undefined);
  assert.throws(() => box.hintsFor("bad", "{}"), TypeError);
});

test("a module's exported tools become the toolbox", async () => {
  class Webhook extends Tool {
    constructor() {
      super({ name: "webhook", description: "Post", inputSchema: { type: "object", properties: { title: { type: "string" } } }, openWorld: true });
    }
    run(args) {
      if (!("title" in args)) throw new ToolInputError("title is required");
      return { posted: args.title };
    }
  }
  const module = { wordCount, helper: () => 1, constant: 3, again: wordCount, hook: new Webhook() };
  const tools = toolsOf(module, "tools.js");
  assert.deepEqual(tools.map((t) => t.name), ["word_count", "webhook"]);
  const box = toolboxOf(module, "tools.js");
  const decls = box.tools();
  assert.deepEqual(decls[0], {
    spec: {
      name: "word_count",
      description: "Count the words in a text.",
      inputSchema: '{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}',
      parallel: true,
    },
    hints: { readOnly: true, destructive: false, idempotent: true, openWorld: false },
    hasHintsFor: false,
  });
  assert.equal(decls[1].hasHintsFor, false);
  assert.deepEqual(await box.run("webhook", "{}"), { tag: "err", val: { tag: "input", val: "title is required" } });
  assert.deepEqual(await box.run("webhook", '{"title":"t"}'), { tag: "ok", val: [{ tag: "json", val: '{"posted":"t"}' }] });
  // An exception in a tool, or a name no tool has, traps when the bindings read the result.
  const trap = await box.run("nope", "{}");
  assert.equal(trap.tag, "ok");
  assert.throws(() => trap.val, /no tool named "nope"/);

  assert.throws(() => toolsOf({ x: 1 }, "tools.js"), /tools.js exports no tool/);
  const twin = tool(function word_count() {});
  assert.throws(() => toolsOf({ wordCount, twin }, "tools.js"), /wordCount and twin are two tools named word_count/);
  class NoRun extends Tool {}
  assert.throws(() => toolsOf({ n: new NoRun({ name: "n" }) }, "tools.js"), /without run/);
  assert.ok(wordCount instanceof FunctionTool && Object.isFrozen(wordCount));
});
