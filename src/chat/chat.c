/* chat.c - template families: detection, names, construction and the
 * end-of-turn strings (rendering lives in chat_render.c). */
#include "chat/chat.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "util/escape.h"

static const struct {
    sl_chat_family family;
    const char *name;
} k_names[] = {
    {SL_CHAT_CHATML, "chatml"},   {SL_CHAT_QWEN3, "qwen3"},
    {SL_CHAT_LLAMA3, "llama3"},   {SL_CHAT_MISTRAL, "mistral"},
    {SL_CHAT_MISTRAL_V3, "mistral-v3"}, {SL_CHAT_TULU, "tulu"},
    {SL_CHAT_HARMONY, "harmony"}, {SL_CHAT_QWEN35, "qwen3.5"},
    {SL_CHAT_DEEPSEEK_V3, "deepseek-v3"}, {SL_CHAT_DEEPSEEK_V31, "deepseek-v3.1"},
    {SL_CHAT_DEEPSEEK_R1, "deepseek-r1"}, {SL_CHAT_KIMI, "kimi-k2"},
    {SL_CHAT_KIMI_THINKING, "kimi-k2-thinking"}, {SL_CHAT_GLM4, "glm4"},
    {SL_CHAT_GLM47, "glm4.7"}, {SL_CHAT_GEMMA4, "gemma4"}, {SL_CHAT_PLAIN, "plain"},
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
                      "mistral-v3, tulu, harmony, qwen3.5, deepseek-v3, deepseek-v3.1, "
                      "deepseek-r1, kimi-k2, kimi-k2-thinking, glm4, glm4.7, gemma4, plain)",
                      name);
}

static bool has(const char *s, const char *needle)
{
    return strstr(s, needle) != NULL;
}

sl_chat_family sl_chat_detect(const char *j)
{
    if (!j || !*j) return SL_CHAT_PLAIN;
    if (has(j, "<|channel|>") && has(j, "<|start|>")) return SL_CHAT_HARMONY;
    if (has(j, "<\xef\xbd\x9cUser\xef\xbd\x9c>")) { /* <｜User｜> */
        if (has(j, "<think></think>")) return SL_CHAT_DEEPSEEK_V31;
        if (has(j, "<think>\\n") || has(j, "<think>\n")) return SL_CHAT_DEEPSEEK_R1;
        return SL_CHAT_DEEPSEEK_V3;
    }
    if (has(j, "<|im_middle|>") && has(j, "<|im_assistant|>"))
        return has(j, "<think>") ? SL_CHAT_KIMI_THINKING : SL_CHAT_KIMI;
    if (has(j, "[gMASK]<sop>") && has(j, "<|assistant|>"))
        return has(j, "clear_thinking") ? SL_CHAT_GLM47 : SL_CHAT_GLM4;
    if (has(j, "<|turn>") && has(j, "<turn|>")) return SL_CHAT_GEMMA4;
    if (has(j, "<|im_start|>") && has(j, "<function=")) return SL_CHAT_QWEN35;
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
 * two-character Jinja escape or a real newline.
 * Linear in the template's length whatever it holds (it comes from the
 * file): the first end marker and the first non-plain character after a
 * position are remembered and reused while later heads lie before them, and
 * every search is bounded by the known end of the string (strstr would
 * measure the whole rest of it on each call under the sanitizers). */
static const char *find(const char *from, const char *lim, const char *needle)
{
    const size_t nl = strlen(needle);
    while ((size_t)(lim - from) >= nl) {
        const char *c = memchr(from, needle[0], (size_t)(lim - from) - nl + 1);
        if (!c) return NULL;
        if (!memcmp(c, needle, nl)) return c;
        from = c + 1;
    }
    return NULL;
}

static char *find_default_system(const char *j)
{
    static const char *const heads[2] = {"<|im_start|>system\\n", "<|im_start|>system\n"};
    const char *lim = j + strlen(j);
    for (int h = 0; h < 2; h++) {
        size_t hl = strlen(heads[h]);
        const char *end = NULL, *bad = NULL; /* cached: first at or after some earlier text */
        for (const char *p = find(j, lim, heads[h]); p; p = find(p + 1, lim, heads[h])) {
            const char *text = p + hl;
            if (!end || end < text) {
                end = find(text, lim, "<|im_end|>");
                if (!end) break; /* no later head can have an end either */
            }
            if (end == text) continue;
            if (!bad || bad < text) {
                bad = text;
                while (bad < lim && !strchr("'\"{}\\", *bad)) bad++;
            }
            if (bad < end) continue; /* not plain */
            size_t n = (size_t)(end - text);
            char *sys = malloc(n + 1);
            if (!sys) return NULL;
            memcpy(sys, text, n);
            sys[n] = '\0';
            return sys;
        }
    }
    return NULL;
}

/* The warning for a template no family matched: its size and first bytes,
 * escaped (util/escape.h). NULL if out of memory. */
static char *unknown_template_warning(const char *jinja)
{
    size_t n = strlen(jinja), used;
    char head[64];
    sl_escape(head, sizeof head - 3, jinja, n < 40 ? n : 40, &used);
    if (used < n) strcat(head, "...");
    const char *fmt = "the model's chat template (tokenizer.chat_template, %zu bytes: '%s') is "
                      "not one sluice recognises; using the plain format (System:/User:/"
                      "Assistant:); --chat-template NAME chooses another";
    size_t cap = strlen(fmt) + sizeof head + 24;
    char *w = malloc(cap);
    if (w) snprintf(w, cap, fmt, n, head);
    return w;
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
    o.reasoning_effort = NULL;
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
    free(t->warning);
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
    bool oom = false;
    if (!o.name && t->family == SL_CHAT_PLAIN && jinja && *jinja) {
        t->warning = unknown_template_warning(jinja);
        oom = !t->warning;
    }
    t->enable_thinking = o.enable_thinking;
    const char *effort = o.reasoning_effort ? o.reasoning_effort : "medium";
    if (strcmp(effort, "low") && strcmp(effort, "medium") && strcmp(effort, "high")) {
        sl_chat_template_free(t);
        return sl_err_set(err, SL_EINVAL, "reasoning effort '%.20s' is not low, medium or high",
                          effort);
    }
    snprintf(t->effort, sizeof t->effort, "%s", effort);
    const char *eos = o.eos_text;
    if (!eos) eos = t->family == SL_CHAT_TULU ? "<|endoftext|>" : "</s>";
    t->bos_text = dup_or_empty(o.bos_text);
    t->eos_text = dup_or_empty(eos);
    if ((t->family == SL_CHAT_CHATML || t->family == SL_CHAT_QWEN3) && jinja) {
        t->default_system = find_default_system(jinja); /* NULL if none (or no memory) */
        /* thinking-only models open the think block in the template */
        t->think_prefix = has(jinja, "<|im_start|>assistant\\n<think>\\n'") ||
                          has(jinja, "<|im_start|>assistant\n<think>\n'");
    }
    if (t->family == SL_CHAT_HARMONY && o.date) {
        t->date = dup_or_empty(o.date);
        oom = oom || !t->date;
    }
    if (t->family == SL_CHAT_LLAMA3 && (o.date || (jinja && has(jinja, "Cutting Knowledge Date")))) {
        t->date = dup_or_empty(o.date ? o.date : "26 Jul 2024");
        oom = oom || !t->date;
    }

    const char *te = "\n";
    switch (t->family) {
    case SL_CHAT_CHATML:
    case SL_CHAT_QWEN3:
    case SL_CHAT_QWEN35:
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
    case SL_CHAT_HARMONY:
        /* the cache ends before the stop token; history ends messages with <|end|> */
        te = "<|end|>";
        t->stops[0] = "<|return|>";
        t->stops[1] = "<|call|>";
        break;
    case SL_CHAT_DEEPSEEK_V3:
    case SL_CHAT_DEEPSEEK_V31:
    case SL_CHAT_DEEPSEEK_R1:
        te = "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>";
        t->stops[0] = te;
        break;
    case SL_CHAT_KIMI:
    case SL_CHAT_KIMI_THINKING:
        te = "<|im_end|>";
        t->stops[0] = te;
        break;
    case SL_CHAT_GLM4:
    case SL_CHAT_GLM47:
        te = ""; /* the next header ends the turn */
        t->stops[0] = "<|user|>";
        t->stops[1] = "<|observation|>";
        t->stops[2] = "<|endoftext|>";
        break;
    case SL_CHAT_GEMMA4:
        te = "<turn|>\n";
        t->stops[0] = "<turn|>";
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

const char *sl_chat_template_warning(const sl_chat_template *t)
{
    return t->warning;
}

const char *sl_chat_turn_end(const sl_chat_template *t)
{
    return t->turn_end;
}

const char *const *sl_chat_stop_strings(const sl_chat_template *t)
{
    return t->stops;
}
