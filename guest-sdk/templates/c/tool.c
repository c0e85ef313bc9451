/*
 * __NAME__: a piton tool in C (the project __PROJECT__).
 *
 * Build: piton build          (gives __PROJECT__.wasm here)
 * Test:  sh test.sh
 * Docs:  guest-sdk/c/README.md in the piton repository
 */
#include <ctype.h>
#include <string.h>

#include "piton.h"

/* Runs one call. `args` is the call's JSON object, already checked against the
 * input schema below by the host. */
static piton_status run(const piton_json *args, piton_result *result) {
    size_t len;
    const char *text = piton_json_string(piton_json_get(args, "text"), &len);
    if (!text) return piton_input_error(result, "text must be a string");
    if (len > 0 && strlen(text) != len)
        return piton_input_error(result, "text must not hold a NUL character");

    unsigned long words = 0;
    bool in_word = false;
    for (size_t i = 0; i < len; i++) {
        if (isspace((unsigned char)text[i])) {
            in_word = false;
        } else if (!in_word) {
            in_word = true;
            words++;
        }
    }
    if (words == 0) return piton_failed(result, "the text has no words");
    return piton_textf(result, "%lu", words);
}

PITON_TOOL(
    .name = "__NAME__",
    .description = "Count the words in a text.",
    .input_schema = "{\"type\":\"object\","
                    "\"properties\":{\"text\":{\"type\":\"string\","
                    "\"description\":\"The text to count the words of.\"}},"
                    "\"required\":[\"text\"]}",
    /* Changes nothing and reaches nothing outside: the host runs it with no write
     * access to any folder, whatever piton.toml grants. */
    .hints = {.read_only = PITON_YES, .open_world = PITON_NO},
    .run = run);
