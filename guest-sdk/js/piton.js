// piton's JavaScript SDK: write agent tools as plain functions, and `piton build`
// makes the module a sandboxed WebAssembly component (componentize-js).
//
//   import { tool, ToolError } from "./piton.js";
//
//   export const wordCount = tool(
//     function word_count({ text }) {
//       return String(text.split(/\s+/).filter(Boolean).length);
//     },
//     {
//       description: "Count the words in a text.",
//       inputSchema: {
//         type: "object",
//         properties: { text: { type: "string" } },
//         required: ["text"],
//       },
//       readOnly: true,
//       openWorld: false,
//     },
//   );
//
// Every `tool(...)` (and every `Tool` object) the built module exports becomes one
// tool of its component. The model follows piton's Tools API: a hint left out assumes
// the worst, `readOnly` sets `destructive = false` and `idempotent = true`, the return
// value is sent as the model sees it (a string as is, undefined or null as "(done)",
// an Image, an array of strings and Images, anything else as JSON), `ToolInputError`
// and `ToolError` are results the model handles, and any other exception stops the
// run. See README.md beside this file.
//
// This file is plain ECMAScript: it runs the same in Node (for your tests) and in
// the component (StarlingMonkey), where piton's builder puts its own copy of it.

/** The version of the piton:tool contract this SDK implements. */
export const CONTRACT = "piton:tool@0.1.2";

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const HINTS = ["readOnly", "destructive", "idempotent", "openWorld"];
const OPTIONS = [
  "name",
  "description",
  "inputSchema",
  "parallel",
  "hintsFor",
  ...HINTS,
];

/** A failure the model sees as an error result and can handle; the run goes on. */
export class ToolError extends Error {
  constructor(message, options) {
    super(String(message), options);
    this.name = "ToolError";
  }
}

/** The arguments are wrong: the model gets `(input error: MESSAGE)`. */
export class ToolInputError extends Error {
  constructor(message, options) {
    super(String(message), options);
    this.name = "ToolInputError";
  }
}

/**
 * The four hints of a tool or of one call, with the meaning of MCP tool
 * annotations. A hint left out assumes the worst (not read-only, destructive, not
 * idempotent, open world); `readOnly: true` sets `destructive: false` and
 * `idempotent: true`. Throws TypeError for a hint that is not a boolean, RangeError
 * for `readOnly: true` with `destructive: true` or `idempotent: false`.
 */
export class Hints {
  constructor(hints = {}) {
    if (hints === null || typeof hints !== "object") {
      throw new TypeError(`Hints takes an object such as { readOnly: true }, not ${kind(hints)}`);
    }
    for (const key of Object.keys(hints)) {
      if (!HINTS.includes(key)) {
        throw new TypeError(`Hints has no hint \`${key}\`; the hints are ${HINTS.join(", ")}`);
      }
    }
    const given = {};
    for (const key of HINTS) {
      const value = hints[key];
      if (value !== undefined && value !== null && typeof value !== "boolean") {
        throw new TypeError(`the hint \`${key}\` must be true or false, not ${kind(value)}`);
      }
      given[key] = value ?? undefined;
    }
    if (given.readOnly === true && given.destructive === true) {
      throw new RangeError("readOnly: true contradicts destructive: true (a read-only call deletes nothing)");
    }
    if (given.readOnly === true && given.idempotent === false) {
      throw new RangeError("readOnly: true contradicts idempotent: false (a read-only call can always be repeated)");
    }
    const readOnly = given.readOnly ?? false;
    this.readOnly = readOnly;
    this.destructive = given.destructive ?? !readOnly;
    this.idempotent = given.idempotent ?? readOnly;
    this.openWorld = given.openWorld ?? true;
    Object.freeze(this);
  }
}

/** An image returned to the model: its bytes and media type. */
export class Image {
  /**
   * @param {Uint8Array | ArrayBuffer | number[]} data the encoded image
   * @param {string} [mimeType] such as "image/png"; found from the bytes of a PNG,
   *   JPEG, GIF or WebP when left out
   */
  constructor(data, mimeType) {
    let bytes;
    if (data instanceof Uint8Array) {
      bytes = data;
    } else if (data instanceof ArrayBuffer) {
      bytes = new Uint8Array(data);
    } else if (Array.isArray(data) && data.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) {
      bytes = Uint8Array.from(data);
    } else {
      throw new TypeError(`an Image's data is a Uint8Array, an ArrayBuffer or an array of bytes, not ${kind(data)}`);
    }
    const type = mimeType ?? sniffImage(bytes);
    if (type === undefined) {
      throw new TypeError("the Image's bytes are not PNG, JPEG, GIF or WebP: give its mimeType, e.g. new Image(bytes, \"image/svg+xml\")");
    }
    if (typeof type !== "string" || !/^image\/[A-Za-z0-9.+-]+$/.test(type)) {
      throw new TypeError(`an Image's mimeType is image/..., not ${JSON.stringify(type)}`);
    }
    this.data = bytes;
    this.mimeType = type;
    Object.freeze(this);
  }
}

function sniffImage(b) {
  const starts = (...sig) => sig.every((v, i) => b[i] === v);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(0x47, 0x49, 0x46, 0x38)) return "image/gif";
  if (starts(0x52, 0x49, 0x46, 0x46) && b[8] === 0x57 && b[9] === 0x45 && b[10] === 0x42 && b[11] === 0x50) {
    return "image/webp";
  }
  return undefined;
}

/**
 * A tool the model can call. `tool(fn, options)` makes one from a function; extend
 * this class for a tool that is not one function (then implement `run(args)`, and
 * `hintsFor(args)` if you like; the arguments of a subclass's `run` are not checked
 * against its inputSchema: check what you rely on and throw ToolInputError).
 */
export class Tool {
  /**
   * @param {object} options name (required, [A-Za-z0-9_-]{1,64}), description,
   *   inputSchema (an object schema; default: no arguments), parallel (default true),
   *   readOnly, destructive, idempotent, openWorld
   */
  constructor(options = {}) {
    if (options === null || typeof options !== "object") {
      throw new TypeError(`Tool takes an options object, not ${kind(options)}`);
    }
    const name = options.name;
    if (typeof name !== "string" || !NAME.test(name)) {
      throw new TypeError(
        `a tool's name must match [A-Za-z0-9_-]{1,64}, not ${name === undefined ? "nothing" : JSON.stringify(name)}`,
      );
    }
    const description = options.description ?? "";
    if (typeof description !== "string") {
      throw new TypeError(`tool ${name}: its description must be a string, not ${kind(description)}`);
    }
    const parallel = options.parallel ?? true;
    if (typeof parallel !== "boolean") {
      throw new TypeError(`tool ${name}: parallel must be true or false, not ${kind(parallel)}`);
    }
    let hints;
    try {
      hints = new Hints(Object.fromEntries(HINTS.map((k) => [k, options[k]])));
    } catch (e) {
      e.message = `tool ${name}: ${e.message}`;
      throw e;
    }
    this.name = name;
    this.description = description;
    this.inputSchema = checkSchema(name, options.inputSchema);
    this.parallel = parallel;
    this.hints = hints;
  }

  /** True when this tool tells the hints of one call (it overrides `hintsFor`). */
  get hasHintsFor() {
    return this.hintsFor !== Tool.prototype.hintsFor;
  }

  /** The hints of one call; by default the tool's own, the worst case. */
  hintsFor(_args) {
    return this.hints;
  }

  /** Runs one call; a subclass implements it. */
  run(_args) {
    throw new TypeError(`tool ${this.name}: a Tool subclass implements run(args)`);
  }
}

/** A tool made by `tool(fn, options)`. `run(args)` checks the arguments, then calls fn. */
export class FunctionTool extends Tool {
  constructor(fn, options = {}) {
    if (fn instanceof Tool) {
      throw new TypeError(`tool() is applied twice, to the tool ${fn.name}`);
    }
    if (typeof fn !== "function") {
      throw new TypeError(`tool(fn, options) takes a function first, not ${kind(fn)}`);
    }
    if (options === null || typeof options !== "object" || Array.isArray(options)) {
      throw new TypeError(`tool(fn, options): options is an object, not ${kind(options)}`);
    }
    for (const key of Object.keys(options)) {
      if (!OPTIONS.includes(key)) {
        throw new TypeError(`tool ${options.name ?? fn.name}: unknown option \`${key}\`; the options are ${OPTIONS.join(", ")}`);
      }
    }
    const name = options.name ?? fn.name;
    if (name === "" || name === undefined) {
      throw new TypeError("an anonymous function needs a name: give tool(fn, { name: \"...\" }) or a named function");
    }
    super({ ...options, name });
    const hintsFor = options.hintsFor;
    if (hintsFor !== undefined && hintsFor !== null && typeof hintsFor !== "function") {
      throw new TypeError(`tool ${name}: hintsFor must be a function of the arguments, not ${kind(hintsFor)}`);
    }
    this.fn = fn;
    this.customHintsFor = hintsFor ?? undefined;
    Object.freeze(this);
  }

  get hasHintsFor() {
    return this.customHintsFor !== undefined;
  }

  /**
   * The hints of one call: what `hintsFor` returns for `args`, or the tool's own
   * when it returns null or undefined or was not given. Throws TypeError when it
   * returns anything but a Hints.
   */
  hintsFor(args) {
    if (this.customHintsFor === undefined) return this.hints;
    const hints = this.customHintsFor(args);
    if (hints === undefined || hints === null) return this.hints;
    if (!(hints instanceof Hints)) {
      throw new TypeError(
        `tool ${this.name}: hintsFor returned ${kind(hints)}; return new Hints({ ... }) or null`,
      );
    }
    return hints;
  }

  /** Checks `args` against the input schema (ToolInputError), then calls the function. */
  run(args) {
    const problem = validate(this.inputSchema, args);
    if (problem !== undefined) throw new ToolInputError(problem);
    return this.fn(args);
  }
}

/**
 * Makes a tool from a function of the arguments object.
 *
 * @param {(args: object) => any} fn called with the model's arguments, checked
 *   against `inputSchema`; may be async
 * @param {object} [options] name (default: the function's name), description,
 *   inputSchema (a JSON Schema object; default: no arguments), parallel (default
 *   true), hintsFor(args) => Hints | null, readOnly, destructive, idempotent,
 *   openWorld
 * @returns {FunctionTool}
 */
export function tool(fn, options = {}) {
  return new FunctionTool(fn, options);
}

/** The input schema of a tool, checked; no schema is a tool without arguments. */
function checkSchema(name, schema) {
  if (schema === undefined || schema === null) {
    return { type: "object", properties: {}, additionalProperties: false };
  }
  if (typeof schema !== "object" || Array.isArray(schema)) {
    throw new TypeError(`tool ${name}: inputSchema must be a JSON Schema object, not ${kind(schema)}`);
  }
  if (schema.type !== "object") {
    throw new TypeError(
      `tool ${name}: inputSchema must be an object schema ({ type: "object", properties: { ... } }), not type ${JSON.stringify(schema.type)}`,
    );
  }
  let copy;
  try {
    copy = JSON.parse(JSON.stringify(schema));
  } catch (e) {
    throw new TypeError(`tool ${name}: inputSchema cannot become JSON: ${e.message}`);
  }
  checkSchemaParts(name, copy, copy, "inputSchema", 0);
  return deepFreeze(copy);
}

/** Checks what `validate` relies on: patterns compile, keywords have their types. */
function checkSchemaParts(name, root, schema, at, depth) {
  if (depth > 64) throw new TypeError(`tool ${name}: ${at} nests too deep`);
  if (typeof schema === "boolean") return;
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) {
    throw new TypeError(`tool ${name}: ${at} must be a schema object, not ${kind(schema)}`);
  }
  const fail = (what) => {
    throw new TypeError(`tool ${name}: ${at}: ${what}`);
  };
  if (schema.pattern !== undefined) {
    if (typeof schema.pattern !== "string") fail("pattern must be a string");
    try {
      new RegExp(schema.pattern, "u");
    } catch (e) {
      fail(`pattern ${JSON.stringify(schema.pattern)} is not a regular expression: ${e.message}`);
    }
  }
  if (schema.required !== undefined && !(Array.isArray(schema.required) && schema.required.every((r) => typeof r === "string"))) {
    fail("required must be an array of property names");
  }
  if (schema.enum !== undefined && !Array.isArray(schema.enum)) fail("enum must be an array");
  const types = schema.type === undefined ? [] : [schema.type].flat();
  for (const t of types) {
    if (!TYPES.includes(t)) fail(`type ${JSON.stringify(t)} is not one of ${TYPES.join(", ")}`);
  }
  if (schema.$ref !== undefined) {
    if (resolveRef(root, schema.$ref) === undefined) {
      fail(`$ref ${JSON.stringify(schema.$ref)} names no schema of this one (write "#/$defs/NAME")`);
    }
  }
  for (const key of ["properties", "$defs", "definitions"]) {
    if (schema[key] !== undefined) {
      if (typeof schema[key] !== "object" || schema[key] === null || Array.isArray(schema[key])) fail(`${key} must be an object`);
      for (const [prop, sub] of Object.entries(schema[key])) {
        checkSchemaParts(name, root, sub, `${at}.${key}.${prop}`, depth + 1);
      }
    }
  }
  for (const key of ["items", "additionalProperties", "not"]) {
    if (schema[key] !== undefined) checkSchemaParts(name, root, schema[key], `${at}.${key}`, depth + 1);
  }
  for (const key of ["anyOf", "oneOf", "allOf", "prefixItems"]) {
    if (schema[key] !== undefined) {
      if (!Array.isArray(schema[key]) || (key !== "prefixItems" && schema[key].length === 0)) {
        fail(`${key} must be a non-empty array of schemas`);
      }
      schema[key].forEach((sub, i) => checkSchemaParts(name, root, sub, `${at}.${key}[${i}]`, depth + 1));
    }
  }
}

const TYPES = ["string", "number", "integer", "boolean", "object", "array", "null"];

function resolveRef(root, ref) {
  if (typeof ref !== "string" || !ref.startsWith("#")) return undefined;
  if (ref === "#") return root;
  if (!ref.startsWith("#/")) return undefined;
  let at = root;
  for (const raw of ref.slice(2).split("/")) {
    const part = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (at === null || typeof at !== "object" || !Object.hasOwn(at, part)) return undefined;
    at = at[part];
  }
  return at;
}

/**
 * Checks `value` against the JSON Schema `schema`: type, properties, required,
 * additionalProperties, items, prefixItems, minItems, maxItems, uniqueItems, enum,
 * const, anyOf, oneOf, allOf, not, minimum, maximum, exclusiveMinimum,
 * exclusiveMaximum, multipleOf, minLength, maxLength, pattern, minProperties,
 * maxProperties and local $ref. Other keywords (format, ...) are not checked.
 *
 * @returns {string | undefined} the first problem, naming where it is
 *   (`text: expected a string, not a number`), or undefined when the value fits
 */
export function validate(schema, value) {
  return check(schema, schema, value, "", 0);
}

function check(root, schema, value, path, depth) {
  if (depth > 128) return `${label(path)}: nested too deep`;
  if (schema === true || schema === undefined) return undefined;
  if (schema === false) return `${label(path)}: not allowed`;
  const at = label(path);
  if (schema.$ref !== undefined) {
    const target = resolveRef(root, schema.$ref);
    const problem = check(root, target, value, path, depth + 1);
    if (problem !== undefined) return problem;
  }
  if (schema.type !== undefined) {
    const types = [schema.type].flat();
    if (!types.some((t) => isType(t, value))) {
      const wanted = types.map(article).join(" or ");
      if (path === "" && types.includes("object")) {
        return `the arguments must be an object, not ${kind(value)}`;
      }
      return `${at}: expected ${wanted}, not ${kind(value)}`;
    }
  }
  if (schema.const !== undefined && !jsonEqual(schema.const, value)) {
    return `${at}: must be ${JSON.stringify(schema.const)}`;
  }
  if (schema.enum !== undefined && !schema.enum.some((e) => jsonEqual(e, value))) {
    return `${at}: must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(", ")}, not ${short(value)}`;
  }
  if (typeof value === "number") {
    if (typeof schema.minimum === "number" && value < schema.minimum) return `${at}: must be at least ${schema.minimum}, not ${value}`;
    if (typeof schema.maximum === "number" && value > schema.maximum) return `${at}: must be at most ${schema.maximum}, not ${value}`;
    if (typeof schema.exclusiveMinimum === "number" && value <= schema.exclusiveMinimum) return `${at}: must be more than ${schema.exclusiveMinimum}, not ${value}`;
    if (typeof schema.exclusiveMaximum === "number" && value >= schema.exclusiveMaximum) return `${at}: must be less than ${schema.exclusiveMaximum}, not ${value}`;
    if (typeof schema.multipleOf === "number" && schema.multipleOf > 0 && !Number.isInteger(value / schema.multipleOf)) {
      return `${at}: must be a multiple of ${schema.multipleOf}, not ${value}`;
    }
  }
  if (typeof value === "string") {
    const length = [...value].length;
    if (typeof schema.minLength === "number" && length < schema.minLength) return `${at}: must have at least ${schema.minLength} characters, not ${length}`;
    if (typeof schema.maxLength === "number" && length > schema.maxLength) return `${at}: must have at most ${schema.maxLength} characters, not ${length}`;
    if (typeof schema.pattern === "string" && !new RegExp(schema.pattern, "u").test(value)) {
      return `${at}: must match ${schema.pattern}, not ${short(value)}`;
    }
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === "number" && value.length < schema.minItems) return `${at}: must have at least ${schema.minItems} items, not ${value.length}`;
    if (typeof schema.maxItems === "number" && value.length > schema.maxItems) return `${at}: must have at most ${schema.maxItems} items, not ${value.length}`;
    if (schema.uniqueItems === true) {
      for (let i = 0; i < value.length; i++) {
        for (let j = 0; j < i; j++) {
          if (jsonEqual(value[i], value[j])) return `${at}: items ${j} and ${i} are the same; each item must be different`;
        }
      }
    }
    const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : [];
    for (let i = 0; i < value.length; i++) {
      const sub = i < prefix.length ? prefix[i] : schema.items;
      const problem = check(root, sub, value[i], `${path}[${i}]`, depth + 1);
      if (problem !== undefined) return problem;
    }
  }
  if (isType("object", value)) {
    const keys = Object.keys(value);
    if (typeof schema.minProperties === "number" && keys.length < schema.minProperties) return `${at}: must have at least ${schema.minProperties} properties`;
    if (typeof schema.maxProperties === "number" && keys.length > schema.maxProperties) return `${at}: must have at most ${schema.maxProperties} properties`;
    for (const name of schema.required ?? []) {
      if (!Object.hasOwn(value, name)) return `${label(join(path, name))}: required, but missing`;
    }
    const properties = schema.properties ?? {};
    for (const key of keys) {
      const inner = join(path, key);
      if (Object.hasOwn(properties, key)) {
        const problem = check(root, properties[key], value[key], inner, depth + 1);
        if (problem !== undefined) return problem;
      } else if (schema.additionalProperties === false) {
        const known = Object.keys(properties);
        return `${label(inner)}: unknown argument${known.length ? `; the arguments are ${known.join(", ")}` : "; this tool takes none"}`;
      } else if (schema.additionalProperties !== undefined) {
        const problem = check(root, schema.additionalProperties, value[key], inner, depth + 1);
        if (problem !== undefined) return problem;
      }
    }
  }
  if (Array.isArray(schema.allOf)) {
    for (const sub of schema.allOf) {
      const problem = check(root, sub, value, path, depth + 1);
      if (problem !== undefined) return problem;
    }
  }
  if (Array.isArray(schema.anyOf)) {
    const problems = [];
    for (const sub of schema.anyOf) {
      const problem = check(root, sub, value, path, depth + 1);
      if (problem === undefined) {
        problems.length = 0;
        break;
      }
      problems.push(problem);
    }
    if (problems.length) return `${at}: fits none of its ${problems.length} choices (${problems.join("; ")})`;
  }
  if (Array.isArray(schema.oneOf)) {
    const problems = schema.oneOf.map((sub) => check(root, sub, value, path, depth + 1));
    const fits = problems.filter((p) => p === undefined).length;
    if (fits === 0) return `${at}: fits none of its ${problems.length} choices (${problems.join("; ")})`;
    if (fits > 1) return `${at}: fits ${fits} of its choices where exactly one must fit`;
  }
  if (schema.not !== undefined && check(root, schema.not, value, path, depth + 1) === undefined) {
    return `${at}: must not fit the schema under \`not\``;
  }
  return undefined;
}

function isType(type, value) {
  switch (type) {
    case "string":
      return typeof value === "string";
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "integer":
      return typeof value === "number" && Number.isInteger(value);
    case "boolean":
      return typeof value === "boolean";
    case "null":
      return value === null;
    case "array":
      return Array.isArray(value);
    case "object":
      return value !== null && typeof value === "object" && !Array.isArray(value);
    default:
      return false;
  }
}

function article(type) {
  return {
    string: "a string",
    number: "a number",
    integer: "an integer",
    boolean: "a boolean",
    null: "null",
    array: "an array",
    object: "an object",
  }[type];
}

/** How a value is named in a message: "a number", "null", "an array", ... */
function kind(value) {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") {
    const ctor = value.constructor?.name;
    return ctor && ctor !== "Object" ? `a ${ctor}` : "an object";
  }
  return article(typeof value) ?? `a ${typeof value}`;
}

function short(value) {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function join(path, key) {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key)
    ? path === "" ? key : `${path}.${key}`
    : path === "" ? JSON.stringify(key) : `${path}[${JSON.stringify(key)}]`;
}

function label(path) {
  return path === "" ? "the arguments" : path;
}

function jsonEqual(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
}

function deepFreeze(value) {
  if (value !== null && typeof value === "object") {
    Object.values(value).forEach(deepFreeze);
    Object.freeze(value);
  }
  return value;
}

/**
 * A tool's return value as the blocks the model gets: a string as text, undefined
 * or null as nothing ("(done)"), an Image as an image, an array holding an Image or
 * only strings block by block (strings as text, Images as images, anything else as
 * JSON), anything else as one JSON block. A value that cannot become JSON (a
 * BigInt, a cycle, a function, NaN, a Map) throws TypeError, which stops the run.
 *
 * @returns {Array<{tag: "text" | "json" | "image", val: any}>}
 */
export function toContent(value) {
  if (value === undefined || value === null) return [];
  if (typeof value === "string") return [{ tag: "text", val: value }];
  if (value instanceof Image) return [image(value)];
  const blocks = Array.isArray(value) && value.length > 0 && (value.some((v) => v instanceof Image) || value.every((v) => typeof v === "string"));
  if (blocks) {
    return value.map((v) => (typeof v === "string" ? { tag: "text", val: v } : v instanceof Image ? image(v) : { tag: "json", val: toJson(v) }));
  }
  return [{ tag: "json", val: toJson(value) }];
}

function image(img) {
  return { tag: "image", val: { mimeType: img.mimeType, data: img.data } };
}

/** JSON text of `value`, or TypeError for what JSON cannot hold as it is. */
export function toJson(value) {
  const text = JSON.stringify(value, function (key, v) {
    const where = key === "" ? "the result" : `the result's ${JSON.stringify(key)}`;
    switch (typeof v) {
      case "function":
        throw new TypeError(`${where} is a function, which cannot become JSON`);
      case "symbol":
        throw new TypeError(`${where} is a symbol, which cannot become JSON`);
      case "bigint":
        throw new TypeError(`${where} is a BigInt, which cannot become JSON; convert it with String() or Number()`);
      case "number":
        if (!Number.isFinite(v)) throw new TypeError(`${where} is ${v}, which JSON cannot hold`);
        return v;
      case "object":
        if (v instanceof Map || v instanceof Set) {
          throw new TypeError(`${where} is a ${v.constructor.name}, which would become {} in JSON; convert it (Object.fromEntries, Array.from)`);
        }
        if (v instanceof Image) {
          throw new TypeError(`${where} is an Image inside a value sent as JSON; return the Image alone or in an array`);
        }
        if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer) {
          throw new TypeError(`${where} is binary data (${v.constructor.name}), which cannot become JSON; return an Image or encode it`);
        }
        return v;
      default:
        return v;
    }
  });
  if (text === undefined) throw new TypeError(`the result cannot become JSON`);
  return text;
}

/**
 * The tools of a module namespace: every exported Tool, in the order of their
 * export names. Throws TypeError when it has none or two share a name.
 *
 * @param {object} module the module namespace (`import * as tools from "./tools.js"`)
 * @param {string} [file] the module's file, for messages
 */
export function toolsOf(module, file = "the module") {
  const tools = [];
  const byName = new Map();
  for (const [exported, value] of Object.entries(module)) {
    if (!(value instanceof Tool) || tools.includes(value)) continue;
    if (typeof value.run !== "function" || value.run === Tool.prototype.run) {
      throw new TypeError(`${file}: the export ${exported} is a Tool without run(args); implement run in the subclass`);
    }
    if (!(value.hints instanceof Hints) || typeof value.name !== "string" || !NAME.test(value.name)) {
      throw new TypeError(`${file}: the export ${exported} is a Tool whose constructor did not call super({ name, ... })`);
    }
    const other = byName.get(value.name);
    if (other !== undefined) {
      throw new TypeError(`${file}: the exports ${other} and ${exported} are two tools named ${value.name}; give each its own name`);
    }
    byName.set(value.name, exported);
    tools.push(value);
  }
  if (tools.length === 0) {
    throw new TypeError(
      `${file} exports no tool: export at least one, e.g. export const hello = tool(function hello() { return "hi"; })`,
    );
  }
  return tools;
}

/**
 * The `toolbox` interface of the piton:tool contract over the tools of a module:
 * what piton's builder exports from the component. `run` answers with a result
 * (`{tag: "ok" | "err", val}`); an exception that is not a ToolError or a
 * ToolInputError is thrown on, as an Error, which traps and stops the run.
 */
export function toolboxOf(module, file) {
  const tools = toolsOf(module, file);
  const named = (name) => {
    const found = tools.find((t) => t.name === name);
    if (found === undefined) throw new Error(`piton: no tool named ${JSON.stringify(name)} in this component`);
    return found;
  };
  const decls = tools.map((t) => ({
    spec: {
      name: t.name,
      description: t.description,
      inputSchema: JSON.stringify(t.inputSchema),
      parallel: t.parallel,
    },
    hints: witHints(t.hints),
    hasHintsFor: t.hasHintsFor,
  }));
  return {
    tools() {
      return decls;
    },
    hintsFor(name, args) {
      const t = named(name);
      let parsed;
      try {
        parsed = JSON.parse(args);
      } catch (e) {
        if (!(e instanceof SyntaxError)) throw e;
        return undefined;
      }
      const hints = t.hintsFor(parsed);
      if (!(hints instanceof Hints)) {
        throw new TypeError(`tool ${t.name}: hintsFor returned ${kind(hints)}, not a Hints`);
      }
      return witHints(hints);
    },
    async run(name, args) {
      try {
        return await callTool(named(name), args);
      } catch (error) {
        return trapping(error);
      }
    },
  };
}

function witHints(h) {
  return { readOnly: h.readOnly, destructive: h.destructive, idempotent: h.idempotent, openWorld: h.openWorld };
}

/**
 * Runs `t` with the JSON text `args` as the contract's `run` does: the result as
 * `{tag: "ok", val: content}` or `{tag: "err", val: {tag: "input" | "failed", val}}`.
 * Any other exception is thrown on: an Error as it is (its stack shows where in the
 * tool it was thrown), anything else as a TypeError saying what was thrown.
 */
export async function callTool(t, args) {
  let parsed;
  try {
    parsed = JSON.parse(args);
  } catch (e) {
    // Only a syntax error is the model's: running out of memory is not.
    if (!(e instanceof SyntaxError)) throw e;
    return { tag: "err", val: { tag: "input", val: `the arguments are not JSON: ${e.message}` } };
  }
  let value;
  try {
    value = await t.run(parsed);
  } catch (e) {
    if (e instanceof ToolInputError) return { tag: "err", val: { tag: "input", val: e.message } };
    if (e instanceof ToolError) return { tag: "err", val: { tag: "failed", val: e.message } };
    if (e instanceof Error) throw e;
    throw new TypeError(`tool ${t.name} threw ${kind(e)} (${short(e)}), not an Error`);
  }
  return { tag: "ok", val: toContent(value) };
}

/**
 * A result that traps when the component's bindings read it, reporting `error` as an
 * uncaught exception (with its own stack). Thrown from `run` itself, componentize-js
 * would take a thrown value for the `err` case and trap on its shape instead, with a
 * message about a variant tag.
 */
function trapping(error) {
  // The component reports only an exception's message: name its kind too.
  if (error instanceof Error && !String(error.message).startsWith(`${error.name}: `)) {
    try {
      error.message = `${error.name}: ${error.message}`;
    } catch {
      // A frozen error keeps its message.
    }
  }
  return {
    tag: "ok",
    get val() {
      throw error;
    },
  };
}
