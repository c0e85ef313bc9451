// __PROJECT__: piton tools in JavaScript. Every `tool(...)` this module exports is a
// tool; `piton build` makes the module one sandboxed WebAssembly component.

import { tool } from "./piton.js";

export const __NAME__ = tool(
  function __NAME__({ text }) {
    return String(text.split(/\s+/).filter(Boolean).length);
  },
  {
    description: "Count the words in a text.",
    inputSchema: {
      type: "object",
      properties: { text: { type: "string", description: "The text to count" } },
      required: ["text"],
      additionalProperties: false,
    },
    readOnly: true,
    openWorld: false,
  },
);
