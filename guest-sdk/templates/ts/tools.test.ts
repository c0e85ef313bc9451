// The tests of __PROJECT__'s tools, run by Node's own runner (Node 22 strips the
// types): node --test

import { test } from "node:test";
import assert from "node:assert/strict";

import { ToolInputError } from "./piton.js";
import { __NAME__ } from "./tools.ts";

test("__NAME__ counts the words", async () => {
  assert.equal(await __NAME__.run({ text: "one two  three" }), "3");
  assert.equal(await __NAME__.run({ text: "a bb ccc", minLength: 2 }), "2");
});

test("__NAME__ refuses arguments its input schema does not allow", async () => {
  // @ts-expect-error: text must be a string, which tsc says too
  await assert.rejects(async () => __NAME__.run({ text: 3 }), ToolInputError);
  await assert.rejects(async () => __NAME__.run({ text: "a", minLength: 0 }), ToolInputError);
});

test("__NAME__ is read-only and closed-world", () => {
  assert.equal(__NAME__.name, "__NAME__");
  assert.equal(__NAME__.hints.readOnly, true);
  assert.equal(__NAME__.hints.openWorld, false);
});
