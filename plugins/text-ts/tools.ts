// text-ts: text tools in TypeScript. Each tool's argument type comes from its
// inputSchema, so tsc checks the function against what the model sends.
//
// Build: piton build plugins/text-ts         (gives plugins/text-ts/text-ts.wasm)
// Call:  piton call title_case '{"text": "the cat in the hat"}' --plugins plugins/text-ts

import { ToolError, ToolInputError, tool } from "./piton.js";
import { words } from "./words.ts";

const SMALL = ["a", "an", "and", "at", "in", "of", "on", "or", "the", "to"];

export const titleCase = tool(
  function title_case({ text, keepSmall = true }) {
    const out = words(text).map((word, i) =>
      keepSmall && i > 0 && SMALL.includes(word.toLowerCase())
        ? word.toLowerCase()
        : word.charAt(0).toUpperCase() + word.slice(1).toLowerCase(),
    );
    return out.join(" ");
  },
  {
    description: "Write a text in title case.",
    inputSchema: {
      type: "object",
      properties: {
        text: { type: "string", description: "The text to write in title case" },
        keepSmall: { type: "boolean", description: "Keep small words (a, of, the...) lowercase" },
      },
      required: ["text"],
      additionalProperties: false,
    },
    readOnly: true,
    openWorld: false,
  },
);

export const findWords = tool(
  function find_words({ text, prefix, limit }) {
    if (prefix.length === 0) throw new ToolInputError("prefix must not be empty");
    const found = words(text).filter((word) => word.toLowerCase().startsWith(prefix.toLowerCase()));
    if (found.length === 0) throw new ToolError(`no word starts with ${prefix}`);
    return { count: found.length, words: found.slice(0, limit ?? found.length) };
  },
  {
    description: "Find the words of a text that start with a prefix.",
    inputSchema: {
      type: "object",
      properties: {
        text: { type: "string" },
        prefix: { type: "string", description: "What the words start with (any case)" },
        limit: { type: "integer", minimum: 1, description: "At most this many words" },
      },
      required: ["text", "prefix"],
      additionalProperties: false,
    },
    readOnly: true,
    openWorld: false,
  },
);
