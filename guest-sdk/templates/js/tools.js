// __PROJECT__: piton tools in JavaScript. Every `tool(...)` this module exports is a
// tool; `piton build` makes the module one sandboxed WebAssembly component.

import { tool } from "./piton.js";

export const __NAME__ = tool(
  function __NAME__({ name }) {
    return `Hello, ${name}!`;
  },
  {
    description: "Greet someone by name.",
    inputSchema: {
      type: "object",
      properties: { name: { type: "string", description: "Who to greet" } },
      required: ["name"],
      additionalProperties: false,
    },
    readOnly: true,
    openWorld: false,
  },
);
