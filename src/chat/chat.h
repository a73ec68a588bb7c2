/* chat.h - chat templates: which family a model's tokenizer.chat_template
 * belongs to, and the prompt text of a conversation in that family.
 *
 * Owns: family detection (substring heuristics, no Jinja engine), the
 * hand-written renderers, the end-of-turn text of each family. Must not
 * know: tokenizers, models or sessions. Special tokens are written as text
 * ("<|im_start|>"); the tokenizer parses them back into ids.
 *
 * Families and their formats (s = system, u = user, a = assistant):
 *
 *   chatml      Qwen2/2.5, Qwen1.5-MoE, generic ChatML:
 *                 <|im_start|>system\n{s}<|im_end|>\n
 *                 <|im_start|>user\n{u}<|im_end|>\n
 *                 <|im_start|>assistant\n{a}<|im_end|>\n ...
 *                 generation prompt: <|im_start|>assistant\n
 *               A default system text found in the template (Qwen2.5's
 *               "You are Qwen, created by Alibaba Cloud. ...") is inserted
 *               when the conversation has no system message.
 *   qwen3       chatml, plus: enable_thinking = false appends
 *               "<think>\n\n</think>\n\n" to the generation prompt; assistant
 *               turns before the last user message lose their
 *               "<think>...</think>" part; assistant turns after it are
 *               normalised to "<think>\n{r}\n</think>\n\n{a}". Also used for
 *               ChatML templates that handle "</think>" without the switch
 *               (Qwen3-*-Thinking-2507, QwQ). A template whose generation
 *               prompt is '<|im_start|>assistant\n<think>\n' (thinking-only
 *               models) gets "<think>\n" after the generation prompt.
 *   llama3      {bos}<|start_header_id|>{role}<|end_header_id|>\n\n{trim(text)}<|eot_id|>
 *               ... generation prompt: <|start_header_id|>assistant<|end_header_id|>\n\n
 *               Llama 3.1+ templates (they mention "Cutting Knowledge Date")
 *               always open with a system block:
 *                 <|start_header_id|>system<|end_header_id|>\n\n
 *                 Cutting Knowledge Date: December 2023\nToday Date: {date}\n\n{trim(s)}<|eot_id|>
 *               with {date} = opts.date or the template's fallback
 *               "26 Jul 2024" (3.2+ would use today's date: pass it in opts
 *               if wanted; the default keeps prompts reproducible).
 *   mistral     (v1: Mixtral-8x7B-Instruct, Mistral-7B-Instruct v0.1/v0.2)
 *               {bos} [INST] {s}\n\n{u1} [/INST] {a1}{eos} [INST] {u2} [/INST]
 *               (the prompt itself ends the user turn; no extra generation
 *               prompt). A system message is allowed only first.
 *   mistral-v3  (Mixtral-8x22B-Instruct, Mistral-7B-Instruct v0.3)
 *               {bos}[INST] {s}\n\n{u1}[/INST] {trim(a1)}{eos}[INST] {u2}[/INST]
 *               Deviation: the official template puts the system text before
 *               the *last* user message; we keep it on the first (as
 *               llama.cpp's built-in renderer does) so a chat's earlier
 *               tokens never change and the KV cache stays reusable.
 *   tulu        OLMoE-Instruct, Tulu 2/3, OLMo-2-Instruct:
 *                 {bos}<|system|>\n{s}\n<|user|>\n{u}\n<|assistant|>\n{a}{eos}\n ...
 *                 (the final assistant turn has no "\n" after eos)
 *                 generation prompt: <|assistant|>\n
 *   harmony     gpt-oss (OpenAI's harmony response format; template mentions
 *               "<|channel|>"), messages without separators between them:
 *                 <|start|>system<|message|>You are ChatGPT, a large language model
 *                 trained by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: {date}
 *                 \n\nReasoning: {effort}\n\n# Valid channels: analysis, commentary,
 *                 final. Channel must be included for every message.<|end|>
 *                 [<|start|>developer<|message|># Instructions\n\n{s}<|end|>]
 *                 <|start|>user<|message|>{u}<|end|>
 *                 <|start|>assistant<|channel|>final<|message|>{a}<|end|> ...
 *                 generation prompt: <|start|>assistant
 *               (with tools: chat_harmony.c). The reply is a sequence of messages
 *               on channels (analysis, commentary, final), ended by <|return|>
 *               or <|call|>; <|end|> ends one message, not the reply
 *               (harmony_stream.h splits it).
 *   qwen3.5     Qwen3.5 / 3.6 (template mentions "<function="; chat_qwen35.c):
 *               ChatML with every content trimmed; assistant turns after the
 *               last user query always carry "<think>\n{r}\n</think>\n\n";
 *               generation prompt "<|im_start|>assistant\n<think>\n", or
 *               with enable_thinking = false "...<think>\n\n</think>\n\n";
 *               tools declared first (system text after them), calls as
 *               <tool_call>\n<function=NAME>\n<parameter=K>\nV\n</parameter>\n
 *               </function>\n</tool_call>.
 *   deepseek-v3, deepseek-v3.1, deepseek-r1 (template has "<｜User｜>";
 *               chat_deepseek.c): {bos}{s}<｜User｜>{u}<｜Assistant｜>{a}<｜end▁of▁sentence｜>
 *               ...; v3.1 (template has "<think></think>") puts
 *               "<think></think>" before answers to a user turn and ends the
 *               generation prompt with "<think>" (thinking) or
 *               "<think></think>"; r1 (no "<think></think>", has "<think>\n")
 *               ends it with "<think>\n" (or "<think>\n</think>" without
 *               thinking). Earlier answers lose their reasoning.
 *               Deviation: thinking follows enable_thinking (default on),
 *               where V3.1's template defaults to off.
 *   kimi-k2, kimi-k2-thinking (template has "<|im_middle|>"; chat_kimi.c)
 *               <|im_system|>system<|im_middle|>{s}<|im_end|><|im_user|>user
 *               <|im_middle|>{u}<|im_end|><|im_assistant|>assistant<|im_middle|>
 *               {a}<|im_end|> ..., generation prompt <|im_assistant|>assistant
 *               <|im_middle|>; the thinking template (has "<think>") writes
 *               "<think></think>" (or the reasoning, after the last plain
 *               answer) before each answer.
 *   glm4, glm4.7 (template starts "[gMASK]<sop>"; chat_glm.c; glm4.7 when it
 *               mentions "clear_thinking"): [gMASK]<sop><|system|>\n{s}
 *               <|user|>\n{u}<|assistant|>\n<think></think>\n{a} ...
 *               (4.7: no "\n"s, "</think>" for the empty block, generation
 *               prompt "<|assistant|><think>" or "<|assistant|></think>").
 *               No end marker: the turn ends with the next header, so the
 *               turn end is "" and the stops are "<|user|>",
 *               "<|observation|>", "<|endoftext|>".
 *   gemma4      Gemma 4 (template has "<|turn>"; chat_gemma4.c, no tools):
 *                 {bos}<|turn>system\n[<|think|>\n]{s}<turn|>\n
 *                 <|turn>user\n{u}<turn|>\n<|turn>model\n{a}<turn|>\n ...
 *               generation prompt <|turn>model\n, + <|channel>thought\n
 *               <channel|> without thinking; stop "<turn|>".
 *   plain       fallback for templates we do not recognise:
 *                 System: {s}\nUser: {u}\nAssistant: {a}\n ... Assistant:
 *
 * {bos} is written only by families whose template starts with bos_token
 * (llama3, mistral, mistral-v3, tulu) and only if the caller passes its text
 * (pass it when the tokenizer does not add BOS by itself, NULL when it does).
 *
 * Multi-turn chat with a kept KV cache: after the model's reply the cache
 * holds render(history, gen) + the reply's tokens. sl_chat_render_continue
 * renders what must follow: the end of the assistant turn
 * (sl_chat_turn_end) + the new messages + the generation prompt, so that
 *   render(history + [reply, user], gen)
 *     == render(history, gen) + reply_text + render_continue([user], gen)
 * where reply_text is what the model generated (for mistral and plain that
 * includes the leading space the template puts before the reply). For qwen3
 * the identity is only approximate: the full template drops earlier turns'
 * thinking, while the cache keeps it (as llama.cpp's own chat loop does). */
#ifndef SL_CHAT_CHAT_H
#define SL_CHAT_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include "util/status.h" /* and sluice.h: sl_chat_family, sl_chat_turn, sl_chat_tool_call */


/* One message; role is "system", "user" or "assistant". Both strings are
 * borrowed for the duration of the call. */
typedef struct sl_chat_msg {
    const char *role;
    const char *content;
} sl_chat_msg;

typedef struct sl_chat_opts {
    const char *name;     /* override (--chat-template): one of the family
                             names above; NULL = detect from the template */
    const char *bos_text; /* BOS token text, see above; NULL = none */
    const char *eos_text; /* EOS text written after assistant turns by
                             mistral and tulu; NULL = "</s>" for mistral,
                             "<|endoftext|>" for tulu */
    bool enable_thinking; /* qwen3 switch; default true */
    const char *date;     /* llama3 "Today Date" text; NULL = "26 Jul 2024";
                             harmony "Current date" (YYYY-MM-DD); NULL = today (UTC) */
    const char *reasoning_effort; /* harmony "Reasoning:" low, medium or high; NULL = medium */
} sl_chat_opts;

typedef struct sl_chat_template {
    sl_chat_family family;
    char *default_system; /* owned; or NULL */
    char *bos_text;       /* owned; "" when none */
    char *eos_text;       /* owned */
    char *turn_end;       /* owned; see sl_chat_turn_end */
    char *date;           /* owned; llama3 dated system block, or NULL */
    bool enable_thinking;
    bool think_prefix;    /* generation prompt continues with "<think>\n" */
    const char *stops[4]; /* NULL-terminated; point into static strings or eos_text */
    char *warning;        /* owned; see sl_chat_template_warning, or NULL */
    char effort[8];       /* harmony reasoning effort */
} sl_chat_template;


/* The defaults: detect, no BOS text, family EOS, thinking on. */
sl_chat_opts sl_chat_opts_default(void);

/* Family of a tokenizer.chat_template string (NULL or empty -> plain):
 * "<｜User｜>" -> deepseek-v3.1 with "<think></think>", deepseek-r1 with
 * "<think>\n", else deepseek-v3; "<|im_middle|>" and "<|im_assistant|>" ->
 * kimi-k2-thinking with "<think>", else kimi-k2; "[gMASK]<sop>" and
 * "<|assistant|>" -> glm4.7 with "clear_thinking", else glm4; "<|turn>" and
 * "<turn|>" -> gemma4;
 * "<|im_start|>" -> qwen3.5 with "<function=", else chatml, or qwen3 if it
 * also mentions "enable_thinking" or "</think>";
 * "<|start_header_id|>" -> llama3; "[INST]" -> mistral-v3 if it has
 * "[AVAILABLE_TOOLS]" and no " [INST]", else mistral; "<|user|>" and
 * "<|assistant|>" -> tulu; anything else -> plain. */
sl_chat_family sl_chat_detect(const char *jinja);


/* Family for a name; SL_EINVAL listing the valid names if unknown. */
int sl_chat_family_from_name(const char *name, sl_chat_family *out, sl_err *err);

/* Builds a template from the model's chat_template string (may be NULL) and
 * opts (may be NULL for the defaults). Any string is accepted and handled in
 * time linear in its length; one no family matches gives the plain format
 * and a warning (sl_chat_template_warning). SL_EINVAL for an unknown
 * override name, SL_ENOMEM. Free with sl_chat_template_free. */
int sl_chat_template_init(sl_chat_template *t, const char *jinja, const sl_chat_opts *opts,
                          sl_err *err);

/* NULL, or a sentence for the front-end to show when the model's template
 * (a non-empty chat_template, no override name) matched no family and the
 * plain format is used: it gives the template's size and its first 40
 * bytes, escaped (util/escape.h), so it is safe to print. Owned by t. */
const char *sl_chat_template_warning(const sl_chat_template *t);

/* Frees the owned strings; safe on a zeroed template. */
void sl_chat_template_free(sl_chat_template *t);

/* Renders a whole conversation; with add_generation_prompt the text ends
 * where the assistant's reply begins. *out receives a malloc'd NUL-terminated
 * string the caller frees with free(). SL_EINVAL for an unknown role, a NULL
 * content, or a system message where the family does not allow one (mistral:
 * only first); SL_ENOMEM. */
int sl_chat_render(const sl_chat_template *t, const sl_chat_msg *msgs, size_t n,
                   bool add_generation_prompt, char **out, sl_err *err);

/* Renders only what follows an assistant reply already in the KV cache: the
 * turn end, then msgs (no BOS, no default system), then the generation
 * prompt. Same ownership and errors as sl_chat_render (a system message is
 * refused by mistral families here too). */
int sl_chat_render_continue(const sl_chat_template *t, const sl_chat_msg *msgs, size_t n,
                            bool add_generation_prompt, char **out, sl_err *err);

/* Renders turns (see sl_chat_turn) as sl_chat_render does (cont: as
 * sl_chat_render_continue), with the function tools of tools_json (NULL: none;
 * else the JSON text of an OpenAI "tools" array: {"type": "function",
 * "function": {"name", "description", "parameters"}} objects) declared the
 * way the family declares them: chatml/qwen3 as Qwen3's <tools> system
 * block, harmony as its TypeScript-like "functions" namespace in the
 * developer message. Assistant tool calls and tool results are written in
 * the family's form (chatml/qwen3: <tool_call> JSON, tool results as
 * <tool_response> in a user turn; harmony: commentary messages to
 * functions.NAME). SL_EINVAL for tools or tool messages in a family that has
 * no form for them, or for a tools text that is not such an array; SL_ENOMEM. */
int sl_chat_render_turns(const sl_chat_template *t, const sl_chat_turn *turns, size_t n,
                         const char *tools_json, bool add_generation_prompt, bool cont,
                         char **out, sl_err *err);

/* Whether the family can declare tools and render tool calls. */
bool sl_chat_has_tools(const sl_chat_template *t);

/* Text that closes an assistant turn in this family: "<|im_end|>\n",
 * "<|eot_id|>", the EOS text (mistral), EOS + "\n" (tulu), "\n" (plain),
 * "<|end|>" (harmony), "<｜end▁of▁sentence｜>" (deepseek), "<|im_end|>"
 * (kimi), "" (glm: the next header ends the turn).
 * It is the start of every sl_chat_render_continue output; a caller whose
 * cache already holds part of it skips that many leading bytes. */
const char *sl_chat_turn_end(const sl_chat_template *t);

/* NULL-terminated list of strings whose generation ends the assistant's
 * turn (for matching generated token text), first the family's own marker:
 * chatml/qwen3/qwen3.5 "<|im_end|>" "<|endoftext|>"; deepseek
 * "<｜end▁of▁sentence｜>"; kimi "<|im_end|>"; glm "<|user|>" "<|observation|>"
 * "<|endoftext|>"; llama3 "<|eot_id|>"
 * "<|end_of_text|>" "<|eom_id|>"; mistral EOS; tulu EOS "<|user|>"; plain
 * "\nUser:". Valid while t lives. */
const char *const *sl_chat_stop_strings(const sl_chat_template *t);

#endif
