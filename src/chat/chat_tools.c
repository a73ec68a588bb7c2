/* chat_tools.c - Qwen3's (chatml-family) form of function tools: the
 * system block that lists them as JSON inside <tools></tools> and asks for
 * <tool_call> JSON, and the form of one call in an assistant turn. The JSON
 * of each tool is written as the template's `tool | tojson` writes it
 * (Python's json.dumps: ", " and ": " separators, keys in their order,
 * non-ASCII kept). */
#include "chat/chat_internal.h"

#include <stdlib.h>
#include <string.h>

#include "util/json.h"

int sl_chat_put_qwen3_tools(sl_sbuf *b, const char *system, const void *tools_v, sl_err *err)
{
    const json_t *tools = tools_v;
    sl_sbuf_put(b, "<|im_start|>system\n");
    if (system) {
        sl_sbuf_put(b, system);
        sl_sbuf_put(b, "\n\n");
    }
    sl_sbuf_put(b, "# Tools\n\nYou may call one or more functions to assist with the user "
                   "query.\n\nYou are provided with function signatures within <tools></tools> "
                   "XML tags:\n<tools>");
    size_t i;
    const json_t *tool;
    json_array_foreach(tools, i, tool) {
        if (!json_is_object(tool))
            return sl_err_set(err, SL_EINVAL, "tools[%zu] is not an object", i);
        char *js = json_dumps(tool, JSON_REAL_PRECISION(15));
        if (!js) return sl_err_set(err, SL_ENOMEM, "out of memory writing tools[%zu]", i);
        sl_sbuf_put(b, "\n");
        sl_sbuf_put(b, js);
        free(js);
    }
    sl_sbuf_put(b, "\n</tools>\n\nFor each function call, return a json object with function "
                   "name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
                   "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
                   "</tool_call><|im_end|>\n");
    return SL_OK;
}

void sl_chat_put_qwen3_call(sl_sbuf *b, const sl_chat_tool_call *c)
{
    sl_sbuf_put(b, "<tool_call>\n{\"name\": \"");
    sl_sbuf_put(b, c->name);
    sl_sbuf_put(b, "\", \"arguments\": ");
    sl_sbuf_put(b, c->arguments);
    sl_sbuf_put(b, "}\n</tool_call>");
}
