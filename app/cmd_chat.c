/* cmd_chat.c - `sluice chat`: a multi-turn conversation on stdin/stdout.
 *
 * Each line read from stdin is one user turn. The first turn is rendered
 * with the model's chat template as a whole conversation (system message,
 * user message, generation prompt); later turns render only what follows
 * the previous answer (its end-of-turn marker, the new user message, the
 * generation prompt), so the KV cache keeps every earlier token and only
 * the new ones are evaluated. The answer streams to stdout and ends at the
 * template's end-of-turn token (which is not evaluated: the next turn's
 * text starts with it).
 *
 * Signals: SIGINT while answering stops the answer (the flag is polled
 * between tokens); SIGINT while waiting for input ends the program, as
 * does EOF. The handler is installed without SA_RESTART so that a read
 * blocked on stdin returns EINTR. Public API only. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "draft_figures.h"
#include "gen.h"
#include "gen_talk.h"
#include "util/timer.h"

#define CMD "chat"

static volatile sig_atomic_t g_interrupt;

static void on_sigint(int sig)
{
    (void)sig;
    g_interrupt = 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sluice chat -m MODEL.gguf [options]\n"
            "\n"
            "Chats with a model: each line on stdin is a user message, the answer is\n"
            "streamed to stdout. The KV cache is kept between turns, so only the new turn's\n"
            "tokens are evaluated. Ctrl-C stops the current answer; Ctrl-C while waiting\n"
            "for input, or EOF (Ctrl-D), quits. When the context is full, chat says so on\n"
            "stderr and exits with status 1 (start again with a larger -c).\n"
            "\n"
            "      --system TEXT       system message for the conversation\n"
            "      --chat-template NAME  override the template found in the model: chatml,\n"
            "                          qwen3, qwen3.5, llama3, mistral, mistral-v3, tulu,\n"
            "                          harmony, deepseek-v3, deepseek-v3.1, deepseek-r1,\n"
            "                          kimi-k2, kimi-k2-thinking, glm4, glm4.7, gemma4,\n"
            "                          plain\n"
            "      --no-think          Qwen3, Qwen3.5, DeepSeek, GLM: answer without a\n"
            "                          thinking block\n"
            "      --reasoning LEVEL   gpt-oss (harmony): reasoning effort low, medium\n"
            "                          (default) or high; only the final channel is printed\n"
            "      --show-reasoning    harmony: also print the analysis channel and tool\n"
            "                          calls, after an [analysis] or [call NAME] tag\n"
            "      --prompt-cache FILE restore the first turn's prompt (system message and\n"
            "                          first message) from FILE as far as it matches, and\n"
            "                          save it there; a foreign, truncated or corrupt file\n"
            "                          is refused with a warning; a FILE that is not a\n"
            "                          prompt cache (the model, a text) is left alone\n"
            "                          (-n is the limit per answer)\n");
    gen_opts_usage(f, -1);
    fprintf(f,
            "                          (--verbose prints, per turn, how many new tokens were\n"
            "                          evaluated and how many were already cached)\n"
            "  -h, --help              this text\n");
}

/* A user turn longer than this is refused (it would not fit any context;
 * and standard input may be a stream without newlines, e.g. a device). */
#define MAX_LINE ((size_t)16 << 20)

/* Reads one line without its line ending. Returns 1 for a line, 0 for
 * EOF, -1 if a SIGINT arrived while waiting, -2 (after printing why) for a
 * line longer than MAX_LINE or a read error. */
static int read_line(char **line, size_t *cap)
{
    if (g_interrupt) return -1;
    size_t n = 0;
    for (;;) {
        if (*cap < n + 2) {
            size_t nc = *cap ? *cap * 2 : 256;
            char *nl = realloc(*line, nc);
            if (!nl) {
                fprintf(stderr, "sluice chat: out of memory reading a line\n");
                return -2;
            }
            *line = nl;
            *cap = nc;
        }
        errno = 0;
        int c = getc(stdin);
        if (c == EOF) {
            if (g_interrupt || errno == EINTR) return -1;
            if (ferror(stdin)) {
                fprintf(stderr, "sluice chat: cannot read standard input: %s\n",
                        strerror(errno));
                return -2;
            }
            if (n == 0) return 0;
            break;
        }
        if (c == '\n') break;
        if (n >= MAX_LINE) {
            fprintf(stderr, "sluice chat: a line on standard input is longer than %zu MiB\n",
                    MAX_LINE >> 20);
            return -2;
        }
        (*line)[n++] = (char)c;
    }
    while (n > 0 && (*line)[n - 1] == '\r') n--;
    (*line)[n] = '\0';
    return 1;
}

int cmd_chat(int argc, char **argv)
{
    gen_opts o;
    gen_opts_init(&o, -1);
    talk_opts t = {0};
    const char *system = NULL, *tmpl_name = NULL;
    bool no_think = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = gen_opts_parse(&o, CMD, argc, argv, &i);
        if (r == 0) r = talk_opts_parse(&t, CMD, argc, argv, &i);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--system")) {
            if (!(system = arg_value(CMD, argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--chat-template")) {
            if (!(tmpl_name = arg_value(CMD, argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--no-think")) {
            no_think = true;
        } else {
            fprintf(stderr, "sluice chat: unknown option '%s' (see sluice chat --help)\n", a);
            return 2;
        }
    }
    if (!gen_opts_have_model(&o, CMD)) return 2;

    gen_ctx g;
    sl_chat *chat = NULL;
    sl_err err = {0};
    char *line = NULL, *rendered = NULL;
    size_t line_cap = 0;
    int32_t *ids = NULL;
    int rc = 1;
    sl_chat_template ht; /* harmony renders through src/chat (the reasoning effort) */
    memset(&ht, 0, sizeof ht);
    if (gen_open(&g, &o, CMD)) return 1;
    if (sl_chat_create(&chat, g.m, tmpl_name, !no_think, &err) ||
        gen_chat_template(g.m, tmpl_name, !no_think, t.reasoning, &ht, &err)) {
        fprintf(stderr, "sluice chat: %s\n", err.msg);
        goto done;
    }
    const bool harmony = ht.family == SL_CHAT_HARMONY;
    if (harmony) gen_decode_specials(&g);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: a blocked read must return */
    sigaction(SIGINT, &sa, NULL);

    const bool tty = isatty(STDIN_FILENO);
    const int n_ctx = sl_session_n_ctx(g.s);
    if (tty || o.verbose)
        fprintf(stderr, "sluice chat: %s, template %s, context %d tokens. Ctrl-C stops an "
                "answer; Ctrl-C again or Ctrl-D quits.\n", sl_model_arch_name(g.m),
                sl_chat_name(chat), n_ctx);
    if (sl_chat_warning(chat)) fprintf(stderr, "sluice chat: warning: %s\n", sl_chat_warning(chat));
    run_totals totals = {0, 0, 0, NULL};
    sl_gen_draft_stats drafted = {0}; /* every turn's, for --stats-json */
    if (g.spec_type != SL_GEN_DRAFT_NONE) totals.draft = &drafted;
    for (int turn = 1;; turn++) {
        if (tty) fputs("> ", stderr);
        int r = read_line(&line, &line_cap);
        if (r == -2) goto done;
        if (r <= 0) {
            if (tty) fputc('\n', stderr);
            rc = 0;
            break;
        }
        if (!line[0]) {
            turn--;
            continue;
        }
        sl_chat_message msgs[2];
        size_t nm = 0;
        int n_before = sl_session_n_past(g.s);
        if (n_before == 0 && system) msgs[nm++] = (sl_chat_message){"system", system};
        msgs[nm++] = (sl_chat_message){"user", line};
        unsigned flags = SL_TOKENIZE_PARSE_SPECIAL;
        int frc;
        if (harmony) {
            sl_chat_turn tu[2] = {{.role = msgs[0].role, .content = msgs[0].content},
                                  {.role = nm > 1 ? msgs[1].role : NULL,
                                   .content = nm > 1 ? msgs[1].content : NULL}};
            frc = sl_chat_render_turns(&ht, tu, nm, NULL, true, n_before != 0, &rendered, &err);
            if (n_before == 0 && sl_model_add_bos(g.m)) flags |= SL_TOKENIZE_ADD_BOS;
        } else if (n_before == 0) {
            frc = sl_chat_format(chat, msgs, nm, true, &rendered, &err);
            if (sl_model_add_bos(g.m)) flags |= SL_TOKENIZE_ADD_BOS;
        } else {
            frc = sl_chat_format_next(chat, msgs, nm, true, &rendered, &err);
        }
        if (frc) {
            fprintf(stderr, "sluice chat: %s\n", err.msg);
            goto done;
        }
        int n = gen_tokenize(g.m, rendered, strlen(rendered), flags, &ids, &err);
        free(rendered);
        rendered = NULL;
        if (n < 0) {
            fprintf(stderr, "sluice chat: cannot tokenize the turn: %s\n", err.msg);
            goto done;
        }
        if (n_before + n > n_ctx) {
            fprintf(stderr, "sluice chat: the context is full (%d tokens cached + %d for this "
                    "turn, context %d); start again with a larger -c\n", n_before, n, n_ctx);
            goto done;
        }
        const uint64_t te0 = sl_now_ns();
        int n_reused = 0;
        if (gen_eval_cached(&g, CMD, n_before == 0 ? t.cache : NULL, ids, n, &n_reused,
                            &err)) {
            fprintf(stderr, "sluice chat: %s\n", err.msg);
            goto done;
        }
        totals.seconds += sl_ns_to_s(sl_now_ns() - te0);
        totals.tokens += n - n_reused;
        if (t.cache && n_before == 0)
            fprintf(stderr, "prompt cache: %d of %d prompt tokens restored from '%s'\n",
                    n_reused, n, t.cache);
        if (o.verbose)
            fprintf(stderr, "turn %d: evaluated %d new tokens, %d cached before\n", turn, n,
                    n_before);
        g.context = ids; /* prompt lookup searches this turn and the answer */
        g.n_context = n;

        gen_reply_stats st;
        gen_harmony_out ho;
        if (harmony) gen_harmony_init(&ho, stdout, t.show_reasoning);
        /* the chat's markers that are not single tokens (plain's "\nUser:")
         * end an answer too */
        int grc = gen_reply(&g, o.n_predict, chat, o.ignore_eos, NULL, &g_interrupt, stdout,
                            harmony ? &ho : NULL, &st, &err);
        if (grc) {
            fprintf(stderr, "\nsluice chat: %s\n", err.msg);
            gen_cache_reply_failed(CMD, n_before == 0 ? t.cache : NULL, n_reused, grc);
            goto done;
        }
        free(ids);
        ids = NULL;
        g.context = NULL;
        totals.seconds += st.seconds;
        totals.tokens += st.n_gen;
        totals.generated += st.n_gen;
        draft_stats_add(&drafted, &st.draft);
        fputc('\n', stdout);
        fflush(stdout);
        if (st.stop == GEN_STOP_INTERRUPT) {
            fprintf(stderr, "[answer interrupted]\n");
            g_interrupt = 0;
        }
        if (o.verbose)
            fprintf(stderr, "turn %d: answered %d tokens in %.3f s (%.2f tok/s), %d in the "
                    "context\n", turn, st.n_gen, st.seconds,
                    st.seconds > 0 ? st.n_gen / st.seconds : 0.0, sl_session_n_past(g.s));
        if (o.verbose) gen_draft_report(&g, &st);
        if (st.stop == GEN_STOP_CTX) {
            fprintf(stderr, "sluice chat: the context of %d tokens is full; start again with "
                    "a larger -c\n", n_ctx);
            goto done;
        }
    }
done:
    signal(SIGINT, SIG_DFL);
    if (g.m && !model_flags_report(&o.mf, CMD, g.m, &totals)) rc = 1;
    free(ids);
    free(rendered);
    free(line);
    sl_chat_free(chat);
    sl_chat_template_free(&ht);
    gen_close(&g);
    return rc;
}
