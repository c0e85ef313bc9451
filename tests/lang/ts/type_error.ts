// A tool whose function does not fit its schema: `text` is a string, so tsc refuses
// text * 2 at line 6.
import { tool } from "./piton.js";

export const doubled = tool(
  ({ text }) => text * 2,
  {
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  },
);
