// What a TypeScript tool may return and throw, checked by tests/it/lang/ts.rs.
import { Image, ToolError, ToolInputError, tool } from "./piton.js";

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

export const tsOutcome = tool(
  async function ts_outcome({ how, list }) {
    switch (how) {
      case "text":
        return "plain text";
      case "json":
        return { list: list ?? [], ok: true };
      case "image":
        return ["an image", new Image(PNG)];
      case "failed":
        throw new ToolError("the thing failed");
      case "input":
        throw new ToolInputError(`how is ${how}`);
      case "bug":
        throw new TypeError("a bug in the tool");
    }
  },
  {
    inputSchema: {
      type: "object",
      properties: {
        how: { enum: ["text", "json", "image", "failed", "input", "bug"] },
        list: { type: "array", items: { type: "integer" } },
      },
      required: ["how"],
      additionalProperties: false,
    },
    readOnly: true,
    openWorld: false,
  },
);
