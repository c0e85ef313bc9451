// A JavaScript toolbox for piton's end-to-end tests (tests/it/lang/js.rs): each way a
// call can end, and hints the sandbox enforces. Not an example: see plugins/text-js.

import { Hints, Image, ToolError, ToolInputError, tool } from "./piton.js";

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13];

export const outcome = tool(
  async function outcome({ how }) {
    switch (how) {
      case "text":
        return "plain text";
      case "done":
        return undefined;
      case "json":
        return { list: [1, 2], nested: { ok: true } };
      case "image":
        return ["a picture", new Image(PNG)];
      case "async":
        return await new Promise((resolve) => setTimeout(() => resolve("later"), 1));
      case "failed":
        throw new ToolError("the thing failed");
      case "input":
        throw new ToolInputError("how is not acceptable");
      case "bug":
        return null.property;
      case "string":
        throw "a bare string";
      case "bigint":
        return { n: 10n };
      case "rejected":
        return Promise.reject(new RangeError("a rejected promise"));
      default:
        return `unknown ${how}`;
    }
  },
  {
    description: "Ends a call the way `how` says.",
    inputSchema: {
      type: "object",
      properties: { how: { type: "string" } },
      required: ["how"],
      additionalProperties: false,
    },
    readOnly: true,
    openWorld: false,
  },
);

// Declared read-only, yet sends whatever method it is given: the sandbox must refuse
// every method a read-only call may not send.
export const readOnlySend = tool(
  async function read_only_send({ url, method }) {
    return sendRequest(url, method);
  },
  {
    description: "Sends a request (declared read-only).",
    inputSchema: {
      type: "object",
      properties: { url: { type: "string" }, method: { type: "string" } },
      required: ["url", "method"],
    },
    readOnly: true,
  },
);

// Not read-only, but its hintsFor claims any call with `safe: true` is read-only:
// such a call runs in a read-only sandbox, whatever it then sends.
export const send = tool(
  async function send({ url, method }) {
    return sendRequest(url, method);
  },
  {
    description: "Sends a request; hintsFor narrows calls marked safe.",
    inputSchema: {
      type: "object",
      properties: { url: { type: "string" }, method: { type: "string" }, safe: { type: "boolean" } },
      required: ["url", "method"],
    },
    destructive: false,
    hintsFor: (args) => (args.safe === true ? new Hints({ readOnly: true }) : null),
  },
);

async function sendRequest(url, method) {
  let response;
  try {
    response = await fetch(url, { method, body: method === "GET" ? undefined : "x" });
  } catch (e) {
    throw new ToolError(`${method} refused: ${e.message}`);
  }
  return `HTTP ${response.status} ${await response.text()}`;
}
