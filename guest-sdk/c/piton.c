/*
 * piton.c: the exports of the world `plugin` (piton:tool/tool@0.1.2), made from the
 * tool PITON_TOOL declared, and the result builders of piton.h.
 *
 * The generated bindings (bindings/plugin.h) pass ownership both ways: an export owns
 * its argument strings (freed here) and gives away what it returns (malloc'd here,
 * freed by the bindings' post-return functions). A bug in the tool's declaration
 * (inconsistent hints, content that is not UTF-8 or not JSON) is reported on stderr
 * and traps, which stops the run, as a bug in a Python or Rust tool does.
 */
#include "piton.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.h"

typedef exports_piton_tool_tool_content_t content_t;

struct piton_result {
    content_t *items;
    size_t len, cap;
    bool has_error;
    exports_piton_tool_tool_tool_error_t error;
};

/* Reports a bug in the tool and traps. */
__attribute__((noreturn, format(printf, 1, 2))) static void bug(const char *format, ...) {
    va_list args;
    va_start(args, format);
    fputs("piton: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    fflush(stderr);
    abort();
}

static void *checked_malloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) bug("out of memory (%zu bytes)", n);
    return p;
}

/* A malloc'd copy of `len` bytes, for the bindings to free. */
static plugin_string_t owned(const char *bytes, size_t len) {
    plugin_string_t s = {.ptr = checked_malloc(len), .len = len};
    if (len) memcpy(s.ptr, bytes, len);
    return s;
}

/* Whether `len` bytes are valid UTF-8 (the component model's strings must be). */
static bool is_utf8(const char *text, size_t len) {
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        size_t n;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            n = 2, cp = c & 0x1F, min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 3, cp = c & 0x0F, min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (len - i < n) return false;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += n;
    }
    return true;
}

static const char *or_empty(const char *s) { return s ? s : ""; }

bool piton_hints_resolve(piton_hints given, piton_hints *out) {
    bool read_only = given.read_only == PITON_YES;
    if (read_only && (given.destructive == PITON_YES || given.idempotent == PITON_NO))
        return false;
    piton_hints r;
    r.read_only = read_only ? PITON_YES : PITON_NO;
    r.destructive = read_only ? PITON_NO : (given.destructive == PITON_NO ? PITON_NO : PITON_YES);
    r.idempotent = read_only ? PITON_YES : (given.idempotent == PITON_YES ? PITON_YES : PITON_NO);
    r.open_world = given.open_world == PITON_NO ? PITON_NO : PITON_YES;
    *out = r;
    return true;
}

static exports_piton_tool_tool_tool_hints_t wit_hints(piton_hints given, const char *whose) {
    piton_hints r;
    if (!piton_hints_resolve(given, &r))
        bug("%s of tool %s: read_only = PITON_YES with destructive = PITON_YES or "
            "idempotent = PITON_NO (a read-only call changes nothing)",
            whose, or_empty(piton_the_tool.name));
    return (exports_piton_tool_tool_tool_hints_t){
        .read_only = r.read_only == PITON_YES,
        .destructive = r.destructive == PITON_YES,
        .idempotent = r.idempotent == PITON_YES,
        .open_world = r.open_world == PITON_YES,
    };
}

void exports_piton_tool_tool_spec(exports_piton_tool_tool_tool_spec_t *ret) {
    const piton_tool *t = &piton_the_tool;
    const char *name = or_empty(t->name);
    const char *description = or_empty(t->description);
    const char *schema = t->input_schema ? t->input_schema : "{\"type\":\"object\"}";
    if (!t->run) bug("tool %s: PITON_TOOL has no .run function", name);
    ret->name = owned(name, strlen(name));
    ret->description = owned(description, strlen(description));
    ret->input_schema = owned(schema, strlen(schema));
    ret->parallel = t->parallel != PITON_NO;
}

void exports_piton_tool_tool_hints(exports_piton_tool_tool_tool_hints_t *ret) {
    *ret = wit_hints(piton_the_tool.hints, "the hints");
}

bool exports_piton_tool_tool_hints_for(plugin_string_t *args,
                                       exports_piton_tool_tool_tool_hints_t *ret) {
    bool some = false;
    if (piton_the_tool.hints_for) {
        piton_json *parsed = piton_json_parse((const char *)args->ptr, args->len, NULL, 0);
        if (parsed) {
            piton_hints hints = {0};
            if (piton_the_tool.hints_for(parsed, &hints)) {
                *ret = wit_hints(hints, "hints_for");
                some = true;
            }
            piton_json_free(parsed);
        }
    }
    plugin_string_free(args);
    return some;
}

static void clear(piton_result *r) {
    for (size_t i = 0; i < r->len; i++) exports_piton_tool_tool_content_free(&r->items[i]);
    free(r->items);
    r->items = NULL;
    r->len = r->cap = 0;
}

bool exports_piton_tool_tool_run(plugin_string_t *args, exports_piton_tool_tool_list_content_t *ret,
                                 exports_piton_tool_tool_tool_error_t *err) {
    piton_result result = {0};
    char message[256];
    piton_json *parsed = piton_json_parse((const char *)args->ptr, args->len, message, sizeof message);
    plugin_string_free(args);
    if (!parsed) {
        piton_input_error(&result, "the arguments are not JSON: %s", message);
    } else if (piton_json_type_of(parsed) != PITON_JSON_OBJECT) {
        piton_input_error(&result, "the arguments are not a JSON object");
    } else {
        piton_status status = piton_the_tool.run(parsed, &result);
        if (status != PITON_OK && !result.has_error)
            bug("tool %s: run returned an error without piton_input_error or piton_failed",
                or_empty(piton_the_tool.name));
        if (status == PITON_OK && result.has_error)
            bug("tool %s: run returned PITON_OK after piton_input_error or piton_failed",
                or_empty(piton_the_tool.name));
    }
    piton_json_free(parsed);
    if (result.has_error) {
        clear(&result);
        *err = result.error;
        return false;
    }
    ret->ptr = result.items;
    ret->len = result.len;
    return true;
}

static void push(piton_result *r, content_t item) {
    if (r->has_error) bug("content added after piton_input_error or piton_failed");
    if (r->len == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 4;
        content_t *items = realloc(r->items, cap * sizeof *items);
        if (!items) bug("out of memory");
        r->items = items;
        r->cap = cap;
    }
    r->items[r->len++] = item;
}

piton_status piton_text_n(piton_result *r, const char *text, size_t len) {
    if (!text && len) bug("piton_text: NULL text");
    if (!is_utf8(text, len)) bug("piton_text: the text is not UTF-8");
    push(r, (content_t){.tag = PITON_TOOL_TYPES_CONTENT_TEXT, .val.text = owned(text, len)});
    return PITON_OK;
}

piton_status piton_text(piton_result *r, const char *text) {
    return piton_text_n(r, or_empty(text), strlen(or_empty(text)));
}

/* A malloc'd, formatted string. */
static char *format_v(const char *format, va_list args, size_t *len) {
    va_list again;
    va_copy(again, args);
    int n = vsnprintf(NULL, 0, format, args);
    if (n < 0) bug("bad format string %s", format);
    char *text = checked_malloc((size_t)n + 1);
    vsnprintf(text, (size_t)n + 1, format, again);
    va_end(again);
    *len = (size_t)n;
    return text;
}

piton_status piton_textf(piton_result *r, const char *format, ...) {
    va_list args;
    va_start(args, format);
    size_t len;
    char *text = format_v(format, args, &len);
    va_end(args);
    piton_text_n(r, text, len);
    free(text);
    return PITON_OK;
}

piton_status piton_json_content(piton_result *r, const char *json) {
    size_t len = strlen(or_empty(json));
    char message[128];
    piton_json *parsed = piton_json_parse(or_empty(json), len, message, sizeof message);
    if (!parsed) bug("piton_json_content: not JSON: %s", message);
    piton_json_free(parsed);
    push(r, (content_t){.tag = PITON_TOOL_TYPES_CONTENT_JSON, .val.json = owned(json, len)});
    return PITON_OK;
}

piton_status piton_image(piton_result *r, const char *mime_type, const uint8_t *data, size_t len) {
    if (!data && len) bug("piton_image: NULL data");
    const char *mime = or_empty(mime_type);
    if (!is_utf8(mime, strlen(mime))) bug("piton_image: the media type is not UTF-8");
    plugin_string_t bytes = owned((const char *)data, len);
    content_t item = {.tag = PITON_TOOL_TYPES_CONTENT_IMAGE};
    item.val.image.mime_type = owned(mime, strlen(mime));
    item.val.image.data.ptr = bytes.ptr;
    item.val.image.data.len = bytes.len;
    push(r, item);
    return PITON_OK;
}

/* Sets the call's error; a second error is a bug. Non-UTF-8 bytes in the message (a
 * path, a system message) are replaced by '?', as the model reads text. */
static piton_status set_error(piton_result *r, uint8_t tag, const char *format, va_list args) {
    if (r->has_error) bug("a second piton_input_error or piton_failed in one call");
    size_t len;
    char *text = format_v(format, args, &len);
    for (size_t i = 0; i < len;) {
        size_t n = 1;
        while (n <= 4 && i + n <= len && !is_utf8(text + i, n)) n++;
        if (n > 4 || i + n > len) {
            text[i] = '?';
            n = 1;
        }
        i += n;
    }
    r->has_error = true;
    r->error.tag = tag;
    r->error.val.input = (plugin_string_t){.ptr = (uint8_t *)text, .len = len};
    return PITON_ERROR;
}

piton_status piton_input_error(piton_result *r, const char *format, ...) {
    va_list args;
    va_start(args, format);
    piton_status s = set_error(r, PITON_TOOL_TYPES_TOOL_ERROR_INPUT, format, args);
    va_end(args);
    return s;
}

piton_status piton_failed(piton_result *r, const char *format, ...) {
    va_list args;
    va_start(args, format);
    piton_status s = set_error(r, PITON_TOOL_TYPES_TOOL_ERROR_FAILED, format, args);
    va_end(args);
    return s;
}
