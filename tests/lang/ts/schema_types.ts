// The argument types tool() derives from a literal inputSchema (guest-sdk/js/piton.d.ts):
// this file type-checks only when each @ts-expect-error line below is an error and no
// other line is. tests/it/lang/ts.rs builds it.
import { Hints, tool } from "./piton.js";

export const typed = tool(
  function typed({ text, count, ratio, flag, tags, mode, pair, nested, anything }) {
    const s: string = text;
    const n: number | undefined = count;
    const r: number | undefined = ratio;
    const b: boolean | undefined = flag;
    const t: string[] | undefined = tags;
    const m: "fast" | "slow" = mode;
    const p: [string, number] | undefined = pair;
    const depth: number | undefined = nested?.depth;
    const a: unknown = anything;
    // @ts-expect-error: text is a string
    const wrong: number = text;
    // @ts-expect-error: mode is one of its enum's values
    const other: "medium" = mode;
    // @ts-expect-error: count may be missing (it is not required)
    const sure: number = count;
    // @ts-expect-error: the schema has no such property
    void nested?.width;
    return [s, n, r, b, t, m, p, depth, a, wrong, other, sure].length;
  },
  {
    inputSchema: {
      type: "object",
      properties: {
        text: { type: "string" },
        count: { type: "integer" },
        ratio: { type: "number" },
        flag: { type: "boolean" },
        tags: { type: "array", items: { type: "string" } },
        mode: { enum: ["fast", "slow"] },
        pair: { type: "array", prefixItems: [{ type: "string" }, { type: "number" }] },
        nested: { type: "object", properties: { depth: { type: "integer" } }, additionalProperties: false },
        anything: {},
      },
      required: ["text", "mode"],
      additionalProperties: false,
    },
    hintsFor: (args) => (args["text"] === "" ? new Hints({ readOnly: true }) : null),
  },
);

export const untyped = tool(function untyped(args) {
  // Without an inputSchema the tool takes no arguments.
  // @ts-expect-error: there are none to read
  return args.anything;
});

// Never called: these would throw when the module is evaluated, as tsc says first.
export function mistakes() {
  // @ts-expect-error: an input schema is an object schema
  tool(() => 1, { name: "not_object", inputSchema: { type: "string" } });
  // @ts-expect-error: hints are booleans
  tool(() => 1, { name: "bad_hint", readOnly: "yes" });
}
