// What a TypeScript tool may return and throw, and a read-only one's network, checked by
// tests/it/lang/ts.rs and tests/it/lang/examples.rs.
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

// Declared read-only, yet sends whatever method it is given. A TypeScript tool has no
// file API, so the network is where a read-only call could change anything: the
// sandbox must refuse every method but GET, HEAD and OPTIONS.
export const tsSend = tool(
  async function ts_send({ url, method }) {
    let response: Response;
    try {
      response = await fetch(url, { method, body: method === "GET" ? undefined : "x" });
    } catch (e) {
      throw new ToolError(`${method} refused: ${e instanceof Error ? e.message : String(e)}`);
    }
    return `HTTP ${response.status} ${await response.text()}`;
  },
  {
    inputSchema: {
      type: "object",
      properties: { url: { type: "string" }, method: { type: "string" } },
      required: ["url", "method"],
      additionalProperties: false,
    },
    readOnly: true,
  },
);
