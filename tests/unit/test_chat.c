/* test_chat.c - chat template detection and rendering (src/chat/).
 *
 * Every expected prompt below is written out by hand from the family's
 * published template (Qwen2.5/Qwen3 tokenizer_config chat_template,
 * Meta's Llama 3 format, Mistral's v1/v3 templates, the Tulu template used
 * by OLMoE-Instruct), for the same conversation: system "You are terse.",
 * user "Hi!", assistant "Hello.", user "Name a color.". */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat/chat.h"
#include "test.h"

static const sl_chat_msg conv[4] = {
    {"system", "You are terse."},
    {"user", "Hi!"},
    {"assistant", "Hello."},
    {"user", "Name a color."},
};

/* Renders msgs with t and compares with want (printing both on mismatch). */
static void expect_render(const sl_chat_template *t, const sl_chat_msg *m, size_t n, bool gen,
                          const char *want)
{
    char *got = NULL;
    sl_err err = {0};
    int rc = sl_chat_render(t, m, n, gen, &got, &err);
    CHECK_MSG(rc == SL_OK, "render failed: %s", err.msg);
    if (rc) return;
    CHECK_MSG(strcmp(got, want) == 0, "\n  got:  \"%s\"\n  want: \"%s\"", got, want);
    free(got);
}

static void expect_continue(const sl_chat_template *t, const sl_chat_msg *m, size_t n,
                            const char *want)
{
    char *got = NULL;
    sl_err err = {0};
    int rc = sl_chat_render_continue(t, m, n, true, &got, &err);
    CHECK_MSG(rc == SL_OK, "continue failed: %s", err.msg);
    if (rc) return;
    CHECK_MSG(strcmp(got, want) == 0, "\n  got:  \"%s\"\n  want: \"%s\"", got, want);
    free(got);
}

/* The KV-cache identity of chat.h:
 *   render(conv, gen) == render(conv[0..2), gen) + reply + continue([u2], gen)
 * where reply is the text the model generates for "Hello." in this family. */
static void expect_incremental_identity(const sl_chat_template *t, const char *reply)
{
    char *full = NULL, *prefix = NULL, *cont = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_render(t, conv, 4, true, &full, &err), SL_OK);
    CHECK_EQ_INT(sl_chat_render(t, conv, 2, true, &prefix, &err), SL_OK);
    CHECK_EQ_INT(sl_chat_render_continue(t, conv + 3, 1, true, &cont, &err), SL_OK);
    if (full && prefix && cont) {
        size_t n = strlen(prefix) + strlen(reply) + strlen(cont) + 1;
        char *joined = malloc(n);
        strcpy(joined, prefix);
        strcat(joined, reply);
        strcat(joined, cont);
        CHECK_MSG(strcmp(joined, full) == 0, "\n  joined: \"%s\"\n  full:   \"%s\"", joined,
                  full);
        free(joined);
        /* and the continuation starts with the turn end */
        CHECK(strncmp(cont, sl_chat_turn_end(t), strlen(sl_chat_turn_end(t))) == 0);
    }
    free(full);
    free(prefix);
    free(cont);
}

static void init_named(sl_chat_template *t, const char *name, const char *bos)
{
    sl_chat_opts o = sl_chat_opts_default();
    o.name = name;
    o.bos_text = bos;
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_template_init(t, NULL, &o, &err), SL_OK);
}

TEST(chatml_two_turns)
{
    sl_chat_template t;
    init_named(&t, "chatml", "<s>"); /* BOS text is ignored: ChatML has none */
    expect_render(&t, conv, 4, true,
                  "<|im_start|>system\nYou are terse.<|im_end|>\n"
                  "<|im_start|>user\nHi!<|im_end|>\n"
                  "<|im_start|>assistant\nHello.<|im_end|>\n"
                  "<|im_start|>user\nName a color.<|im_end|>\n"
                  "<|im_start|>assistant\n");
    expect_render(&t, conv, 4, false,
                  "<|im_start|>system\nYou are terse.<|im_end|>\n"
                  "<|im_start|>user\nHi!<|im_end|>\n"
                  "<|im_start|>assistant\nHello.<|im_end|>\n"
                  "<|im_start|>user\nName a color.<|im_end|>\n");
    expect_continue(&t, conv + 3, 1,
                    "<|im_end|>\n<|im_start|>user\nName a color.<|im_end|>\n"
                    "<|im_start|>assistant\n");
    expect_incremental_identity(&t, "Hello.");
    const char *const *stops = sl_chat_stop_strings(&t);
    CHECK(!strcmp(stops[0], "<|im_end|>") && !strcmp(stops[1], "<|endoftext|>") && !stops[2]);
    sl_chat_template_free(&t);
}

/* The part of Qwen2.5's template that inserts the default system message
 * (as stored in GGUF: Jinja source, "\n" inside literals is backslash-n). */
static const char *qwen25_tmpl =
    "{%- if tools %}\n    {{- '<|im_start|>system\\n' }}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- messages[0]['content'] }}\n"
    "{%- else %}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "    {%- else %}\n"
    "        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a "
    "helpful assistant.<|im_end|>\\n' }}\n"
    "    {%- endif %}\n{%- endif %}\n"
    "{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n{%- endif %}\n";

TEST(qwen25_default_system_is_inserted_only_without_one)
{
    sl_chat_template t;
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_template_init(&t, qwen25_tmpl, NULL, &err), SL_OK);
    CHECK_EQ_INT(t.family, SL_CHAT_CHATML);
    CHECK(t.default_system &&
          !strcmp(t.default_system,
                  "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."));
    expect_render(&t, conv + 1, 1, true,
                  "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a "
                  "helpful assistant.<|im_end|>\n"
                  "<|im_start|>user\nHi!<|im_end|>\n"
                  "<|im_start|>assistant\n");
    expect_render(&t, conv, 2, true, /* has its own system: no default */
                  "<|im_start|>system\nYou are terse.<|im_end|>\n"
                  "<|im_start|>user\nHi!<|im_end|>\n"
                  "<|im_start|>assistant\n");
    /* a continuation never re-inserts it */
    expect_continue(&t, conv + 3, 1,
                    "<|im_end|>\n<|im_start|>user\nName a color.<|im_end|>\n"
                    "<|im_start|>assistant\n");
    sl_chat_template_free(&t);
}

TEST(qwen3_thinking_switch_and_history)
{
    const char *q3 = "{%- if enable_thinking is defined and enable_thinking is false %}"
                     "{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}<|im_start|>";
    sl_chat_template t;
    sl_chat_opts o = sl_chat_opts_default();
    o.enable_thinking = false;
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_template_init(&t, q3, &o, &err), SL_OK);
    CHECK_EQ_INT(t.family, SL_CHAT_QWEN3);
    CHECK(t.default_system == NULL);
    /* the earlier reply carried its reasoning; Qwen3's template drops it
     * for turns before the last user message */
    sl_chat_msg m[4] = {conv[0], conv[1],
                        {"assistant", "<think>\nThe user greets me.\n</think>\n\nHello."},
                        conv[3]};
    expect_render(&t, m, 4, true,
                  "<|im_start|>system\nYou are terse.<|im_end|>\n"
                  "<|im_start|>user\nHi!<|im_end|>\n"
                  "<|im_start|>assistant\nHello.<|im_end|>\n"
                  "<|im_start|>user\nName a color.<|im_end|>\n"
                  "<|im_start|>assistant\n<think>\n\n</think>\n\n");
    expect_continue(&t, conv + 3, 1,
                    "<|im_end|>\n<|im_start|>user\nName a color.<|im_end|>\n"
                    "<|im_start|>assistant\n<think>\n\n</think>\n\n");
    /* a final assistant message (after the last user) keeps a normalised
     * think block: '<think>\n' + r.strip('\n') + '\n</think>\n\n' + c.lstrip('\n');
     * with no reasoning and being last, the block is empty */
    sl_chat_msg tail[2] = {{"user", "Hi!"}, {"assistant", "\n\nHello."}};
    expect_render(&t, tail, 2, false,
                  "<|im_start|>user\nHi!<|im_end|>\n"
                  "<|im_start|>assistant\n<think>\n\n</think>\n\nHello.<|im_end|>\n");
    sl_chat_msg tail2[2] = {{"user", "Hi!"}, {"assistant", "<think>\n\nhmm\n\n</think>\nHello."}};
    expect_render(&t, tail2, 2, false,
                  "<|im_start|>user\nHi!<|im_end|>\n"
                  "<|im_start|>assistant\n<think>\nhmm\n</think>\n\nHello.<|im_end|>\n");
    sl_chat_template_free(&t);

    /* thinking on (the default): no empty block in the generation prompt,
     * and the cache identity holds */
    CHECK_EQ_INT(sl_chat_template_init(&t, q3, NULL, &err), SL_OK);
    expect_render(&t, conv + 1, 1, true,
                  "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n");
    expect_incremental_identity(&t, "Hello.");
    sl_chat_template_free(&t);
}

TEST(llama3_two_turns)
{
    sl_chat_template t;
    init_named(&t, "llama3", "<|begin_of_text|>");
    expect_render(&t, conv, 4, true,
                  "<|begin_of_text|>"
                  "<|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
                  "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
                  "<|start_header_id|>user<|end_header_id|>\n\nName a color.<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\n");
    expect_continue(&t, conv + 3, 1,
                    "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nName a color."
                    "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
    expect_incremental_identity(&t, "Hello.");
    /* content is trimmed (| trim in the template) */
    sl_chat_msg padded[1] = {{"user", "  \n Hi! \t\n"}};
    expect_render(&t, padded, 1, false,
                  "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>");
    const char *const *stops = sl_chat_stop_strings(&t);
    CHECK(!strcmp(stops[0], "<|eot_id|>") && !strcmp(stops[1], "<|end_of_text|>") &&
          !strcmp(stops[2], "<|eom_id|>") && !stops[3]);
    sl_chat_template_free(&t);

    /* without BOS text (the tokenizer adds BOS itself) nothing is written */
    init_named(&t, "llama3", NULL);
    expect_render(&t, conv + 1, 1, false,
                  "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>");
    sl_chat_template_free(&t);
}

TEST(mistral_v1_two_turns)
{
    /* Mixtral-8x7B-Instruct-v0.1's template: bos_token, then per user
     * ' [INST] ' + (system + '\n\n' on the first) + content + ' [/INST]',
     * per assistant ' ' + content + eos_token. */
    sl_chat_template t;
    init_named(&t, "mistral", "<s>");
    expect_render(&t, conv, 4, true,
                  "<s> [INST] You are terse.\n\nHi! [/INST] Hello.</s> [INST] Name a color. [/INST]");
    expect_continue(&t, conv + 3, 1, "</s> [INST] Name a color. [/INST]");
    expect_incremental_identity(&t, " Hello.");
    CHECK(!strcmp(sl_chat_stop_strings(&t)[0], "</s>"));
    /* a system message anywhere but first is refused */
    sl_chat_msg bad[3] = {{"user", "Hi!"}, {"system", "late"}, {"user", "x"}};
    char *out = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_render(&t, bad, 3, true, &out, &err), SL_EINVAL);
    CHECK(out == NULL);
    CHECK_STR_CONTAINS(err.msg, "only as the first message");
    CHECK_EQ_INT(sl_chat_render_continue(&t, conv, 1, true, &out, &err), SL_EINVAL);
    sl_chat_template_free(&t);
}

TEST(mistral_v3_two_turns)
{
    /* Mistral-7B-Instruct-v0.3 / Mixtral-8x22B: "[INST] " + content +
     * "[/INST]", assistant " " + content|trim + eos; system on the first
     * user message (see the deviation noted in chat.h). */
    sl_chat_template t;
    init_named(&t, "mistral-v3", "<s>");
    expect_render(&t, conv, 4, true,
                  "<s>[INST] You are terse.\n\nHi![/INST] Hello.</s>[INST] Name a color.[/INST]");
    expect_continue(&t, conv + 3, 1, "</s>[INST] Name a color.[/INST]");
    expect_incremental_identity(&t, " Hello.");
    sl_chat_template_free(&t);
}

TEST(tulu_two_turns)
{
    /* OLMoE-1B-7B-0924-Instruct / Tulu: '<|system|>\n' + c + '\n',
     * '<|user|>\n' + c + '\n', '<|assistant|>\n' + c + eos (+ '\n' unless
     * last), generation '<|assistant|>\n'. EOS defaults to <|endoftext|>. */
    sl_chat_template t;
    init_named(&t, "tulu", NULL);
    expect_render(&t, conv, 4, true,
                  "<|system|>\nYou are terse.\n<|user|>\nHi!\n"
                  "<|assistant|>\nHello.<|endoftext|>\n<|user|>\nName a color.\n"
                  "<|assistant|>\n");
    /* the final assistant turn has no newline after eos */
    expect_render(&t, conv, 3, false,
                  "<|system|>\nYou are terse.\n<|user|>\nHi!\n"
                  "<|assistant|>\nHello.<|endoftext|>");
    expect_continue(&t, conv + 3, 1,
                    "<|endoftext|>\n<|user|>\nName a color.\n<|assistant|>\n");
    expect_incremental_identity(&t, "Hello.");
    sl_chat_template_free(&t);

    sl_chat_opts o = sl_chat_opts_default();
    o.name = "tulu";
    o.bos_text = "<|endoftext|>";
    o.eos_text = "</s>";
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_template_init(&t, NULL, &o, &err), SL_OK);
    expect_render(&t, conv + 1, 2, false, "<|endoftext|><|user|>\nHi!\n<|assistant|>\nHello.</s>");
    CHECK(!strcmp(sl_chat_turn_end(&t), "</s>\n"));
    sl_chat_template_free(&t);
}

TEST(plain_fallback_two_turns)
{
    sl_chat_template t;
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_template_init(&t, "{{ something unknown }}", NULL, &err), SL_OK);
    CHECK_EQ_INT(t.family, SL_CHAT_PLAIN);
    expect_render(&t, conv, 4, true,
                  "System: You are terse.\nUser: Hi!\nAssistant: Hello.\n"
                  "User: Name a color.\nAssistant:");
    expect_continue(&t, conv + 3, 1, "\nUser: Name a color.\nAssistant:");
    expect_incremental_identity(&t, " Hello.");
    CHECK(!strcmp(sl_chat_stop_strings(&t)[0], "\nUser:"));
    sl_chat_template_free(&t);
}

TEST(detection_from_template_text)
{
    CHECK_EQ_INT(sl_chat_detect(NULL), SL_CHAT_PLAIN);
    CHECK_EQ_INT(sl_chat_detect(""), SL_CHAT_PLAIN);
    CHECK_EQ_INT(sl_chat_detect("{% for message in messages %}{{'<|im_start|>' + message['role']"),
                 SL_CHAT_CHATML);
    CHECK_EQ_INT(sl_chat_detect("<|im_start|>{%- if enable_thinking is defined %}"), SL_CHAT_QWEN3);
    CHECK_EQ_INT(sl_chat_detect("{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>' }}"),
                 SL_CHAT_LLAMA3);
    CHECK_EQ_INT(sl_chat_detect("{{- ' [INST] ' + system_message + '\\n\\n' }}"), SL_CHAT_MISTRAL);
    CHECK_EQ_INT(sl_chat_detect("{{ '[INST] ' + message['content'] + ' [/INST]' }}"),
                 SL_CHAT_MISTRAL);
    CHECK_EQ_INT(sl_chat_detect("{{- \"[AVAILABLE_TOOLS] [\" }}{{- \"[INST] \" + message[\"content\"] + \"[/INST]\" }}"),
                 SL_CHAT_MISTRAL_V3);
    CHECK_EQ_INT(sl_chat_detect("{{ '<|user|>\\n' + message['content'] }}{{ '<|assistant|>\\n' }}"),
                 SL_CHAT_TULU);
    CHECK_EQ_INT(sl_chat_detect("{{ 'User: ' + content }}"), SL_CHAT_PLAIN);
}

TEST(name_override_and_errors)
{
    sl_chat_template t;
    sl_chat_opts o = sl_chat_opts_default();
    sl_err err = {0};
    o.name = "llama3"; /* overrides a ChatML template */
    CHECK_EQ_INT(sl_chat_template_init(&t, "<|im_start|>", &o, &err), SL_OK);
    CHECK_EQ_INT(t.family, SL_CHAT_LLAMA3);
    CHECK(!strcmp(sl_chat_family_name(t.family), "llama3"));
    sl_chat_template_free(&t);
    const char *names[] = {"chatml", "qwen3", "llama3", "mistral", "mistral-v3", "tulu", "plain"};
    for (int i = 0; i < 7; i++) {
        sl_chat_family f;
        CHECK_EQ_INT(sl_chat_family_from_name(names[i], &f, &err), SL_OK);
        CHECK(!strcmp(sl_chat_family_name(f), names[i]));
    }
    o.name = "vicuna";
    CHECK_EQ_INT(sl_chat_template_init(&t, NULL, &o, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "unknown chat template 'vicuna'");
    CHECK_STR_CONTAINS(err.msg, "qwen3");

    init_named(&t, "chatml", NULL);
    sl_chat_msg bad[1] = {{"robot", "x"}};
    char *out = NULL;
    CHECK_EQ_INT(sl_chat_render(&t, bad, 1, true, &out, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "message 0 has role 'robot'");
    sl_chat_msg nul[1] = {{"user", NULL}};
    CHECK_EQ_INT(sl_chat_render(&t, nul, 1, true, &out, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "no content");
    /* zero messages: just the generation prompt */
    CHECK_EQ_INT(sl_chat_render(&t, NULL, 0, true, &out, &err), SL_OK);
    CHECK(out && !strcmp(out, "<|im_start|>assistant\n"));
    free(out);
    /* many messages (more than the renderer's small stack array) */
    sl_chat_msg many[40];
    for (int i = 0; i < 40; i++) many[i] = (sl_chat_msg){i % 2 ? "assistant" : "user", "x"};
    CHECK_EQ_INT(sl_chat_render(&t, many, 40, false, &out, &err), SL_OK);
    CHECK(out && strlen(out) == 20 * strlen("<|im_start|>user\nx<|im_end|>\n") +
                                    20 * strlen("<|im_start|>assistant\nx<|im_end|>\n"));
    free(out);
    sl_chat_template_free(&t);
}

TEST(llama31_dated_system_block)
{
    /* Llama 3.1's template always writes a system block that starts with
     * "Cutting Knowledge Date: December 2023\nToday Date: " + date_string
     * + "\n\n" (date_string defaults to "26 Jul 2024"), then the trimmed
     * system message (or nothing), then <|eot_id|>. */
    const char *l31 = "{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}"
                      "{{- \"Cutting Knowledge Date: December 2023\\n\" }}";
    sl_chat_template t;
    sl_chat_opts o = sl_chat_opts_default();
    o.bos_text = "<|begin_of_text|>";
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_template_init(&t, l31, &o, &err), SL_OK);
    CHECK_EQ_INT(t.family, SL_CHAT_LLAMA3);
    expect_render(&t, conv, 4, true,
                  "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
                  "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
                  "You are terse.<|eot_id|>"
                  "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
                  "<|start_header_id|>user<|end_header_id|>\n\nName a color.<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\n");
    expect_render(&t, conv + 1, 1, true,
                  "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
                  "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
                  "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\n");
    expect_continue(&t, conv + 3, 1,
                    "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nName a color."
                    "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
    expect_incremental_identity(&t, "Hello.");
    sl_chat_template_free(&t);

    o.date = "05 Mar 2026";
    CHECK_EQ_INT(sl_chat_template_init(&t, l31, &o, &err), SL_OK);
    char *out = NULL;
    CHECK_EQ_INT(sl_chat_render(&t, conv, 1, false, &out, &err), SL_OK);
    CHECK_STR_CONTAINS(out, "Today Date: 05 Mar 2026\n\nYou are terse.<|eot_id|>");
    free(out);
    sl_chat_template_free(&t);
}

TEST(thinking_only_chatml_opens_the_think_block)
{
    /* Qwen3-*-Thinking-2507 / QwQ: the generation prompt is
     * '<|im_start|>assistant\n<think>\n' and history drops "</think>"
     * reasoning like Qwen3 (detected by "</think>"). */
    const char *tt = "{%- set content = message.content.split('</think>')[-1] %}"
                     "{%- if add_generation_prompt %}\n"
                     "    {{- '<|im_start|>assistant\\n<think>\\n' }}\n{%- endif %}";
    sl_chat_template t;
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_template_init(&t, tt, NULL, &err), SL_OK);
    CHECK_EQ_INT(t.family, SL_CHAT_QWEN3);
    CHECK(t.think_prefix);
    sl_chat_msg m[4] = {conv[0], conv[1], {"assistant", "step one\n</think>\n\nHello."},
                        conv[3]};
    expect_render(&t, m, 4, true,
                  "<|im_start|>system\nYou are terse.<|im_end|>\n"
                  "<|im_start|>user\nHi!<|im_end|>\n"
                  "<|im_start|>assistant\nHello.<|im_end|>\n"
                  "<|im_start|>user\nName a color.<|im_end|>\n"
                  "<|im_start|>assistant\n<think>\n");
    expect_continue(&t, conv + 3, 1,
                    "<|im_end|>\n<|im_start|>user\nName a color.<|im_end|>\n"
                    "<|im_start|>assistant\n<think>\n");
    sl_chat_template_free(&t);
}

/* Builds a template from a hostile jinja string; returns the family. */
static sl_chat_family init_from(sl_chat_template *t, const char *jinja)
{
    sl_err err = {0};
    int rc = sl_chat_template_init(t, jinja, NULL, &err);
    CHECK_MSG(rc == SL_OK, "init: %s", err.msg);
    return rc ? (sl_chat_family)-1 : t->family;
}

TEST(unknown_template_falls_back_to_plain_with_an_escaped_warning)
{
    sl_chat_template t;
    /* 59 bytes (23 + 5 + 15 + 4 + 12) with ESC sequences: the warning gives
     * the size and the first 40 bytes escaped ("{% for m in messages %}" is
     * 23 bytes, ESC [ 3 1 m 5 more, shown as "\x1b[31m", then 12 bytes of
     * "{{ m.content }}"), then "..." */
    const char *j = "{% for m in messages %}\x1b[31m{{ m.content }}\x1b[0m{% endfor %}";
    CHECK_EQ_INT(init_from(&t, j), SL_CHAT_PLAIN);
    const char *w = sl_chat_template_warning(&t);
    CHECK(w && strchr(w, 0x1b) == NULL);
    CHECK_STR_CONTAINS(w, "(tokenizer.chat_template, 59 bytes: '{% for m in messages %}\\x1b[31m"
                          "{{ m.content...')");
    CHECK_STR_CONTAINS(w, "using the plain format");
    /* the fallback renders as plain does */
    sl_chat_msg m[1] = {{"user", "Hi"}};
    char *out = NULL;
    sl_err err = {0};
    CHECK_EQ_INT(sl_chat_render(&t, m, 1, true, &out, &err), SL_OK);
    CHECK(out && !strcmp(out, "User: Hi\nAssistant:"));
    free(out);
    sl_chat_template_free(&t);

    /* C1 control and invalid UTF-8 in the head of the template */
    CHECK_EQ_INT(init_from(&t, "\xc2\x9b" "2J\xff tail"), SL_CHAT_PLAIN);
    CHECK_STR_CONTAINS(sl_chat_template_warning(&t), "10 bytes: '\\xc2\\x9b2J\\xff tail')");
    sl_chat_template_free(&t);

    /* a known family, no template, an empty one, or an override: no warning */
    CHECK_EQ_INT(init_from(&t, "<|im_start|>{{ x }}"), SL_CHAT_CHATML);
    CHECK(sl_chat_template_warning(&t) == NULL);
    sl_chat_template_free(&t);
    CHECK_EQ_INT(init_from(&t, NULL), SL_CHAT_PLAIN);
    CHECK(sl_chat_template_warning(&t) == NULL);
    sl_chat_template_free(&t);
    CHECK_EQ_INT(init_from(&t, ""), SL_CHAT_PLAIN);
    CHECK(sl_chat_template_warning(&t) == NULL);
    sl_chat_template_free(&t);
    sl_chat_opts o = sl_chat_opts_default();
    o.name = "plain";
    CHECK_EQ_INT(sl_chat_template_init(&t, "whatever", &o, &err), SL_OK);
    CHECK(sl_chat_template_warning(&t) == NULL);
    sl_chat_template_free(&t);
}

TEST(template_with_a_nul_is_read_up_to_it)
{
    /* a GGUF string may hold a NUL; C code sees the part before it: here
     * "abc", which matches no family, so the markers after it are unseen */
    static const char j[] = "abc\0<|im_start|>system\nHidden<|im_end|>";
    sl_chat_template t;
    CHECK_EQ_INT(init_from(&t, j), SL_CHAT_PLAIN);
    CHECK_STR_CONTAINS(sl_chat_template_warning(&t), "3 bytes: 'abc'");
    CHECK(t.default_system == NULL);
    sl_chat_template_free(&t);
}

/* A 16 MiB string made of `unit` repeated, then `tail`. */
static char *repeat(const char *unit, const char *tail)
{
    const size_t total = 16u << 20, ul = strlen(unit), tl = strlen(tail);
    char *s = malloc(total + tl + 1);
    if (!s) return NULL;
    size_t o = 0;
    while (o + ul <= total) memcpy(s + o, unit, ul), o += ul;
    memcpy(s + o, tail, tl + 1);
    return s;
}

TEST(huge_templates_are_handled_in_linear_time)
{
    /* 16 MiB of ChatML system heads: without an end marker, then with one
     * end marker at the very end but a brace in every head's text, then
     * with plain text: each must finish quickly (a quadratic search would
     * take hours) and find the default system text only in the last case,
     * where it is the last head's text "S" */
    clock_t t0 = clock();
    char *a = repeat("<|im_start|>system\\n", "");
    char *b = repeat("<|im_start|>system\\n{", "<|im_end|>");
    char *c = repeat("<|im_start|>system\\n{", "<|im_start|>system\\nS<|im_end|>");
    CHECK(a && b && c);
    if (!a || !b || !c) goto out;
    sl_chat_template t;
    CHECK_EQ_INT(init_from(&t, a), SL_CHAT_CHATML);
    CHECK(t.default_system == NULL);
    sl_chat_template_free(&t);
    CHECK_EQ_INT(init_from(&t, b), SL_CHAT_CHATML);
    CHECK(t.default_system == NULL);
    sl_chat_template_free(&t);
    CHECK_EQ_INT(init_from(&t, c), SL_CHAT_CHATML);
    CHECK(t.default_system && !strcmp(t.default_system, "S"));
    sl_chat_template_free(&t);
    /* 16 MiB that matches nothing: plain, the warning shows 40 bytes */
    free(a);
    a = repeat("{{ x }}", "");
    CHECK_EQ_INT(init_from(&t, a), SL_CHAT_PLAIN);
    CHECK(sl_chat_template_warning(&t) && strlen(sl_chat_template_warning(&t)) < 400);
    sl_chat_template_free(&t);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK_MSG(secs < 20.0, "took %.1f s", secs);
out:
    free(a);
    free(b);
    free(c);
}

int main(void)
{
    RUN(chatml_two_turns);
    RUN(qwen25_default_system_is_inserted_only_without_one);
    RUN(qwen3_thinking_switch_and_history);
    RUN(llama3_two_turns);
    RUN(llama31_dated_system_block);
    RUN(thinking_only_chatml_opens_the_think_block);
    RUN(mistral_v1_two_turns);
    RUN(mistral_v3_two_turns);
    RUN(tulu_two_turns);
    RUN(plain_fallback_two_turns);
    RUN(detection_from_template_text);
    RUN(name_override_and_errors);
    RUN(unknown_template_falls_back_to_plain_with_an_escaped_warning);
    RUN(template_with_a_nul_is_read_up_to_it);
    RUN(huge_templates_are_handled_in_linear_time);
    return TEST_REPORT();
}
