/*
 * json_harness: the C SDK's JSON reader (guest-sdk/c/piton_json.c), compiled natively
 * with the address and undefined-behaviour sanitizers, for the fuzz test in
 * tests/it/lang/c_json.rs. It reads records from stdin (a 4-byte little-endian length,
 * then that many bytes), parses each, and prints one line per record: `ERR`, or the
 * tree as JSON read back through the reader's API (each object key once, its value
 * from piton_json_get, so the last duplicate wins; numbers with 17 digits).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piton.h"

static void print_string(const char *s, size_t len) {
    putchar('"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            printf("\\%c", c);
        } else if (c < 0x20) {
            printf("\\u%04x", c);
        } else {
            putchar(c);
        }
    }
    putchar('"');
}

static void print_value(const piton_json *v) {
    double d;
    bool b;
    size_t len;
    const char *s;
    switch (piton_json_type_of(v)) {
    case PITON_JSON_NULL: fputs("null", stdout); break;
    case PITON_JSON_FALSE:
    case PITON_JSON_TRUE:
        if (!piton_json_bool(v, &b)) abort();
        fputs(b ? "true" : "false", stdout);
        break;
    case PITON_JSON_NUMBER:
        if (!piton_json_number(v, &d)) abort();
        printf("%.17g", d);
        break;
    case PITON_JSON_STRING:
        s = piton_json_string(v, &len);
        if (!s || s[len] != '\0') abort();
        print_string(s, len);
        break;
    case PITON_JSON_ARRAY:
        putchar('[');
        for (size_t i = 0; i < piton_json_len(v); i++) {
            if (i) putchar(',');
            print_value(piton_json_at(v, i));
        }
        putchar(']');
        break;
    case PITON_JSON_OBJECT: {
        putchar('{');
        bool first = true;
        size_t n = piton_json_len(v);
        for (size_t i = 0; i < n; i++) {
            size_t key_len;
            const char *key = piton_json_key_at(v, i, &key_len);
            bool later = false; /* printed at its last occurrence */
            for (size_t k = i + 1; k < n && !later; k++) {
                size_t other_len;
                const char *other = piton_json_key_at(v, k, &other_len);
                later = other_len == key_len && memcmp(other, key, key_len) == 0;
            }
            if (later) continue;
            if (!first) putchar(',');
            first = false;
            print_string(key, key_len);
            putchar(':');
            /* piton_json_get finds keys up to a NUL; the value of a key holding one
             * is taken by index. */
            const piton_json *value =
                strlen(key) == key_len ? piton_json_get(v, key) : piton_json_at(v, i);
            if (value != piton_json_at(v, i)) abort();
            print_value(value);
        }
        putchar('}');
        break;
    }
    }
}

int main(void) {
    unsigned char header[4];
    while (fread(header, 1, 4, stdin) == 4) {
        size_t len = (size_t)header[0] | (size_t)header[1] << 8 | (size_t)header[2] << 16 |
                     (size_t)header[3] << 24;
        /* An exact-size heap copy, so the sanitizer sees any read past its end. */
        char *text = malloc(len ? len : 1);
        if (!text || fread(text, 1, len, stdin) != len) return 2;
        char error[128];
        piton_json *root = piton_json_parse(text, len, error, sizeof error);
        if (root) {
            print_value(root);
            putchar('\n');
        } else {
            if (strstr(error, " at byte ") == NULL) abort();
            puts("ERR");
        }
        piton_json_free(root);
        free(text);
    }
    return 0;
}
