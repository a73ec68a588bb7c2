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
 * Every chunk is a fresh sequence (KV cache emptied), evaluated in batches
 * of -b tokens with the logits of every token kept; the scored positions of
 * a batch are consumed before the next batch overwrites them. Results go to
 * stdout, progress and timings to stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "commands.h"
#include "eval/kld.h"
#include "eval/kld_file.h"
#include "eval/ppl.h"
#include "gen.h"
#include "sluice.h"
#include "util/status.h"

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
            "  -f, --file FILE           text to score (tokenized with BOS if the model adds one)\n"
            "  -c, --ctx-size N          tokens per chunk (default 512); the text needs 2N\n"
            "  -b, --batch-size N        tokens per evaluation batch (default 512, at most N)\n"
            "  -t, --threads N           compute threads (default: all cores)\n"
            "      --chunks N            score at most N chunks (default: all)\n"
            "      --kv-type T           KV cache type: f16 (default) or f32\n"
            "      --kl-divergence-base FILE\n"
            "                            without --kl-divergence: also write FILE, the tokens\n"
            "                            and the log-probabilities of every scored position\n"
            "                            (llama.cpp's format)\n"
            "      --kl-divergence       read FILE (from sluice or llama.cpp) instead of -f:\n"
            "                            evaluate its tokens and report KL-divergence from\n"
            "                            it, its percentiles, and how often the top token agrees\n"
            "  -h, --help                this text\n");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct opts {
    const char *model, *text, *base;
    int n_ctx, n_batch, n_threads, max_chunks;
    bool ctx_given, kld;
    sl_kv_type kv_type;
} opts;

/* What to do with the logits of one scored position. */
typedef enum mode { MODE_PPL, MODE_WRITE_BASE, MODE_KLD } mode;

typedef struct run {
    mode md;
    sl_model *m;
    sl_session *s;
    int32_t n_vocab;
    int n_ctx, n_batch, first;
    int32_t bos;
    bool add_bos;
    sl_ppl ppl;
    sl_kld_writer w;   /* MODE_WRITE_BASE */
    sl_kld_base base;  /* MODE_KLD */
    sl_kld_acc kacc;   /* MODE_KLD */
    int32_t *chunk;    /* (n_ctx) tokens of the chunk as evaluated */
} run;

/* Consumes the logits of chunk position pos (pos in [first, n_ctx - 2]),
 * which predict toks[pos + 1]. */
static int score(run *r, const float *logits, const int32_t *toks, int pos, sl_err *err)
{
    const int32_t target = toks[pos + 1];
    double nll;
    int rc;
    switch (r->md) {
    case MODE_PPL:
        return sl_ppl_add_logits(&r->ppl, logits, r->n_vocab, target, NULL, err);
    case MODE_WRITE_BASE:
        if ((rc = sl_kld_writer_add(&r->w, logits, target, &nll, err))) return rc;
        sl_ppl_add_nll(&r->ppl, nll);
        return SL_OK;
    case MODE_KLD: {
        sl_kld_row row;
        sl_kld_token t;
        if ((rc = sl_kld_base_row(&r->base, pos - r->first, &row, err))) return rc;
        if ((rc = sl_kld_token_compare(logits, r->n_vocab, &row, target, &t, err))) return rc;
        return sl_kld_acc_add(&r->kacc, &t, err);
    }
    }
    return SL_OK;
}

/* Evaluates one chunk (toks: its n_ctx original tokens) from an empty
 * cache and scores its second half. */
static int eval_chunk(run *r, const int32_t *toks, sl_err *err)
{
    memcpy(r->chunk, toks, (size_t)r->n_ctx * sizeof *toks);
    if (r->add_bos) r->chunk[0] = r->bos; /* as llama.cpp: BOS replaces the first token */
    sl_session_truncate(r->s, 0);
    for (int p0 = 0; p0 < r->n_ctx; p0 += r->n_batch) {
        int nb = r->n_ctx - p0 < r->n_batch ? r->n_ctx - p0 : r->n_batch;
        int rc = sl_session_eval(r->s, r->chunk + p0, nb, err);
        if (rc) return rc;
        for (int j = 0; j < nb; j++) {
            int pos = p0 + j;
            if (pos < r->first || pos > r->n_ctx - 2) continue;
            const float *lg = sl_session_logits_at(r->s, j);
            if ((rc = score(r, lg, toks, pos, err))) return sl_err_prefix(err, "position %d", pos);
        }
    }
    return SL_OK;
}

static int parse(opts *o, int argc, char **argv)
{
    const char *v;
    long l;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
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
        } else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) {
            if (!(v = arg_value(CMD, argc, argv, &i)) || !arg_int(CMD, a, v, 1, 1 << 16, &l))
                return 2;
            o->n_batch = (int)l;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!(v = arg_value(CMD, argc, argv, &i)) || !arg_int(CMD, a, v, 1, 1024, &l))
                return 2;
            o->n_threads = (int)l;
        } else if (!strcmp(a, "--chunks")) {
            if (!(v = arg_value(CMD, argc, argv, &i)) || !arg_int(CMD, a, v, 1, 1 << 30, &l))
                return 2;
            o->max_chunks = (int)l;
        } else if (!strcmp(a, "--kv-type")) {
            if (!(v = arg_value(CMD, argc, argv, &i))) return 2;
            if (strcmp(v, "f16") && strcmp(v, "f32")) {
                fprintf(stderr, "sluice perplexity: --kv-type expects f16 or f32, got '%s'\n", v);
                return 2;
            }
            o->kv_type = !strcmp(v, "f32") ? SL_KV_F32 : SL_KV_F16;
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
    opts o = {.n_ctx = 512, .n_batch = 512, .kv_type = SL_KV_F16};
    int prc = parse(&o, argc, argv);
    if (prc >= 0) return prc;
    if (o.kld && o.text)
        fprintf(stderr, "sluice perplexity: note: --kl-divergence evaluates the tokens stored "
                "in '%s'; -f '%s' is not read\n", o.base, o.text);

    run r;
    memset(&r, 0, sizeof r);
    r.md = o.kld ? MODE_KLD : o.base ? MODE_WRITE_BASE : MODE_PPL;
    sl_err err = {0};
    int rc = 1;
    char *text = NULL;
    int32_t *tokens = NULL;
    bool writer_open = false;
    sl_ppl_plan plan;

    double t0 = now_s();
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = o.n_threads;
    if (sl_model_load(&r.m, o.model, &mp, &err)) {
        fprintf(stderr, "sluice perplexity: cannot load '%s': %s\n", o.model, err.msg);
        return 1;
    }
    fprintf(stderr, "perplexity: model loaded in %.3f s (%s, vocab %d)\n", now_s() - t0,
            sl_model_arch_name(r.m), sl_model_n_vocab(r.m));
    r.n_vocab = sl_model_n_vocab(r.m);
    r.add_bos = sl_model_add_bos(r.m);
    r.bos = sl_model_token_bos(r.m);

    if (r.md == MODE_KLD) {
        if (sl_kld_base_open(&r.base, o.base, r.n_vocab, &err)) {
            fprintf(stderr, "sluice perplexity: %s\n", err.msg);
            goto done;
        }
        if (o.ctx_given && o.n_ctx != r.base.n_ctx) {
            fprintf(stderr, "sluice perplexity: -c %d differs from the context of the base "
                    "file '%s' (%d); omit -c or use -c %d\n", o.n_ctx, o.base, r.base.n_ctx,
                    r.base.n_ctx);
            goto done;
        }
        plan.n_ctx = r.base.n_ctx;
        plan.n_chunk = r.base.n_chunk;
        if (o.max_chunks > 0 && o.max_chunks < plan.n_chunk) plan.n_chunk = o.max_chunks;
        plan.first = plan.n_ctx / 2;
        plan.n_scored = r.base.n_scored;
        if (sl_kld_acc_init(&r.kacc, (size_t)plan.n_chunk * (size_t)plan.n_scored, &err)) {
            fprintf(stderr, "sluice perplexity: %s\n", err.msg);
            goto done;
        }
    } else {
        size_t len;
        if (!(text = gen_read_file(CMD, o.text, &len))) goto done;
        double tt = now_s();
        int n = gen_tokenize(r.m, text, len, r.add_bos ? SL_TOKENIZE_ADD_BOS : 0, &tokens, &err);
        if (n < 0) {
            fprintf(stderr, "sluice perplexity: cannot tokenize '%s': %s\n", o.text, err.msg);
            goto done;
        }
        fprintf(stderr, "perplexity: tokenized %zu bytes into %d tokens in %.3f s\n", len, n,
                now_s() - tt);
        if (sl_ppl_plan_make(&plan, (size_t)n, o.n_ctx, o.max_chunks, &err)) {
            fprintf(stderr, "sluice perplexity: '%s' is too short: %s\n", o.text, err.msg);
            goto done;
        }
        if (r.md == MODE_WRITE_BASE) {
            if (sl_kld_writer_open(&r.w, o.base, plan.n_ctx, r.n_vocab, plan.n_chunk, tokens,
                                   &err)) {
                fprintf(stderr, "sluice perplexity: %s\n", err.msg);
                goto done;
            }
            writer_open = true;
        }
    }
    r.n_ctx = plan.n_ctx;
    r.first = plan.first;
    r.n_batch = o.n_batch < r.n_ctx ? o.n_batch : r.n_ctx;
    sl_ppl_init(&r.ppl);

    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = r.n_ctx;
    sp.kv_type = o.kv_type;
    sp.all_logits = true;
    sp.n_batch_max = r.n_batch;
    if (sl_session_create(&r.s, r.m, &sp, &err)) {
        fprintf(stderr, "sluice perplexity: %s\n", err.msg);
        goto done;
    }
    if (!(r.chunk = malloc((size_t)r.n_ctx * sizeof *r.chunk))) {
        fprintf(stderr, "sluice perplexity: out of memory\n");
        goto done;
    }
    fprintf(stderr, "perplexity: calculating %s over %d chunks, n_ctx=%d, batch_size=%d, "
            "scoring %d tokens per chunk\n", r.md == MODE_KLD ? "KL-divergence" : "perplexity",
            plan.n_chunk, r.n_ctx, r.n_batch, plan.n_scored);
    if (r.md == MODE_KLD) {
        char hdr[256];
        sl_kld_format_chunk_header(hdr, sizeof hdr);
        printf("%s\n", hdr);
    }

    double t_start = now_s();
    for (int c = 0; c < plan.n_chunk; c++) {
        const int32_t *toks;
        if (r.md == MODE_KLD) {
            if (sl_kld_base_read_chunk(&r.base, c, &err)) {
                fprintf(stderr, "\nsluice perplexity: %s\n", err.msg);
                goto done;
            }
            toks = sl_kld_base_chunk_tokens(&r.base, c);
        } else {
            toks = tokens + (size_t)c * (size_t)r.n_ctx;
        }
        if (eval_chunk(&r, toks, &err)) {
            fprintf(stderr, "\nsluice perplexity: chunk %d: %s\n", c + 1, err.msg);
            goto done;
        }
        if (c == 0) {
            double per = now_s() - t_start;
            fprintf(stderr, "perplexity: %.2f seconds per pass - ETA %.2f minutes\n", per,
                    per * (plan.n_chunk - 1) / 60.0);
        }
        char line[512];
        if (r.md == MODE_KLD) {
            sl_kld_format_chunk(line, sizeof line, c + 1, &r.kacc);
            printf("%s\n", line);
        } else {
            sl_ppl_format_chunk(line, sizeof line, c + 1, &r.ppl);
            printf("%s", line);
        }
        fflush(stdout);
    }
    double t_total = now_s() - t_start;
    if (r.md != MODE_KLD) {
        char line[256];
        sl_ppl_format_final(line, sizeof line, &r.ppl);
        printf("\n%s\n", line);
    } else {
        sl_kld_stats st;
        if (sl_kld_acc_stats(&r.kacc, &st, &err)) {
            fprintf(stderr, "sluice perplexity: %s\n", err.msg);
            goto done;
        }
        if (st.count < 100)
            fprintf(stderr, "perplexity: note: only %llu scored tokens; llama.cpp prints no "
                    "statistics below 100 and these are rough\n", (unsigned long long)st.count);
        char *buf = malloc(8192);
        if (!buf) {
            fprintf(stderr, "sluice perplexity: out of memory\n");
            goto done;
        }
        sl_kld_format_stats(buf, 8192, &st);
        printf("\n%s", buf);
        free(buf);
    }
    if (writer_open) {
        writer_open = false;
        if (sl_kld_writer_close(&r.w, &err)) {
            fprintf(stderr, "sluice perplexity: %s\n", err.msg);
            goto done;
        }
        fprintf(stderr, "perplexity: wrote the KL-divergence base '%s' (%d chunks of %d "
                "tokens)\n", o.base, plan.n_chunk, r.n_ctx);
    }
    fprintf(stderr, "perplexity: %d chunks in %.3f s (%.2f tok/s)\n", plan.n_chunk, t_total,
            t_total > 0 ? (double)plan.n_chunk * r.n_ctx / t_total : 0.0);
    rc = 0;
done:
    if (writer_open) {
        sl_err e2;
        sl_kld_writer_close(&r.w, &e2);
        remove(o.base); /* an incomplete base file is useless */
    }
    sl_kld_base_close(&r.base);
    sl_kld_acc_free(&r.kacc);
    free(r.chunk);
    free(tokens);
    free(text);
    sl_session_free(r.s);
    sl_model_free(r.m);
    return rc;
}
