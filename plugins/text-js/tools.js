// text-js: a small text toolkit written in JavaScript, built by `piton build` into
// one component whose five tools piton lists and calls separately. See README.md.

import { Hints, ToolError, tool } from "./piton.js";

export const wordCount = tool(
  function word_count({ text }) {
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

export const slugify = tool(
  function slugify({ text, separator = "-" }) {
    // The component's engine has no Unicode normalization (String.prototype.normalize):
    // letters outside ASCII are separators here.
    return text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, separator)
      .replace(new RegExp(`^\\${separator}+|\\${separator}+$`, "g"), "");
  },
  {
    description: "Turn a title into a URL slug: lower case ASCII words joined by a separator.",
    inputSchema: {
      type: "object",
      properties: {
        text: { type: "string", minLength: 1, description: "The title" },
        separator: { enum: ["-", "_"], description: "What joins the words (default -)" },
      },
      required: ["text"],
      additionalProperties: false,
    },
    readOnly: true,
    openWorld: false,
  },
);

export const fillTemplate = tool(
  function fill_template({ template, values }) {
    const missing = new Set();
    const text = template.replace(/\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g, (_, key) => {
      if (!Object.hasOwn(values, key)) missing.add(key);
      return String(values[key]);
    });
    if (missing.size > 0) {
      // An error result: the model sees it and can call again with the values.
      throw new ToolError(`no value for ${[...missing].join(", ")}`);
    }
    return text;
  },
  {
    description: "Fill the {{name}} placeholders of a template with values.",
    inputSchema: {
      type: "object",
      properties: {
        template: { type: "string", description: "Text with {{name}} placeholders" },
        values: {
          type: "object",
          additionalProperties: { type: ["string", "number", "boolean"] },
          description: "The value of each placeholder",
        },
      },
      required: ["template", "values"],
      additionalProperties: false,
    },
    readOnly: true,
    openWorld: false,
  },
);

export const textStats = tool(
  function text_stats({ text }) {
    const words = text.split(/\s+/).filter(Boolean);
    const lines = text === "" ? 0 : text.split("\n").length;
    const longest = words.reduce((a, w) => (w.length > a.length ? w : a), "");
    return { characters: [...text].length, words: words.length, lines, longest };
  },
  {
    description: "Count the characters, words and lines of a text, and find its longest word (as JSON).",
    inputSchema: {
      type: "object",
      properties: { text: { type: "string" } },
      required: ["text"],
      additionalProperties: false,
    },
    readOnly: true,
    openWorld: false,
  },
);

const SAFE = ["GET", "HEAD", "OPTIONS"];

export const httpRequest = tool(
  async function http_request({ url, method = "GET", body }) {
    let response;
    try {
      response = await fetch(url, { method, body });
    } catch (e) {
      // Refused by piton's sandbox (an address not granted, or a method a
      // read-only call may not send), or the network failed.
      throw new ToolError(`${method} ${url} failed: ${e.message}`);
    }
    const text = await response.text();
    if (!response.ok) {
      throw new ToolError(`${method} ${url}: HTTP ${response.status} ${text.slice(0, 200)}`);
    }
    return text;
  },
  {
    description: "Send an HTTP request to a granted address and return the response body.",
    inputSchema: {
      type: "object",
      properties: {
        url: { type: "string", pattern: "^https?://", description: "http:// or https:// URL" },
        method: { enum: ["GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"] },
        body: { type: "string", description: "The request body (not for GET or HEAD)" },
      },
      required: ["url"],
      additionalProperties: false,
    },
    // The worst case: a request may change or delete what is on the server.
    openWorld: true,
    // A GET, HEAD or OPTIONS call is read-only, and piton then lets it send only
    // those methods; any other call keeps the tool's own hints.
    hintsFor: (args) => (SAFE.includes(args.method ?? "GET") ? new Hints({ readOnly: true }) : null),
  },
);
