/* cmd_run.c - `sluice run`: generate text from a prompt.
 *
 * Tokenizes the prompt (control-token text such as "<|im_start|>" becomes
 * the control token), evaluates it in batches, then samples, prints and
 * evaluates one token at a time until -n tokens, an end-of-generation token
 * or a full context. Generated text goes to stdout as it is produced (only
 * complete UTF-8 characters); timings go to stderr. Public API only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "gen.h"
#include "gen_talk.h"
#include "prompt_text.h"
#include "util/timer.h"

#define CMD "run"
#define MAX_STOPS 8

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sluice run -m MODEL.gguf (-p TEXT | -f FILE) [options]\n"
            "\n"
            "Generates text after a prompt and streams it to stdout; load time, prompt\n"
            "speed and generation speed go to stderr.\n"
            "\n"
            "  -p, --prompt TEXT       the prompt (control tokens like <|im_start|> are parsed)\n"
            "  -f, --file FILE         read the prompt from FILE (a regular file of at most\n"
            "                          1 GiB; - reads standard input), its final newline\n"
            "                          dropped, as llama.cpp reads it\n"
            "  -e, --escape            turn \\n \\r \\t \\' \\\" \\\\ and \\xHH in the prompt into the\n"
            "                          bytes they name, as llama.cpp does (default)\n"
            "      --no-escape         keep backslashes as they are\n"
            "      --no-bos            do not add BOS even if the model asks for it\n"
            "      --stop TEXT         end when the generated text contains TEXT (not printed;\n"
            "                          up to 8 of them)\n"
            "      --truncate          a prompt longer than the context keeps BOS and its\n"
            "                          last tokens, leaving room for min(-n, ctx/2) new ones\n"
            "                          (default: such a prompt is an error)\n"
            "      --prompt-cache FILE restore the prompt's state from FILE when FILE holds\n"
            "                          a prefix of its tokens (only the rest is evaluated),\n"
            "                          and save the evaluated prompt's state to FILE; a file\n"
            "                          made for another model, truncated or corrupt is\n"
            "                          refused with a warning; a FILE that is not a\n"
            "                          prompt cache (the model, a text) is left alone\n"
            "gpt-oss (the harmony chat format): the prompt is sent as a user message and\n"
            "only the answer's final channel is printed:\n"
            "      --reasoning LEVEL   reasoning effort: low, medium (default) or high\n"
            "      --show-reasoning    also print the analysis channel and tool calls,\n"
            "                          each after an [analysis] or [call NAME] tag\n"
            "      --raw               send the prompt as it is (no harmony wrapping)\n");
    gen_opts_usage(f, 128);
    fprintf(f, "  -h, --help              this text\n");
}

static const char *stop_name(gen_stop s)
{
    switch (s) {
    case GEN_STOP_EOG: return "end-of-generation token or --stop text";
    case GEN_STOP_LIMIT: return "-n limit";
    case GEN_STOP_CTX: return "context full";
    case GEN_STOP_INTERRUPT: return "interrupted";
    }
    return "?";
}

/* Keeps BOS (if the prompt starts with one) and the last tokens so that
 * `room` positions stay free for generation. Returns the new count. */
static int truncate_prompt(int32_t *ids, int n, int n_ctx, int room, int32_t bos, bool has_bos)
{
    int keep = n_ctx - room;
    if (keep < 1) keep = 1;
    if (n <= keep) return n;
    if (has_bos && ids[0] == bos && keep >= 2) {
        memmove(ids + 1, ids + n - (keep - 1), (size_t)(keep - 1) * sizeof *ids);
    } else {
        memmove(ids, ids + n - keep, (size_t)keep * sizeof *ids);
    }
    return keep;
}

int cmd_run(int argc, char **argv)
{
    gen_opts o;
    gen_opts_init(&o, 128);
    talk_opts t = {0};
    const char *prompt = NULL, *file = NULL;
    bool no_bos = false, truncate = false, raw = false, escape = true;
    const char *stops[MAX_STOPS + 1] = {0};
    int n_stops = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = gen_opts_parse(&o, CMD, argc, argv, &i);
        if (r == 0) r = talk_opts_parse(&t, CMD, argc, argv, &i);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) {
            if (!(prompt = arg_value(CMD, argc, argv, &i))) return 2;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            if (!(file = arg_value(CMD, argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--stop")) {
            if (i + 1 >= argc || !argv[i + 1][0]) {
                fprintf(stderr, "sluice run: --stop needs a non-empty text\n");
                return 2;
            }
            if (n_stops == MAX_STOPS || strlen(argv[i + 1]) > 64) {
                fprintf(stderr, "sluice run: at most %d --stop texts of at most 64 bytes\n",
                        MAX_STOPS);
                return 2;
            }
            stops[n_stops++] = argv[++i];
        } else if (!strcmp(a, "-e") || !strcmp(a, "--escape")) {
            escape = true;
        } else if (!strcmp(a, "--no-escape")) {
            escape = false;
        } else if (!strcmp(a, "--no-bos")) {
            no_bos = true;
        } else if (!strcmp(a, "--truncate")) {
            truncate = true;
        } else if (!strcmp(a, "--raw")) {
            raw = true;
        } else {
            fprintf(stderr, "sluice run: unknown option '%s' (see sluice run --help)\n", a);
            return 2;
        }
    }
    if (!gen_opts_have_model(&o, CMD)) return 2;
    if (!prompt == !file) {
        fprintf(stderr, "sluice run: give the prompt with exactly one of -p TEXT or -f FILE\n");
        return 2;
    }

    int rc = 1;
    char *text = NULL;
    int32_t *ids = NULL;
    size_t text_len = 0;
    char *wrapped = NULL;
    sl_chat_template ht;
    memset(&ht, 0, sizeof ht);
    bool harmony = false;
    gen_ctx g;
    sl_err err = {0};
    model_flags_add_input(&o.mf, "the prompt file (-f)", file);
    if (file) {
        if (!(text = gen_read_file(CMD, file, &text_len))) return 1;
        text_len = prompt_file_len(text, text_len);
    } else {
        text_len = strlen(prompt);
        if (!(text = malloc(text_len + 1))) {
            fprintf(stderr, "sluice run: out of memory for the prompt\n");
            return 1;
        }
        memcpy(text, prompt, text_len + 1);
    }
    if (escape) text_len = prompt_unescape(text, text_len);
    text[text_len] = '\0'; /* the harmony wrapping reads it as a string */
    if (gen_open(&g, &o, CMD)) {
        free(text);
        return 1;
    }
    const bool add_bos = !no_bos && sl_model_add_bos(g.m);
    unsigned flags = SL_TOKENIZE_PARSE_SPECIAL | (add_bos ? SL_TOKENIZE_ADD_BOS : 0u);
    const char *ptext = text;
    if (gen_chat_template(g.m, NULL, true, t.reasoning, &ht, &err)) {
        fprintf(stderr, "sluice run: %s\n", err.msg);
        goto done;
    }
    harmony = ht.family == SL_CHAT_HARMONY;
    if (harmony && !raw) {
        sl_chat_turn u = {.role = "user", .content = ptext};
        if (sl_chat_render_turns(&ht, &u, 1, NULL, true, false, &wrapped, &err)) {
            fprintf(stderr, "sluice run: %s\n", err.msg);
            goto done;
        }
        ptext = wrapped;
        text_len = strlen(wrapped);
    }
    if (harmony) gen_decode_specials(&g);
    int n = gen_tokenize(g.m, ptext, text_len, flags, &ids, &err);
    if (n < 0) {
        fprintf(stderr, "sluice run: cannot tokenize the prompt: %s\n", err.msg);
        goto done;
    }
    if (n == 0) {
        fprintf(stderr, "sluice run: the prompt is empty (and the model adds no BOS)\n");
        goto done;
    }
    const int n_ctx = sl_session_n_ctx(g.s);
    if (n > n_ctx) {
        if (!truncate) {
            fprintf(stderr, "sluice run: the prompt has %d tokens but the context holds %d; "
                    "use a larger -c, or --truncate to keep its last tokens\n", n, n_ctx);
            goto done;
        }
        int room = o.n_predict < 0 || o.n_predict > n_ctx / 2 ? n_ctx / 2 : o.n_predict;
        int n_old = n;
        n = truncate_prompt(ids, n, n_ctx, room, sl_model_token_bos(g.m), add_bos);
        fprintf(stderr, "sluice run: prompt of %d tokens truncated to %d%s (context %d, "
                "room for %d new)\n", n_old, n, add_bos ? " (BOS and the last ones)" :
                " (the last ones)", n_ctx, n_ctx - n);
    }
    if (o.verbose) {
        char cache[160];
        fprintf(stderr, "sluice run: %s, vocab %d, context %d, batch %d, cache %s, prompt %d "
                "tokens, temp %.2f top-k %d top-p %.2f min-p %.2f seed %llu\n",
                sl_model_arch_name(g.m), sl_model_n_vocab(g.m), n_ctx, g.n_batch,
                sl_session_cache_text(g.s, cache, sizeof cache), n, (double)o.sp.temp, (int)o.sp.top_k,
                (double)o.sp.top_p, (double)o.sp.min_p, (unsigned long long)o.sp.seed);
    }

    double t0 = sl_now_s();
    int n_reused = 0;
    if (gen_eval_cached(&g, CMD, t.cache, ids, n, &n_reused, &err)) {
        fprintf(stderr, "sluice run: evaluating the prompt: %s\n", err.msg);
        goto done;
    }
    double t_prompt = sl_now_s() - t0;
    const int n_eval = n - n_reused; /* prompt tokens evaluated here */

    gen_reply_stats st;
    gen_harmony_out ho;
    if (harmony) gen_harmony_init(&ho, stdout, t.show_reasoning);
    g.context = ids;
    g.n_context = n;
    int grc = gen_reply(&g, o.n_predict, NULL, o.ignore_eos, stops, NULL, stdout,
                        harmony ? &ho : NULL, &st, &err);
    if (grc) {
        fprintf(stderr, "\nsluice run: generating: %s\n", err.msg);
        gen_cache_reply_failed(CMD, t.cache, n_reused, grc);
        goto done;
    }
    if (isatty(STDOUT_FILENO)) fputc('\n', stdout);
    else fputc('\n', stderr); /* the timings start on a line of their own */
    if (st.stop == GEN_STOP_CTX && o.n_predict != 0)
        fprintf(stderr, "sluice run: stopped: the context of %d tokens is full\n", n_ctx);
    fprintf(stderr, "load:      %8.3f s\n", g.load_s);
    if (t.cache)
        fprintf(stderr, "prompt cache: %d of %d prompt tokens restored from '%s'\n", n_reused,
                n, t.cache);
    fprintf(stderr, "prompt:    %6d tokens in %8.3f s (%9.2f tok/s)\n", n_eval, t_prompt,
            t_prompt > 0 ? n_eval / t_prompt : 0.0);
    fprintf(stderr, "generated: %6d tokens in %8.3f s (%9.2f tok/s)\n", st.n_gen, st.seconds,
            st.seconds > 0 ? st.n_gen / st.seconds : 0.0);
    if (o.verbose || o.mf.stats) gen_draft_report(&g, &st);
    if (o.verbose)
        fprintf(stderr, "stop:      %s; %d tokens in the context\n", stop_name(st.stop),
                sl_session_n_past(g.s));
    run_totals totals = {t_prompt + st.seconds, (long)n_eval + st.n_gen, st.n_gen,
                         g.spec_type != SL_GEN_DRAFT_NONE ? &st.draft : NULL};
    rc = model_flags_report(&o.mf, CMD, g.m, &totals) ? 0 : 1;
done:
    free(ids);
    free(text);
    free(wrapped);
    sl_chat_template_free(&ht);
    gen_close(&g);
    return rc;
}
