/*
 * c_probe: a C tool for the tests of the C SDK and builder. It declares itself
 * read-only and, by its `do` argument, tries what a buggy or hostile C tool would:
 * write a file, abort, read out of bounds, take all memory, give each content kind,
 * and echo what the JSON reader made of its arguments.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piton.h"

static piton_status echo(const piton_json *v, piton_result *result) {
    /* One line per member of `value`: key, type and the reader's value. */
    const piton_json *value = piton_json_get(v, "value");
    for (size_t i = 0; i < piton_json_len(value); i++) {
        size_t key_len;
        const char *key = piton_json_key_at(value, i, &key_len);
        const piton_json *item = piton_json_at(value, i);
        const char *s;
        double d;
        int64_t n;
        bool b;
        if ((s = piton_json_string(item, NULL))) {
            piton_textf(result, "%s: string %s", key, s);
        } else if (piton_json_int(item, &n)) {
            piton_textf(result, "%s: int %lld", key, (long long)n);
        } else if (piton_json_number(item, &d)) {
            piton_textf(result, "%s: number %g", key, d);
        } else if (piton_json_bool(item, &b)) {
            piton_textf(result, "%s: bool %s", key, b ? "true" : "false");
        } else if (piton_json_is_null(item)) {
            piton_textf(result, "%s: null", key);
        } else {
            piton_textf(result, "%s: %s of %zu", key,
                        piton_json_type_of(item) == PITON_JSON_ARRAY ? "array" : "object",
                        piton_json_len(item));
        }
    }
    return PITON_OK;
}

static piton_status run(const piton_json *args, piton_result *result) {
    const char *what = piton_json_string(piton_json_get(args, "do"), NULL);
    const char *path = piton_json_string(piton_json_get(args, "path"), NULL);
    if (!what) return piton_input_error(result, "do must be a string");
    if (strcmp(what, "write") == 0) {
        FILE *f = fopen(path ? path : "/data/new.txt", "w");
        if (!f) return piton_failed(result, "cannot write: %s", strerror(errno));
        fputs("written\n", f);
        fclose(f);
        return piton_text(result, "wrote");
    }
    if (strcmp(what, "read") == 0) {
        FILE *f = fopen(path ? path : "/data/existing.txt", "r");
        if (!f) return piton_failed(result, "cannot read: %s", strerror(errno));
        char buf[256];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        return piton_text_n(result, buf, n);
    }
    if (strcmp(what, "abort") == 0) abort();
    if (strcmp(what, "oob") == 0) {
        volatile unsigned char *far = (unsigned char *)(uintptr_t)0xFFFFFFF0u;
        return piton_textf(result, "%d", far[0]);
    }
    if (strcmp(what, "alloc") == 0) {
        /* volatile: without it the compiler may assume malloc never fails here. */
        void *volatile block;
        size_t mib = 0;
        while ((block = malloc(1 << 20)) != NULL) mib++;
        return piton_textf(result, "%zu MiB", mib);
    }
    if (strcmp(what, "kinds") == 0) {
        static const uint8_t png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
        piton_text(result, "text");
        piton_json_content(result, "{\"a\":[1,2]}");
        return piton_image(result, "image/png", png, sizeof png);
    }
    if (strcmp(what, "echo") == 0) return echo(args, result);
    if (strcmp(what, "failed") == 0) {
        piton_text(result, "dropped");
        return piton_failed(result, "it failed: %d", 42);
    }
    return piton_input_error(result, "unknown do: %s", what);
}

PITON_TOOL(
    .name = "c_probe",
    .description = "Tries what a buggy C tool would.",
    .input_schema = "{\"type\":\"object\",\"properties\":{\"do\":{\"type\":\"string\"},"
                    "\"path\":{\"type\":\"string\"},\"value\":{}},\"required\":[\"do\"]}",
    .hints = {.read_only = PITON_YES, .open_world = PITON_NO},
    .run = run);
