/*
 * piton_json.c: the JSON reader of piton.h, a recursive-descent parser of RFC 8259.
 *
 * It accepts what serde_json (the host's parser) accepts and nothing else: one value
 * with whitespace around it, strict UTF-8 in strings (no overlong forms, no encoded
 * surrogates, nothing above U+10FFFF), the eight escapes and \uXXXX with paired
 * surrogates, numbers in JSON's grammar whose value is finite, nesting at most
 * PITON_JSON_MAX_DEPTH deep. Object members keep their order; lookups find the last of
 * duplicate keys, as serde_json keeps. Every allocation is checked: out of memory is a
 * parse error, never a crash. This file has no wasm-specific code: the tests compile
 * it natively and compare it with serde_json on generated and mutated inputs.
 */
#include "piton.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct piton_json {
    piton_json_type type;
    union {
        double number;
        struct {
            char *bytes; /* NUL-terminated */
            size_t len;
        } string;
        struct {
            piton_json **items;
            char **keys;        /* objects only; NUL-terminated */
            size_t *key_lens;   /* objects only */
            size_t len;
        } list;
    } as;
};

typedef struct {
    const unsigned char *at;
    const unsigned char *start;
    const unsigned char *end;
    char *error;
    size_t error_size;
    bool failed;
} parser;

static void fail(parser *p, const char *what) {
    if (p->failed) return;
    p->failed = true;
    if (p->error && p->error_size > 0)
        snprintf(p->error, p->error_size, "%s at byte %zu", what, (size_t)(p->at - p->start));
}

static void skip_space(parser *p) {
    while (p->at < p->end &&
           (*p->at == ' ' || *p->at == '\t' || *p->at == '\n' || *p->at == '\r'))
        p->at++;
}

static piton_json *new_value(parser *p, piton_json_type type) {
    piton_json *v = calloc(1, sizeof *v);
    if (!v) {
        fail(p, "out of memory");
        return NULL;
    }
    v->type = type;
    return v;
}

/* A growable byte buffer for a string being decoded. */
typedef struct {
    char *bytes;
    size_t len, cap;
} buffer;

static bool push_bytes(parser *p, buffer *b, const void *bytes, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 16;
        while (cap < b->len + n + 1) cap *= 2;
        char *grown = realloc(b->bytes, cap);
        if (!grown) {
            fail(p, "out of memory");
            return false;
        }
        b->bytes = grown;
        b->cap = cap;
    }
    memcpy(b->bytes + b->len, bytes, n);
    b->len += n;
    b->bytes[b->len] = '\0';
    return true;
}

static bool push_code_point(parser *p, buffer *b, uint32_t c) {
    unsigned char out[4];
    size_t n;
    if (c < 0x80) {
        out[0] = (unsigned char)c;
        n = 1;
    } else if (c < 0x800) {
        out[0] = (unsigned char)(0xC0 | (c >> 6));
        out[1] = (unsigned char)(0x80 | (c & 0x3F));
        n = 2;
    } else if (c < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (c >> 12));
        out[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (c & 0x3F));
        n = 3;
    } else {
        out[0] = (unsigned char)(0xF0 | (c >> 18));
        out[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
        out[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        out[3] = (unsigned char)(0x80 | (c & 0x3F));
        n = 4;
    }
    return push_bytes(p, b, out, n);
}

/* The length of the valid UTF-8 sequence at `s` (at most `n` bytes), 0 if invalid. */
static size_t utf8_sequence(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    uint32_t min, cp;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, min = 0x80, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, min = 0x800, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

static int hex_digit(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool read_hex4(parser *p, uint32_t *out) {
    if (p->end - p->at < 4) {
        fail(p, "unfinished \\u escape");
        return false;
    }
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(p->at[i]);
        if (d < 0) {
            fail(p, "bad \\u escape");
            return false;
        }
        v = (v << 4) | (uint32_t)d;
    }
    p->at += 4;
    *out = v;
    return true;
}

/* A string starting at the opening quote, decoded into `b`. */
static bool parse_string_into(parser *p, buffer *b) {
    p->at++; /* the opening quote */
    if (!push_bytes(p, b, "", 0)) return false;
    for (;;) {
        const unsigned char *run = p->at;
        while (p->at < p->end && *p->at != '"' && *p->at != '\\' && *p->at >= 0x20) {
            size_t n = utf8_sequence(p->at, (size_t)(p->end - p->at));
            if (n == 0) {
                fail(p, "invalid UTF-8 in a string");
                return false;
            }
            p->at += n;
        }
        if (!push_bytes(p, b, run, (size_t)(p->at - run))) return false;
        if (p->at >= p->end) {
            fail(p, "unterminated string");
            return false;
        }
        unsigned char c = *p->at;
        if (c == '"') {
            p->at++;
            return true;
        }
        if (c < 0x20) {
            fail(p, "control character in a string");
            return false;
        }
        /* a backslash */
        p->at++;
        if (p->at >= p->end) {
            fail(p, "unfinished escape");
            return false;
        }
        char e = (char)*p->at++;
        char plain;
        switch (e) {
        case '"': plain = '"'; break;
        case '\\': plain = '\\'; break;
        case '/': plain = '/'; break;
        case 'b': plain = '\b'; break;
        case 'f': plain = '\f'; break;
        case 'n': plain = '\n'; break;
        case 'r': plain = '\r'; break;
        case 't': plain = '\t'; break;
        case 'u': {
            uint32_t cp;
            if (!read_hex4(p, &cp)) return false;
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                fail(p, "lone trailing surrogate in a \\u escape");
                return false;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t low;
                if (p->end - p->at < 2 || p->at[0] != '\\' || p->at[1] != 'u') {
                    fail(p, "lone leading surrogate in a \\u escape");
                    return false;
                }
                p->at += 2;
                if (!read_hex4(p, &low)) return false;
                if (low < 0xDC00 || low > 0xDFFF) {
                    fail(p, "lone leading surrogate in a \\u escape");
                    return false;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            }
            if (!push_code_point(p, b, cp)) return false;
            continue;
        }
        default:
            p->at--;
            fail(p, "bad escape");
            return false;
        }
        if (!push_bytes(p, b, &plain, 1)) return false;
    }
}

static piton_json *parse_value(parser *p, int depth);

static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static piton_json *parse_number(parser *p) {
    const unsigned char *start = p->at;
    if (p->at < p->end && *p->at == '-') p->at++;
    if (p->at >= p->end || !is_digit(*p->at)) {
        fail(p, "bad number");
        return NULL;
    }
    if (*p->at == '0') {
        p->at++;
    } else {
        while (p->at < p->end && is_digit(*p->at)) p->at++;
    }
    if (p->at < p->end && *p->at == '.') {
        p->at++;
        if (p->at >= p->end || !is_digit(*p->at)) {
            fail(p, "bad number: a digit must follow the point");
            return NULL;
        }
        while (p->at < p->end && is_digit(*p->at)) p->at++;
    }
    if (p->at < p->end && (*p->at == 'e' || *p->at == 'E')) {
        p->at++;
        if (p->at < p->end && (*p->at == '+' || *p->at == '-')) p->at++;
        if (p->at >= p->end || !is_digit(*p->at)) {
            fail(p, "bad number: a digit must follow the exponent");
            return NULL;
        }
        while (p->at < p->end && is_digit(*p->at)) p->at++;
    }
    /* strtod needs a NUL-terminated copy; the grammar above already decided. */
    size_t n = (size_t)(p->at - start);
    char small[64];
    char *text = n < sizeof small ? small : malloc(n + 1);
    if (!text) {
        fail(p, "out of memory");
        return NULL;
    }
    memcpy(text, start, n);
    text[n] = '\0';
    double value = strtod(text, NULL);
    if (text != small) free(text);
    if (!isfinite(value)) {
        p->at = start;
        fail(p, "number out of range");
        return NULL;
    }
    piton_json *v = new_value(p, PITON_JSON_NUMBER);
    if (v) v->as.number = value;
    return v;
}

static bool expect_word(parser *p, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(p->end - p->at) < n || memcmp(p->at, word, n) != 0) {
        fail(p, "expected a value");
        return false;
    }
    p->at += n;
    return true;
}

/* Appends to a growing list of items (and keys, for an object). */
typedef struct {
    piton_json **items;
    char **keys;
    size_t *key_lens;
    size_t len, cap;
} list_builder;

static bool list_push(parser *p, list_builder *l, piton_json *item, char *key, size_t key_len,
                      bool object) {
    if (l->len == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        piton_json **items = realloc(l->items, cap * sizeof *items);
        if (!items) goto oom;
        l->items = items;
        if (object) {
            char **keys = realloc(l->keys, cap * sizeof *keys);
            if (!keys) goto oom;
            l->keys = keys;
            size_t *lens = realloc(l->key_lens, cap * sizeof *lens);
            if (!lens) goto oom;
            l->key_lens = lens;
        }
        l->cap = cap;
    }
    l->items[l->len] = item;
    if (object) {
        l->keys[l->len] = key;
        l->key_lens[l->len] = key_len;
    }
    l->len++;
    return true;
oom:
    fail(p, "out of memory");
    return false;
}

static void list_free(list_builder *l) {
    for (size_t i = 0; i < l->len; i++) {
        piton_json_free(l->items[i]);
        if (l->keys) free(l->keys[i]);
    }
    free(l->items);
    free(l->keys);
    free(l->key_lens);
}

static piton_json *parse_list(parser *p, int depth, bool object) {
    if (depth >= PITON_JSON_MAX_DEPTH) {
        fail(p, "nested too deep");
        return NULL;
    }
    unsigned char close = object ? '}' : ']';
    p->at++; /* the opening bracket */
    list_builder l = {0};
    skip_space(p);
    if (p->at < p->end && *p->at == close) {
        p->at++;
    } else {
        for (;;) {
            char *key = NULL;
            size_t key_len = 0;
            if (object) {
                skip_space(p);
                if (p->at >= p->end || *p->at != '"') {
                    fail(p, "expected a key string");
                    goto error;
                }
                buffer b = {0};
                if (!parse_string_into(p, &b)) {
                    free(b.bytes);
                    goto error;
                }
                key = b.bytes;
                key_len = b.len;
                skip_space(p);
                if (p->at >= p->end || *p->at != ':') {
                    free(key);
                    fail(p, "expected ':'");
                    goto error;
                }
                p->at++;
            }
            piton_json *item = parse_value(p, depth + 1);
            if (!item) {
                free(key);
                goto error;
            }
            if (!list_push(p, &l, item, key, key_len, object)) {
                piton_json_free(item);
                free(key);
                goto error;
            }
            skip_space(p);
            if (p->at < p->end && *p->at == ',') {
                p->at++;
                continue;
            }
            if (p->at < p->end && *p->at == close) {
                p->at++;
                break;
            }
            fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
            goto error;
        }
    }
    piton_json *v = new_value(p, object ? PITON_JSON_OBJECT : PITON_JSON_ARRAY);
    if (!v) goto error;
    v->as.list.items = l.items;
    v->as.list.keys = l.keys;
    v->as.list.key_lens = l.key_lens;
    v->as.list.len = l.len;
    return v;
error:
    list_free(&l);
    return NULL;
}

static piton_json *parse_value(parser *p, int depth) {
    skip_space(p);
    if (p->at >= p->end) {
        fail(p, "expected a value");
        return NULL;
    }
    switch (*p->at) {
    case '{': return parse_list(p, depth, true);
    case '[': return parse_list(p, depth, false);
    case '"': {
        buffer b = {0};
        if (!parse_string_into(p, &b)) {
            free(b.bytes);
            return NULL;
        }
        piton_json *v = new_value(p, PITON_JSON_STRING);
        if (!v) {
            free(b.bytes);
            return NULL;
        }
        v->as.string.bytes = b.bytes;
        v->as.string.len = b.len;
        return v;
    }
    case 't': return expect_word(p, "true") ? new_value(p, PITON_JSON_TRUE) : NULL;
    case 'f': return expect_word(p, "false") ? new_value(p, PITON_JSON_FALSE) : NULL;
    case 'n': return expect_word(p, "null") ? new_value(p, PITON_JSON_NULL) : NULL;
    default:
        if (*p->at == '-' || is_digit(*p->at)) return parse_number(p);
        fail(p, "expected a value");
        return NULL;
    }
}

piton_json *piton_json_parse(const char *text, size_t len, char *error, size_t error_size) {
    if (error && error_size > 0) error[0] = '\0';
    parser p = {
        .at = (const unsigned char *)text,
        .start = (const unsigned char *)text,
        .end = (const unsigned char *)text + len,
        .error = error,
        .error_size = error_size,
    };
    if (!text && len > 0) {
        fail(&p, "no text");
        return NULL;
    }
    if (len > PITON_JSON_MAX_SIZE) {
        fail(&p, "text too long");
        return NULL;
    }
    piton_json *root = parse_value(&p, 0);
    if (!root) return NULL;
    skip_space(&p);
    if (p.at != p.end) {
        fail(&p, "trailing characters");
        piton_json_free(root);
        return NULL;
    }
    return root;
}

void piton_json_free(piton_json *v) {
    if (!v) return;
    if (v->type == PITON_JSON_STRING) {
        free(v->as.string.bytes);
    } else if (v->type == PITON_JSON_ARRAY || v->type == PITON_JSON_OBJECT) {
        for (size_t i = 0; i < v->as.list.len; i++) {
            piton_json_free(v->as.list.items[i]);
            if (v->as.list.keys) free(v->as.list.keys[i]);
        }
        free(v->as.list.items);
        free(v->as.list.keys);
        free(v->as.list.key_lens);
    }
    free(v);
}

piton_json_type piton_json_type_of(const piton_json *v) { return v ? v->type : PITON_JSON_NULL; }

const piton_json *piton_json_get(const piton_json *object, const char *key) {
    if (!object || object->type != PITON_JSON_OBJECT || !key) return NULL;
    size_t n = strlen(key);
    for (size_t i = object->as.list.len; i > 0; i--) {
        if (object->as.list.key_lens[i - 1] == n && memcmp(object->as.list.keys[i - 1], key, n) == 0)
            return object->as.list.items[i - 1];
    }
    return NULL;
}

size_t piton_json_len(const piton_json *v) {
    if (!v || (v->type != PITON_JSON_ARRAY && v->type != PITON_JSON_OBJECT)) return 0;
    return v->as.list.len;
}

const piton_json *piton_json_at(const piton_json *v, size_t index) {
    if (index >= piton_json_len(v)) return NULL;
    return v->as.list.items[index];
}

const char *piton_json_key_at(const piton_json *object, size_t index, size_t *len) {
    if (!object || object->type != PITON_JSON_OBJECT || index >= object->as.list.len) return NULL;
    if (len) *len = object->as.list.key_lens[index];
    return object->as.list.keys[index];
}

const char *piton_json_string(const piton_json *v, size_t *len) {
    if (!v || v->type != PITON_JSON_STRING) return NULL;
    if (len) *len = v->as.string.len;
    return v->as.string.bytes;
}

bool piton_json_number(const piton_json *v, double *out) {
    if (!v || v->type != PITON_JSON_NUMBER) return false;
    if (out) *out = v->as.number;
    return true;
}

bool piton_json_int(const piton_json *v, int64_t *out) {
    double d;
    if (!piton_json_number(v, &d)) return false;
    /* -2^63 <= d < 2^63, and whole. */
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != floor(d)) return false;
    if (out) *out = (int64_t)d;
    return true;
}

bool piton_json_bool(const piton_json *v, bool *out) {
    if (!v || (v->type != PITON_JSON_TRUE && v->type != PITON_JSON_FALSE)) return false;
    if (out) *out = v->type == PITON_JSON_TRUE;
    return true;
}

bool piton_json_is_null(const piton_json *v) { return v && v->type == PITON_JSON_NULL; }
