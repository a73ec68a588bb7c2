/* cmd_perplexity.c - `sluice perplexity`: perplexity of a model on a text,
 * and KL-divergence against a reference, as llama.cpp's perplexity tool
 * computes and prints them (src/eval owns the method and the formats).
 *
 * Three modes:
 *   -f TEXT                               perplexity
 *   -f TEXT --kl-divergence-base FILE     perplexity, and FILE receives the
 *                                         tokens and every scored row's
 *                                         log-probabilities (the reference)
 *   --kl-divergence-base FILE --kl-divergence
 *                                         evaluates FILE's tokens and compares
 *                                         each scored row with the stored one
 * src/eval runs the chunk loop, the scoring, the base file and the text;
 * this file supplies the model: every chunk is a fresh sequence (KV cache
 * emptied), evaluated in batches of -b tokens (at most llama.cpp's
 * micro-batch where that decides the bits) with the logits of every
 * token kept, the scored positions of a batch handed over before the next
 * batch overwrites them. Results go to stdout, information to stderr (as
 * llama.cpp: "Final estimate" is information there). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "model_flags.h"
#include "commands.h"
#include "eval/eval_run.h"
#include "eval/kld_file.h"
#include "eval/ppl.h"
#include "gen.h"
#include "outputs.h"
#include "prompt_text.h"
#include "sluice.h"
#include "util/file.h"
#include "util/status.h"
#include "util/timer.h"

#define CMD "perplexity"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sluice perplexity -m MODEL.gguf -f TEXT [-c N] [options]\n"
            "       sluice perplexity -m MODEL.gguf -f TEXT -c N --kl-divergence-base OUT\n"
            "       sluice perplexity -m MODEL.gguf --kl-divergence-base FILE --kl-divergence\n"
            "\n"
            "Perplexity as llama.cpp's perplexity tool computes it: the text is cut into\n"
            "chunks of N tokens, each evaluated from an empty context, and the second half\n"
            "of each chunk is scored. Prints the running estimate per chunk ([1]x,[2]y,...)\n"
            "and 'Final estimate: PPL = X +/- Y'.\n"
            "\n"
            "  -m, --model FILE          model to evaluate\n"
            "  -f, --file FILE           text to score (tokenized with BOS if the model adds one;\n"
            "                            a regular file of at most 1 GiB, - for standard input;\n"
            "                            as llama-perplexity reads it: its final newline\n"
            "                            dropped, \\n \\t \\xHH ... escapes turned into bytes)\n"
            "      --no-escape           keep the text's backslashes as they are\n"
            "  -c, --ctx-size N          tokens per chunk (default 512); the text needs 2N\n"
            "  -b, --batch-size N        tokens per evaluation batch (also -ub; default 512, at\n"
            "                            most N; where llama.cpp's micro-batch of 512 decides\n"
            "                            the bits, IQ4_XS under --llama-ref 2026-09, at most 512)\n"
            "      --chunks N            score at most N chunks (default: all)\n"
            "      --kl-divergence-base FILE\n"
            "                            without --kl-divergence: also write FILE, the tokens\n"
            "                            and the log-probabilities of every scored position\n"
            "                            (llama.cpp's format; written beside FILE and renamed\n"
            "                            over it once complete, so a failed run leaves no\n"
            "                            half-written file)\n"
            "      --kl-divergence       read FILE (from sluice or llama.cpp) instead of -f:\n"
            "                            evaluate its tokens and report KL-divergence from\n"
            "                            it, its percentiles, and how often the top token agrees\n"
            "  -h, --help                this text\n"
            "model, memory and streaming:\n");
    model_flags_help(f);
}

typedef struct opts {
    const char *model, *text, *base;
    int n_ctx, n_batch, max_chunks;
    model_flags mf;
    bool ctx_given, kld, no_escape;
} opts;

/* The model side of the evaluation: one session with every token's logits
 * kept, evaluated in batches; src/eval owns the chunk loop, the scoring
 * and the base file. */
typedef struct evalctx {
    sl_session *s;
    int n_batch;
    int chunks_done;
    int n_chunk;
    double t_start;
} evalctx;

/* sl_eval_chunk_fn: evaluates tokens[0..n) from an empty cache and hands
 * over the logits of positions first..n-2 as each batch completes (the
 * session keeps only the last batch's logits). */
static int eval_chunk(void *model, const int32_t *tokens, int32_t n, int32_t first,
                      sl_eval_row_fn row, void *sink, sl_err *err)
{
    evalctx *e = model;
    sl_session_truncate(e->s, 0);
    /* each chunk is a prompt of its own, as llama-perplexity evaluates it,
     * asking the logits of positions first.. only */
    sl_session_set_prompt(e->s, n);
    int rc = sl_session_set_outputs_from(e->s, first, err);
    if (rc) return rc;
    for (int p0 = 0; p0 < n; p0 += e->n_batch) {
        int nb = n - p0 < e->n_batch ? n - p0 : e->n_batch;
        if ((rc = sl_session_eval(e->s, tokens + p0, nb, err))) return rc;
        for (int j = 0; j < nb; j++) {
            int pos = p0 + j;
            if (pos < first || pos > n - 2) continue;
            if ((rc = row(sink, pos, sl_session_logits_at(e->s, j), err)))
                return sl_err_prefix(err, "position %d", pos);
        }
    }
    if (outputs_stdout_failed())
        return sl_err_set(err, SL_EIO, "cannot write the results (standard output): %s",
                          errno ? strerror(errno) : "an earlier write failed");
    if (++e->chunks_done == 1) {
        double per = sl_now_s() - e->t_start;
        fprintf(stderr, "perplexity: %.2f seconds per pass - ETA %.2f minutes\n", per,
                per * (e->n_chunk - 1) / 60.0);
    }
    return SL_OK;
}

/* sl_eval_out_fn: results to stdout, information to stderr, as llama.cpp. */
static void on_out(void *user, int stream, const char *text)
{
    (void)user;
    FILE *f = stream == 1 ? stdout : stderr;
    fputs(text, f);
    fflush(f);
}

static int parse(opts *o, int argc, char **argv)
{
    const char *v;
    long l;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int shared = model_flags_parse(&o->mf, CMD, argc, argv, &i);
        if (shared < 0) return 2;
        if (shared > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(o->model = arg_value(CMD, argc, argv, &i))) return 2;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            if (!(o->text = arg_value(CMD, argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--kl-divergence-base")) {
            if (!(o->base = arg_value(CMD, argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--kl-divergence")) {
            o->kld = true;
        } else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) {
            if (!(v = arg_value(CMD, argc, argv, &i)) || !arg_int(CMD, a, v, 3, 1 << 20, &l))
                return 2;
            o->n_ctx = (int)l;
            o->ctx_given = true;
        } else if (!strcmp(a, "-e") || !strcmp(a, "--escape")) {
            o->no_escape = false;
        } else if (!strcmp(a, "--no-escape")) {
            o->no_escape = true;
        } else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size") || !strcmp(a, "-ub") ||
                   !strcmp(a, "--ubatch-size")) {
            if (!(v = arg_value(CMD, argc, argv, &i)) || !arg_int(CMD, a, v, 1, 1 << 16, &l))
                return 2;
            o->n_batch = (int)l;
        } else if (!strcmp(a, "--chunks")) {
            if (!(v = arg_value(CMD, argc, argv, &i)) || !arg_int(CMD, a, v, 1, 1 << 30, &l))
                return 2;
            o->max_chunks = (int)l;
        } else {
            fprintf(stderr, "sluice perplexity: unknown option '%s' (see sluice perplexity "
                    "--help)\n", a);
            return 2;
        }
    }
    if (!o->model) {
        fprintf(stderr, "sluice perplexity: no model given (-m MODEL.gguf)\n");
        return 2;
    }
    if (o->kld && !o->base) {
        fprintf(stderr, "sluice perplexity: --kl-divergence needs --kl-divergence-base FILE "
                "(the reference written by an earlier run)\n");
        return 2;
    }
    if (!o->kld && !o->text) {
        fprintf(stderr, "sluice perplexity: no text given (-f FILE)\n");
        return 2;
    }
    return -1; /* go on */
}

int cmd_perplexity(int argc, char **argv)
{
    opts o = {.n_ctx = 512, .n_batch = 512};
    model_flags_init(&o.mf);
    int prc = parse(&o, argc, argv);
    if (prc >= 0) return prc;
    if (o.kld && o.text)
        fprintf(stderr, "sluice perplexity: note: --kl-divergence evaluates the tokens stored "
                "in '%s'; -f '%s' is not read\n", o.base, o.text);

    sl_err err = {0};
    int rc = 1;
    char *text = NULL;
    int32_t *tokens = NULL;
    int n_tokens = 0;
    sl_model *m = NULL;
    evalctx e = {0};
    int32_t n_ctx, n_chunk;

    if (o.kld) {
        model_flags_add_input(&o.mf, "the KL-divergence base (--kl-divergence-base)", o.base);
    } else {
        model_flags_add_input(&o.mf, "the text (-f)", o.text);
        model_flags_add_output(&o.mf, "--kl-divergence-base", o.base);
        sl_file_id bid;
        if (o.base && !sl_file_identity(o.base, &bid, &err) && bid.exists && !bid.regular) {
            fprintf(stderr, "sluice perplexity: --kl-divergence-base '%s' is a %s; the base file "
                    "must be a regular file\n", o.base, bid.kind);
            return 1;
        }
    }

    double t0 = sl_now_s();
    o.mf.params.n_ctx_hint = o.n_ctx;
    /* every token's logits of a batch are kept */
    o.mf.params.n_logits_hint = o.n_batch < o.n_ctx ? o.n_batch : o.n_ctx;
    m = model_flags_load(&o.mf, CMD, o.model);
    if (!m) return 1;
    const int32_t n_vocab = sl_model_n_vocab(m);
    fprintf(stderr, "perplexity: model loaded in %.3f s (%s, vocab %d)\n", sl_now_s() - t0,
            sl_model_arch_name(m), (int)n_vocab);

    if (o.kld) {
        /* the session needs the file's context: read and validate its header
         * (n_vocab against the model's, every token id) before evaluating */
        sl_kld_base b;
        if (sl_kld_base_open(&b, o.base, n_vocab, &err)) {
            fprintf(stderr, "sluice perplexity: %s\n", err.msg);
            goto done;
        }
        n_ctx = b.n_ctx;
        n_chunk = b.n_chunk;
        sl_kld_base_close(&b);
        if (o.ctx_given && o.n_ctx != n_ctx) {
            fprintf(stderr, "sluice perplexity: -c %d differs from the context of the base "
                    "file '%s' (%d); omit -c or use -c %d\n", o.n_ctx, o.base, (int)n_ctx,
                    (int)n_ctx);
            goto done;
        }
        if (o.max_chunks > 0 && o.max_chunks < n_chunk) n_chunk = o.max_chunks;
    } else {
        size_t len;
        if (!(text = gen_read_file(CMD, o.text, &len))) goto done;
        /* llama-perplexity's text: one final newline dropped, escapes turned
         * into their bytes unless --no-escape */
        len = prompt_file_len(text, len);
        if (!o.no_escape) len = prompt_unescape(text, len);
        double tt = sl_now_s();
        n_tokens = gen_tokenize(m, text, len, sl_model_add_bos(m) ? SL_TOKENIZE_ADD_BOS : 0,
                                &tokens, &err);
        if (n_tokens < 0) {
            fprintf(stderr, "sluice perplexity: cannot tokenize '%s': %s\n", o.text, err.msg);
            goto done;
        }
        fprintf(stderr, "perplexity: tokenized %zu bytes into %d tokens in %.3f s\n", len,
                n_tokens, sl_now_s() - tt);
        sl_ppl_plan plan;
        if (sl_ppl_plan_make(&plan, (size_t)n_tokens, o.n_ctx, o.max_chunks, &err)) {
            fprintf(stderr, "sluice perplexity: '%s' is too short: %s\n", o.text, err.msg);
            goto done;
        }
        n_ctx = plan.n_ctx;
        n_chunk = plan.n_chunk;
    }

    /* llama-perplexity runs a batch of -b tokens as micro-batches of 512:
     * where that decides a product's kernel, evaluate those micro-batches */
    e.n_batch = sl_model_exact_batch(m, o.n_batch < n_ctx ? o.n_batch : n_ctx);
    e.n_chunk = n_chunk;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = n_ctx;
    sp.all_logits = true;
    sp.n_batch_max = e.n_batch;
    if (sl_session_create(&e.s, m, &sp, &err)) {
        fprintf(stderr, "sluice perplexity: %s\n", err.msg);
        goto done;
    }
    fprintf(stderr, "perplexity: calculating %s over %d chunks, n_ctx=%d, batch_size=%d, "
            "scoring %d tokens per chunk\n", o.kld ? "KL-divergence" : "perplexity",
            (int)n_chunk, (int)n_ctx, e.n_batch, (int)(n_ctx - 1 - n_ctx / 2));

    sl_eval_run run = {
        .n_vocab = n_vocab,
        /* as llama.cpp: BOS replaces each chunk's first token when the
         * vocabulary adds BOS */
        .bos = sl_model_add_bos(m) ? sl_model_token_bos(m) : -1,
        .eval = eval_chunk,
        .model = &e,
        .out = on_out,
        .user = NULL,
    };
    e.t_start = sl_now_s();
    int erc;
    if (o.kld) {
        sl_kld_stats st;
        erc = sl_eval_kl_divergence(&run, o.base, n_chunk, &st, &err);
        if (!erc && st.count < 100)
            fprintf(stderr, "perplexity: note: only %llu scored tokens (llama.cpp prints no "
                    "statistics below 100): the figures are rough\n",
                    (unsigned long long)st.count);
    } else {
        erc = sl_eval_perplexity(&run, tokens, (size_t)n_tokens, n_ctx, n_chunk, o.base, NULL,
                                 &err);
    }
    if (erc) {
        fprintf(stderr, "\nsluice perplexity: %s\n", err.msg);
        goto done;
    }
    double t_total = sl_now_s() - e.t_start;
    if (o.base && !o.kld)
        fprintf(stderr, "perplexity: wrote the KL-divergence base '%s' (%d chunks of %d "
                "tokens)\n", o.base, (int)n_chunk, (int)n_ctx);
    fprintf(stderr, "perplexity: %d chunks in %.3f s (%.2f tok/s)\n", (int)n_chunk, t_total,
            t_total > 0 ? (double)n_chunk * n_ctx / t_total : 0.0);
    run_totals totals = {t_total, (long)n_chunk * n_ctx, 0, NULL};
    rc = model_flags_report(&o.mf, CMD, m, &totals) ? 0 : 1;
done:
    free(tokens);
    free(text);
    sl_session_free(e.s);
    sl_model_free(m);
    return rc;
}
