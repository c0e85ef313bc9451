// The types of piton's JavaScript SDK (piton.js beside this file), so an editor and
// `tsc` check tool definitions: a TypeScript tool imports "./piton.js" and gets these.
//
// A tool's arguments are typed from its inputSchema: with the schema written as a
// literal, `tool(fn, { inputSchema: {...} })` gives fn the argument type the schema
// describes (`FromSchema`), so the function body is checked against the schema the
// model sees. The schema stays the one source; no TypeScript type is turned into a
// schema.

/** The version of the piton:tool contract this SDK implements. */
export declare const CONTRACT: "piton:tool@0.1.2";

/** A failure the model sees as an error result and can handle; the run goes on. */
export declare class ToolError extends Error {
  constructor(message: unknown, options?: ErrorOptions);
}

/** The arguments are wrong: the model gets `(input error: MESSAGE)`. */
export declare class ToolInputError extends Error {
  constructor(message: unknown, options?: ErrorOptions);
}

/** The four hints, each optional: a hint left out assumes the worst. */
export interface HintOptions {
  /** The call does not change its environment (sets destructive: false, idempotent: true). */
  readOnly?: boolean;
  /** The call may delete or overwrite something (false for one that only adds). */
  destructive?: boolean;
  /** Making the call again with the same arguments has no further effect. */
  idempotent?: boolean;
  /** The call reaches outside the tool's own domain (web, shell, other systems). */
  openWorld?: boolean;
}

/**
 * The hints of a tool or of one call, resolved: a hint left out assumes the worst
 * (not read-only, destructive, not idempotent, open world). Throws RangeError for
 * `readOnly: true` with `destructive: true` or `idempotent: false`.
 */
export declare class Hints {
  constructor(hints?: HintOptions);
  readonly readOnly: boolean;
  readonly destructive: boolean;
  readonly idempotent: boolean;
  readonly openWorld: boolean;
}

/** An image returned to the model; its type is found from PNG, JPEG, GIF or WebP bytes. */
export declare class Image {
  constructor(data: Uint8Array | ArrayBuffer | number[], mimeType?: string);
  readonly data: Uint8Array;
  readonly mimeType: string;
}

/** A JSON Schema, as the SDK's checker and the host read it. */
export type JSONSchema = boolean | SchemaObject;

/** The keywords of a JSON Schema object (others are allowed and shown to the model). */
export interface SchemaObject {
  type?: SchemaType | readonly SchemaType[];
  description?: string;
  properties?: { readonly [name: string]: JSONSchema };
  required?: readonly string[];
  additionalProperties?: JSONSchema;
  items?: JSONSchema;
  prefixItems?: readonly JSONSchema[];
  enum?: readonly unknown[];
  const?: unknown;
  anyOf?: readonly JSONSchema[];
  oneOf?: readonly JSONSchema[];
  allOf?: readonly JSONSchema[];
  not?: JSONSchema;
  $ref?: string;
  $defs?: { readonly [name: string]: JSONSchema };
  [keyword: string]: unknown;
}

export type SchemaType = "string" | "number" | "integer" | "boolean" | "object" | "array" | "null";

/** An input schema: an object schema. */
export interface ObjectSchema extends SchemaObject {
  type: "object";
}

/** The input schema of a tool without arguments. */
export type NoArguments = { type: "object"; properties: {}; additionalProperties: false };

/**
 * The TypeScript type of the values a JSON Schema accepts: `type` (one or a list),
 * `properties` with `required` (the others optional), `items`, `prefixItems`, `enum`,
 * `const`, `anyOf`/`oneOf` (a union), `allOf` (an intersection) and
 * `additionalProperties`. Other keywords (`minimum`, `pattern`, `$ref`, ...) narrow no
 * type: the values they refuse are refused when the call is checked, not by tsc, and
 * a `$ref` is `unknown`.
 */
export type FromSchema<S> = S extends true
  ? unknown
  : S extends false
    ? never
    : S extends { const: infer C }
      ? C
      : S extends { enum: readonly (infer E)[] }
        ? E
        : S extends { anyOf: readonly (infer A)[] }
          ? FromSchema<A>
          : S extends { oneOf: readonly (infer A)[] }
            ? FromSchema<A>
            : S extends { allOf: readonly [infer First, ...infer Rest] }
              ? FromSchema<First> & FromSchema<{ allOf: Rest }>
              : S extends { allOf: readonly [] }
                ? unknown
                : S extends { type: readonly (infer T)[] }
                  ? T extends SchemaType
                    ? FromSchema<Omit<S, "type"> & { type: T }>
                    : never
                  : S extends { type: "string" }
                    ? string
                    : S extends { type: "number" | "integer" }
                      ? number
                      : S extends { type: "boolean" }
                        ? boolean
                        : S extends { type: "null" }
                          ? null
                          : S extends { type: "array" }
                            ? ArrayOf<S>
                            : S extends { type: "object" }
                              ? ObjectOf<S>
                              : unknown;

type ArrayOf<S> = S extends { prefixItems: infer P }
  ? TupleOf<P>
  : S extends { items: infer I }
    ? FromSchema<I>[]
    : unknown[];

type TupleOf<P> = P extends readonly [infer First, ...infer Rest]
  ? [FromSchema<First>, ...TupleOf<Rest>]
  : [];

type RequiredOf<S> = S extends { required: readonly (infer R)[] } ? R & string : never;

type Simplify<T> = { [K in keyof T]: T[K] } & {};

type ObjectOf<S> = S extends { properties: infer P }
  ? Simplify<
      { -readonly [K in keyof P & RequiredOf<S>]: FromSchema<P[K]> } & {
        -readonly [K in Exclude<keyof P, RequiredOf<S>>]?: FromSchema<P[K]>;
      }
    >
  : S extends { additionalProperties: false }
    ? {}
    : S extends { additionalProperties: infer A }
      ? Record<string, FromSchema<A>>
      : Record<string, unknown>;

/**
 * What a tool may return: a string (text), undefined or null ("(done)"), an Image, an
 * array of strings and Images (other values in it are sent as JSON), or anything JSON
 * can hold. A value JSON cannot hold (a BigInt, a cycle, NaN, a Map) stops the run.
 */
export type ToolResult = unknown;

/** The options of `tool(fn, options)`. */
export interface ToolOptions<S extends ObjectSchema> extends HintOptions {
  /** The name the model calls, [A-Za-z0-9_-]{1,64}; default: the function's name. */
  name?: string;
  /** What the model reads about the tool. */
  description?: string;
  /** The JSON Schema of the arguments (an object schema); fn's argument type follows from it. */
  inputSchema?: S;
  /** false: the host runs the tool alone, after a batch's other calls. */
  parallel?: boolean;
  /**
   * The hints of one call, or null when unsure. `args` is parsed JSON not yet checked
   * against the schema: read it with care.
   */
  hintsFor?: (args: Record<string, unknown>) => Hints | null | undefined;
}

/** The options of a Tool subclass's constructor. */
export interface ToolSpecOptions extends HintOptions {
  name: string;
  description?: string;
  inputSchema?: ObjectSchema;
  parallel?: boolean;
}

/** A tool the model can call; extend it for a tool that is not one function. */
export declare class Tool<Args = Record<string, unknown>> {
  constructor(options: ToolSpecOptions);
  readonly name: string;
  readonly description: string;
  readonly inputSchema: ObjectSchema;
  readonly parallel: boolean;
  readonly hints: Hints;
  /** True when this tool tells the hints of one call. */
  readonly hasHintsFor: boolean;
  /** The hints of one call; by default the tool's own, the worst case. */
  hintsFor(args: Record<string, unknown>): Hints;
  /** Runs one call; a subclass implements it (its arguments are not checked for it). */
  run(args: Args): ToolResult | Promise<ToolResult>;
}

/** A tool made by `tool(fn, options)`: `run(args)` checks the arguments, then calls fn. */
export declare class FunctionTool<Args = Record<string, unknown>> extends Tool<Args> {
  constructor(fn: (args: Args) => ToolResult | Promise<ToolResult>, options?: ToolOptions<ObjectSchema>);
  readonly fn: (args: Args) => ToolResult | Promise<ToolResult>;
}

/**
 * Makes a tool of a function of the arguments object. With `inputSchema` written as a
 * literal, fn's argument has the type the schema describes.
 *
 * @example
 * export const wordCount = tool(
 *   ({ text }) => String(text.split(/\s+/).filter(Boolean).length),
 *   {
 *     name: "word_count",
 *     inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
 *     readOnly: true,
 *   },
 * );
 */
export declare function tool<const S extends ObjectSchema = NoArguments>(
  fn: (args: FromSchema<S>) => ToolResult | Promise<ToolResult>,
  options?: ToolOptions<S>,
): FunctionTool<FromSchema<S>>;

/** The first problem of `value` against `schema`, or undefined when it fits. */
export declare function validate(schema: JSONSchema, value: unknown): string | undefined;

/** A content block of the contract. */
export type ContentBlock =
  | { tag: "text"; val: string }
  | { tag: "json"; val: string }
  | { tag: "image"; val: { mimeType: string; data: Uint8Array } };

/** A tool's return value as the blocks the model gets. */
export declare function toContent(value: unknown): ContentBlock[];

/** JSON text of `value`, or TypeError for what JSON cannot hold as it is. */
export declare function toJson(value: unknown): string;

/** The tools a module exports. */
export declare function toolsOf(module: object, file?: string): Tool[];

/** The contract's toolbox interface over a module's tools (what piton's builder exports). */
export declare function toolboxOf(module: object, file?: string): unknown;

/** Runs a tool with JSON text arguments, as the contract's `run` does. */
export declare function callTool(
  tool: Tool<any>,
  args: string,
): Promise<{ tag: "ok"; val: ContentBlock[] } | { tag: "err"; val: { tag: "input" | "failed"; val: string } }>;
