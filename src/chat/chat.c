/* chat.c - template families: detection, names, construction and the
 * end-of-turn strings (rendering lives in chat_render.c). */
#include "chat/chat.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    sl_chat_family family;
    const char *name;
} k_names[] = {
    {SL_CHAT_CHATML, "chatml"},   {SL_CHAT_QWEN3, "qwen3"},
    {SL_CHAT_LLAMA3, "llama3"},   {SL_CHAT_MISTRAL, "mistral"},
    {SL_CHAT_MISTRAL_V3, "mistral-v3"}, {SL_CHAT_TULU, "tulu"},
    {SL_CHAT_PLAIN, "plain"},
};

#define N_NAMES (sizeof k_names / sizeof k_names[0])

const char *sl_chat_family_name(sl_chat_family f)
{
    for (size_t i = 0; i < N_NAMES; i++)
        if (k_names[i].family == f) return k_names[i].name;
    return "plain";
}

int sl_chat_family_from_name(const char *name, sl_chat_family *out, sl_err *err)
{
    for (size_t i = 0; i < N_NAMES; i++)
        if (!strcmp(name, k_names[i].name)) {
            *out = k_names[i].family;
            return SL_OK;
        }
    return sl_err_set(err, SL_EINVAL,
                      "unknown chat template '%s' (known: chatml, qwen3, llama3, mistral, "
                      "mistral-v3, tulu, plain)",
                      name);
}

static bool has(const char *s, const char *needle)
{
    return strstr(s, needle) != NULL;
}

sl_chat_family sl_chat_detect(const char *j)
{
    if (!j || !*j) return SL_CHAT_PLAIN;
    if (has(j, "<|im_start|>"))
        return has(j, "enable_thinking") || has(j, "</think>") ? SL_CHAT_QWEN3 : SL_CHAT_CHATML;
    if (has(j, "<|start_header_id|>")) return SL_CHAT_LLAMA3;
    if (has(j, "[INST]")) {
        /* v3 writes "[INST] " with no space before it and carries the tool
         * block; v1 writes ' [INST] ' (a leading space) */
        if (has(j, "[AVAILABLE_TOOLS]") && !has(j, " [INST]")) return SL_CHAT_MISTRAL_V3;
        return SL_CHAT_MISTRAL;
    }
    if (has(j, "<|user|>") && has(j, "<|assistant|>")) return SL_CHAT_TULU;
    return SL_CHAT_PLAIN;
}

/* Qwen2/2.5 templates insert a fixed system message when the conversation
 * has none; the text sits in a Jinja string literal
 * '<|im_start|>system\n<TEXT><|im_end|>'. We take the first such literal
 * whose TEXT is plain (no quote, brace or backslash, so it is not an
 * expression like "+ messages[0]['content'] +"). The "\n" may be the
 * two-character Jinja escape or a real newline. */
static char *find_default_system(const char *j)
{
    static const char *const heads[2] = {"<|im_start|>system\\n", "<|im_start|>system\n"};
    for (int h = 0; h < 2; h++) {
        size_t hl = strlen(heads[h]);
        for (const char *p = strstr(j, heads[h]); p; p = strstr(p + 1, heads[h])) {
            const char *text = p + hl;
            const char *end = strstr(text, "<|im_end|>");
            if (!end || end == text) continue;
            size_t n = (size_t)(end - text);
            bool plain = true;
            for (size_t i = 0; i < n && plain; i++)
                if (strchr("'\"{}\\", text[i])) plain = false;
            if (!plain) continue;
            char *s = malloc(n + 1);
            if (!s) return NULL;
            memcpy(s, text, n);
            s[n] = '\0';
            return s;
        }
    }
    return NULL;
}

static char *dup_or_empty(const char *s)
{
    if (!s) s = "";
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

sl_chat_opts sl_chat_opts_default(void)
{
    sl_chat_opts o;
    o.name = NULL;
    o.bos_text = NULL;
    o.eos_text = NULL;
    o.enable_thinking = true;
    o.date = NULL;
    return o;
}

void sl_chat_template_free(sl_chat_template *t)
{
    if (!t) return;
    free(t->default_system);
    free(t->bos_text);
    free(t->eos_text);
    free(t->turn_end);
    free(t->date);
    memset(t, 0, sizeof *t);
}

int sl_chat_template_init(sl_chat_template *t, const char *jinja, const sl_chat_opts *opts,
                          sl_err *err)
{
    memset(t, 0, sizeof *t);
    sl_chat_opts o = opts ? *opts : sl_chat_opts_default();
    if (o.name) {
        int rc = sl_chat_family_from_name(o.name, &t->family, err);
        if (rc) return rc;
    } else {
        t->family = sl_chat_detect(jinja);
    }
    t->enable_thinking = o.enable_thinking;
    const char *eos = o.eos_text;
    if (!eos) eos = t->family == SL_CHAT_TULU ? "<|endoftext|>" : "</s>";
    t->bos_text = dup_or_empty(o.bos_text);
    t->eos_text = dup_or_empty(eos);
    bool oom = false;
    if ((t->family == SL_CHAT_CHATML || t->family == SL_CHAT_QWEN3) && jinja) {
        t->default_system = find_default_system(jinja); /* NULL if none (or no memory) */
        /* thinking-only models open the think block in the template */
        t->think_prefix = has(jinja, "<|im_start|>assistant\\n<think>\\n'") ||
                          has(jinja, "<|im_start|>assistant\n<think>\n'");
    }
    if (t->family == SL_CHAT_LLAMA3 && (o.date || (jinja && has(jinja, "Cutting Knowledge Date")))) {
        t->date = dup_or_empty(o.date ? o.date : "26 Jul 2024");
        oom = !t->date;
    }

    const char *te = "\n";
    switch (t->family) {
    case SL_CHAT_CHATML:
    case SL_CHAT_QWEN3:
        te = "<|im_end|>\n";
        t->stops[0] = "<|im_end|>";
        t->stops[1] = "<|endoftext|>";
        break;
    case SL_CHAT_LLAMA3:
        te = "<|eot_id|>";
        t->stops[0] = "<|eot_id|>";
        t->stops[1] = "<|end_of_text|>";
        t->stops[2] = "<|eom_id|>";
        break;
    case SL_CHAT_MISTRAL:
    case SL_CHAT_MISTRAL_V3:
        te = NULL; /* the EOS text */
        t->stops[0] = t->eos_text;
        break;
    case SL_CHAT_TULU:
        te = NULL; /* EOS + "\n" */
        t->stops[0] = t->eos_text;
        t->stops[1] = "<|user|>";
        break;
    case SL_CHAT_PLAIN:
        te = "\n";
        t->stops[0] = "\nUser:";
        break;
    }
    if (t->eos_text && !te) {
        size_t n = strlen(t->eos_text);
        t->turn_end = malloc(n + 2);
        if (t->turn_end) {
            memcpy(t->turn_end, t->eos_text, n);
            t->turn_end[n] = t->family == SL_CHAT_TULU ? '\n' : '\0';
            t->turn_end[n + 1] = '\0';
        }
    } else if (te) {
        t->turn_end = dup_or_empty(te);
    }
    if (oom || !t->bos_text || !t->eos_text || !t->turn_end) {
        sl_chat_template_free(t);
        return sl_err_set(err, SL_ENOMEM, "chat template: out of memory");
    }
    return SL_OK;
}

const char *sl_chat_turn_end(const sl_chat_template *t)
{
    return t->turn_end;
}

const char *const *sl_chat_stop_strings(const sl_chat_template *t)
{
    return t->stops;
}
