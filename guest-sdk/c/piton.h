/*
 * piton.h: write a piton tool in C.
 *
 * A tool is one C file that includes this header, declares the tool with
 * PITON_TOOL(...) and defines its run function. `piton build tool.c` compiles it
 * with piton.c and the `wit-bindgen c` bindings of the world `plugin`
 * (piton:tool/tool@0.1.2) for wasm32-wasi, and makes it a component.
 *
 *     #include "piton.h"
 *
 *     static piton_status run(const piton_json *args, piton_result *result) {
 *         const char *text = piton_json_string(piton_json_get(args, "text"), NULL);
 *         if (!text) return piton_input_error(result, "text must be a string");
 *         return piton_textf(result, "%zu bytes", strlen(text));
 *     }
 *
 *     PITON_TOOL(
 *         .name = "byte_count",
 *         .description = "Count the bytes of a text.",
 *         .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":"
 *                         "{\"type\":\"string\"}},\"required\":[\"text\"]}",
 *         .hints = {.read_only = PITON_YES, .open_world = PITON_NO},
 *         .run = run);
 *
 * A call's arguments arrive parsed (piton_json, a read-only tree); read them with
 * piton_json_get / piton_json_string / piton_json_number / ... . The same reader
 * parses any JSON text: piton_json_parse.
 */
#ifndef PITON_H
#define PITON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- JSON reader */

/* The kind of a JSON value. */
typedef enum {
    PITON_JSON_NULL,
    PITON_JSON_FALSE,
    PITON_JSON_TRUE,
    PITON_JSON_NUMBER,
    PITON_JSON_STRING,
    PITON_JSON_ARRAY,
    PITON_JSON_OBJECT,
} piton_json_type;

/* A parsed JSON value; a tree owned by the root piton_json_parse returned. */
typedef struct piton_json piton_json;

/* The deepest nesting of arrays and objects piton_json_parse accepts (as serde_json,
 * which the host checks arguments with). */
#define PITON_JSON_MAX_DEPTH 127
/* The longest text piton_json_parse accepts, in bytes. */
#define PITON_JSON_MAX_SIZE (64u << 20)

/* Parses `len` bytes of JSON text (RFC 8259: one value, whitespace around it, UTF-8,
 * no trailing garbage). Returns the root, or NULL with a message in `error` (when not
 * NULL, `error_size` bytes, NUL-terminated) naming the byte offset of the problem.
 * Duplicate object keys: the last one wins, as in serde_json. Free with
 * piton_json_free. */
piton_json *piton_json_parse(const char *text, size_t len, char *error, size_t error_size);

/* Frees a tree piton_json_parse returned (NULL is fine). */
void piton_json_free(piton_json *root);

/* The kind of `value`; PITON_JSON_NULL for a NULL pointer. */
piton_json_type piton_json_type_of(const piton_json *value);

/* The member `key` of an object, or NULL when `object` is not an object (or NULL) or
 * has no such member. */
const piton_json *piton_json_get(const piton_json *object, const char *key);

/* The number of elements of an array or members of an object; 0 for anything else. */
size_t piton_json_len(const piton_json *value);

/* Element `index` of an array, or the value of member `index` of an object; NULL when
 * out of range or not an array or object. */
const piton_json *piton_json_at(const piton_json *value, size_t index);

/* The key of member `index` of an object (NUL-terminated; `len`, when not NULL, gets
 * its length in bytes: a key may hold "\u0000"); NULL when out of range. */
const char *piton_json_key_at(const piton_json *object, size_t index, size_t *len);

/* The text of a string value, UTF-8 and NUL-terminated; `len`, when not NULL, gets its
 * length in bytes. NULL when `value` is not a string (or NULL). */
const char *piton_json_string(const piton_json *value, size_t *len);

/* A number's value in `out`; false when `value` is not a number. */
bool piton_json_number(const piton_json *value, double *out);

/* A number's value in `out` when it is an integer that fits an int64_t; false
 * otherwise (not a number, a fraction, or out of range). */
bool piton_json_int(const piton_json *value, int64_t *out);

/* A boolean's value in `out`; false when `value` is not true or false. */
bool piton_json_bool(const piton_json *value, bool *out);

/* True when `value` is JSON null (false for a NULL pointer: a missing member). */
bool piton_json_is_null(const piton_json *value);

/* ------------------------------------------------------------- the tool */

/* A hint or flag left unset, set to no, or set to yes. */
typedef enum {
    PITON_UNSET = 0,
    PITON_NO = 1,
    PITON_YES = 2,
} piton_flag;

/* What a call does, with the meaning of MCP tool annotations. A hint left unset
 * assumes the worst (not read-only, destructive, not idempotent, open world), and
 * read_only = PITON_YES makes destructive no and idempotent yes. read_only = PITON_YES
 * with destructive = PITON_YES or idempotent = PITON_NO is a bug: the tool traps. */
typedef struct {
    piton_flag read_only;
    piton_flag destructive;
    piton_flag idempotent;
    piton_flag open_world;
} piton_hints;

/* A call's result being built: content blocks, or one error. */
typedef struct piton_result piton_result;

/* What a run function returns: PITON_OK, or what piton_input_error / piton_failed
 * return. */
typedef enum {
    PITON_OK = 0,
    PITON_ERROR = 1,
} piton_status;

/* A run function: `args` is the call's JSON object, already checked against the input
 * schema by the host. Add content to `result` and return PITON_OK, or return
 * piton_input_error(...) / piton_failed(...). To stop the run (a bug), call abort(). */
typedef piton_status (*piton_run_fn)(const piton_json *args, piton_result *result);

/* A hints_for function: the hints of one call, from its arguments (parsed, NOT yet
 * checked against the schema: anything may be missing or of another type). Fill
 * `hints` and return true, or return false when unsure (the tool's own hints apply). */
typedef bool (*piton_hints_for_fn)(const piton_json *args, piton_hints *hints);

/* A tool, as PITON_TOOL declares it. */
typedef struct {
    /* The name the model calls: [A-Za-z0-9_-]{1,64}. */
    const char *name;
    /* What the model reads about the tool. */
    const char *description;
    /* The JSON Schema of the arguments, an object schema, as JSON text. */
    const char *input_schema;
    /* PITON_NO: the host runs this tool alone, after a batch's other calls.
     * Default: yes. */
    piton_flag parallel;
    /* The tool's own hints: the worst case for any call. */
    piton_hints hints;
    /* Runs one call (required). */
    piton_run_fn run;
    /* Narrows the hints of one call (optional). */
    piton_hints_for_fn hints_for;
} piton_tool;

/* Declares the file's tool, once: PITON_TOOL(.name = "...", .run = ..., ...). */
#define PITON_TOOL(...) const piton_tool piton_the_tool = {__VA_ARGS__}

/* The tool PITON_TOOL declared. */
extern const piton_tool piton_the_tool;

/* The hints `given` stand for, every flag PITON_YES or PITON_NO; false (and `out`
 * untouched) when they are inconsistent. */
bool piton_hints_resolve(piton_hints given, piton_hints *out);

/* ------------------------------------------------------------- results */

/* Adds a text block (`text` up to its NUL). Returns PITON_OK, or traps when out of
 * memory. */
piton_status piton_text(piton_result *result, const char *text);
/* Adds a text block of `len` bytes (UTF-8; invalid sequences trap). */
piton_status piton_text_n(piton_result *result, const char *text, size_t len);
/* Adds a text block, formatted as printf does. */
piton_status piton_textf(piton_result *result, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* Adds a JSON block: `json` must be one JSON value (checked; not JSON traps). */
piton_status piton_json_content(piton_result *result, const char *json);
/* Adds an image block: `mime_type` such as "image/png", and its encoded bytes. */
piton_status piton_image(piton_result *result, const char *mime_type, const uint8_t *data,
                         size_t len);

/* Ends the call with an input error, formatted as printf does: the arguments are wrong;
 * the model gets "(input error: ...)". Drops content added before. */
piton_status piton_input_error(piton_result *result, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* Ends the call with an error result the model can handle, formatted as printf does.
 * Drops content added before. */
piton_status piton_failed(piton_result *result, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#endif /* PITON_H */
