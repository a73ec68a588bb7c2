/* json.c - see json.h. */
#include "util/json.h"

#include <stdlib.h>

#include "util/status.h"

int sl_json_depth(const char *text, size_t len)
{
    int depth = 0, max = 0;
    int in_str = 0, esc = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_str) {
            if (esc) esc = 0;
            else if (c == '\\') esc = 1;
            else if (c == '"') in_str = 0;
            continue;
        }
        if (c == '"') {
            in_str = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > max) max = depth;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return max;
}

int sl_json_parse(const char *text, size_t len, int max_depth, json_t **out, sl_err *err)
{
    *out = NULL;
    int depth = sl_json_depth(text, len);
    if (depth > max_depth)
        return sl_err_set(err, SL_EFORMAT, "the JSON nests %d arrays/objects deep; at most %d "
                          "are accepted", depth, max_depth);
    json_error_t je;
    json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        int code = json_error_code(&je) == json_error_out_of_memory ? SL_ENOMEM : SL_EFORMAT;
        return sl_err_set(err, code, "malformed JSON at line %d, column %d: %s", je.line,
                          je.column, je.text);
    }
    *out = v;
    return SL_OK;
}

char *sl_json_dump_compact(const json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
}
