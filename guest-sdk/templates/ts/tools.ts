// __PROJECT__: piton tools in TypeScript. Every `tool(...)` this module exports is a
// tool; `piton build` type-checks it, bundles it and makes it one sandboxed
// WebAssembly component.

import { ToolInputError, tool } from "./piton.js";

export const __NAME__ = tool(
  function __NAME__({ text, minLength = 1 }) {
    // `text` is a string and `minLength` a number or undefined: the types come from
    // the inputSchema below, so tsc checks this body against what the model sends.
    if (minLength < 1) throw new ToolInputError("minLength must be at least 1");
    return String(text.split(/\s+/).filter((word) => word.length >= minLength).length);
  },
  {
    description: "Count the words in a text.",
    inputSchema: {
      type: "object",
      properties: {
        text: { type: "string", description: "The text to count" },
        minLength: { type: "integer", description: "Count only words at least this long" },
      },
      required: ["text"],
      additionalProperties: false,
    },
    readOnly: true,
    openWorld: false,
  },
);
