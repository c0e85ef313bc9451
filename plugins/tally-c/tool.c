/*
 * tally: counts the lines, words and bytes of a text file in a granted folder, and
 * with `append` first adds one line to its end.
 *
 * Build: piton build plugins/tally-c          (gives plugins/tally-c/tally-c.wasm)
 * Call:  piton call tally '{"path": "/data/notes.txt"}' --plugins plugins/tally-c
 *        (after granting a folder as /data in piton.toml; see README.md)
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "piton.h"

/* A call without `append` only reads: the host gives it a read-only view of its
 * folders, whatever piton.toml grants. */
static bool hints_for(const piton_json *args, piton_hints *hints) {
    if (piton_json_get(args, "append") != NULL) return false; /* the tool's own hints */
    *hints = (piton_hints){.read_only = PITON_YES, .open_world = PITON_NO};
    return true;
}

static piton_status run(const piton_json *args, piton_result *result) {
    size_t path_len;
    const char *path = piton_json_string(piton_json_get(args, "path"), &path_len);
    if (!path || path[0] != '/' || strlen(path) != path_len)
        return piton_input_error(result, "path must be an absolute path, such as /data/notes.txt");
    size_t line_len = 0;
    const char *line = piton_json_string(piton_json_get(args, "append"), &line_len);
    if (line && (memchr(line, '\n', line_len) || strlen(line) != line_len))
        return piton_input_error(result, "append must be one line (no newline)");

    if (line) {
        FILE *out = fopen(path, "a");
        if (!out) return piton_failed(result, "cannot append to %s: %s", path, strerror(errno));
        bool written = fprintf(out, "%s\n", line) >= 0;
        if (fclose(out) != 0 || !written)
            return piton_failed(result, "cannot append to %s: %s", path, strerror(errno));
    }

    FILE *in = fopen(path, "r");
    if (!in) return piton_failed(result, "cannot open %s: %s", path, strerror(errno));
    unsigned long long lines = 0, words = 0, bytes = 0;
    bool in_word = false;
    int c;
    while ((c = getc(in)) != EOF) {
        bytes++;
        if (c == '\n') lines++;
        if (isspace(c)) {
            in_word = false;
        } else if (!in_word) {
            in_word = true;
            words++;
        }
    }
    bool failed = ferror(in);
    fclose(in);
    if (failed) return piton_failed(result, "cannot read %s", path);

    char json[128];
    snprintf(json, sizeof json, "{\"lines\":%llu,\"words\":%llu,\"bytes\":%llu}", lines, words,
             bytes);
    return piton_json_content(result, json);
}

PITON_TOOL(
    .name = "tally",
    .description = "Count the lines, words and bytes of a text file in a granted folder. "
                   "With `append`, first add that line to the end of the file.",
    .input_schema =
        "{\"type\":\"object\","
        "\"properties\":{"
        "\"path\":{\"type\":\"string\",\"description\":\"The file, such as /data/notes.txt.\"},"
        "\"append\":{\"type\":\"string\",\"description\":\"A line to add first.\"}},"
        "\"required\":[\"path\"],\"additionalProperties\":false}",
    /* The worst case, a call with `append`: it changes a file that exists (so it is
     * destructive: an add-only grant would only let it make new files), and a second
     * call appends again. It never leaves its folders. */
    .hints = {.read_only = PITON_NO, .destructive = PITON_YES, .idempotent = PITON_NO,
              .open_world = PITON_NO},
    .hints_for = hints_for,
    .run = run);
