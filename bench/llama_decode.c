/* llama_decode.c - `llama_decode MODEL TEXT N_PROMPT N_GEN [THREADS]`:
 * llama.cpp's decode against sluice's on the same tokens. The text's first
 * N_PROMPT tokens (llama.cpp's tokenizer, BOS first) go in as one batch to
 * both (llama.cpp splits it in micro-batches of its default 512; sluice is
 * told the prompt, sl_session_set_prompt); then (1) the next N_GEN tokens of the text one at a time, and each
 * step's logits compared (bit-identical steps, the largest difference), and
 * (2) from fresh memories, N_GEN greedy tokens each, and the first step at
 * which the two choose differently. Both with THREADS threads (default 2),
 * f16 K/V caches and a context of N_PROMPT + N_GEN + 1 rounded up to 256
 * (llama.cpp's padding of the cache view decides its decode kernel).
 * llama.cpp computes the last layer for the rows whose logits are asked
 * only, so a prompt's last row alone takes its one-row products
 * (ggml_vec_dot_*, not tinyBLAS), and sluice, keeping the last row's logits
 * only, does the same; ALL_ROWS=1 in the environment asks both for every
 * row, as llama-perplexity does. sluice follows llama.cpp's split of
 * a decode's attention for THREADS threads (DECODE_SPLIT=N: for N).
 * Built by bench/llama_decode.sh against node-llama-cpp's libraries and
 * libsluice.a. A developer tool: not part of the library or the suite. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"
#include "sluice.h"

static void quiet(enum ggml_log_level level, const char *text, void *ud)
{
    (void)ud;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static int argmax(const float *l, int V)
{
    int b = 0;
    for (int i = 1; i < V; i++)
        if (l[i] > l[b]) b = i;
    return b;
}

/* llama.cpp: n tokens at positions pos.. in one batch, logits of the last. */
static const float *ll_eval(struct llama_context *ctx, struct llama_batch *bt, const llama_token *t,
                            int n, int pos)
{
    for (int i = 0; i < n; i++) {
        bt->token[i] = t[i];
        bt->pos[i] = pos + i;
        bt->n_seq_id[i] = 1;
        bt->seq_id[i][0] = 0;
        bt->logits[i] = getenv("ALL_ROWS") ? 1 : i == n - 1;
    }
    bt->n_tokens = n;
    const int rc = llama_decode(ctx, *bt);
    if (rc) {
        fprintf(stderr, "llama_decode: llama.cpp's decode returned %d\n", rc);
        return NULL;
    }
    return llama_get_logits_ith(ctx, n - 1);
}

static const float *sl_eval(sl_session *s, const llama_token *t, int n)
{
    sl_err err;
    if (sl_session_eval(s, (const int32_t *)t, n, &err)) {
        fprintf(stderr, "sluice: %s\n", err.msg);
        return NULL;
    }
    return sl_session_logits(s); /* the last row's */
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: llama_decode MODEL TEXT N_PROMPT N_GEN [THREADS]\n");
        return 2;
    }
    const int np = atoi(argv[3]), ng = atoi(argv[4]), nt = argc > 5 ? atoi(argv[5]) : 2;
    const char *backend = getenv("LLAMA_CPU_BACKEND");
    llama_log_set(quiet, NULL);
    if (np < 1 || ng < 1 || !backend || !ggml_backend_load(backend)) {
        fprintf(stderr, "llama_decode: bad arguments or no LLAMA_CPU_BACKEND\n");
        return 2;
    }
    llama_backend_init();
    struct llama_model *model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) return 1;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    FILE *tf = fopen(argv[2], "rb");
    if (!tf) return 1;
    static char text[1 << 20];
    const size_t tl = fread(text, 1, sizeof text - 1, tf);
    fclose(tf);
    llama_token *tok = malloc(sizeof *tok * (tl + 16));
    const int n_tok = llama_tokenize(vocab, text, (int)tl, tok, (int)tl + 16, true, false);
    if (n_tok < np + ng) {
        fprintf(stderr, "llama_decode: %d tokens, need %d\n", n_tok, np + ng);
        return 1;
    }
    const int n_ctx = (np + ng + 1 + 255) / 256 * 256, V = llama_vocab_n_tokens(vocab);
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = (uint32_t)(np > 512 ? np : 512);
    cp.n_ubatch = 512; /* its default: a longer prompt goes in micro-batches of 512 */
    cp.n_threads = cp.n_threads_batch = nt;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    struct llama_batch bt = llama_batch_init(np > 512 ? np : 512, 0, 1);

    sl_model_params mp = sl_model_default_params();
    mp.n_threads = nt;
    /* node-llama-cpp's build is 2026-09's: follow its rule unless told */
    const char *rev = getenv("LLAMA_REF");
    mp.llama_rev = rev && !strcmp(rev, "2026-08") ? SL_LLAMA_REV_2026_08 : SL_LLAMA_REV_2026_09;
    sl_model *sm;
    sl_err err;
    if (!ctx || sl_model_load(&sm, argv[1], &mp, &err)) return 1;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = n_ctx;
    sp.n_batch_max = np;
    /* as llama.cpp is asked: every row's logits (perplexity) or the last
     * row's (a generation: its last layer past the mixer and its lm head
     * then run on that row alone, and so do sluice's) */
    sp.all_logits = getenv("ALL_ROWS") != NULL;
    sp.decode_split = getenv("DECODE_SPLIT") ? atoi(getenv("DECODE_SPLIT")) : nt;
    sp.type_k = sp.type_v = SL_KV_F16;
    sl_session *ss;
    if (sl_session_create(&ss, sm, &sp, &err)) {
        fprintf(stderr, "sluice: %s\n", err.msg);
        return 1;
    }
    /* (1) teacher-forced */
    sl_session_set_prompt(ss, np);
    const float *a = ll_eval(ctx, &bt, tok, np, 0), *b = sl_eval(ss, tok, np);
    if (!a || !b) {
        fprintf(stderr, "llama_decode: the prompt failed (%s)\n", a ? "sluice" : "llama.cpp");
        return 1;
    }
    int same = 0, first_diff = -1;
    double maxd = 0;
    for (int i = 0; i <= ng && a && b; i++) {
        int eq = !memcmp(a, b, sizeof(float) * (size_t)V);
        for (int v = 0; v < V; v++)
            if (fabs((double)a[v] - b[v]) > maxd) maxd = fabs((double)a[v] - b[v]);
        same += eq;
        if (!eq && first_diff < 0) first_diff = np + i;
        if (i == ng) break;
        a = ll_eval(ctx, &bt, tok + np + i, 1, np + i);
        b = sl_eval(ss, tok + np + i, 1);
    }
    printf("teacher-forced: %d of %d steps bit-identical (prompt included), first differing "
           "position %d, max |diff| %.3g\n", same, ng + 1, first_diff, maxd);
    /* (2) greedy */
    llama_memory_clear(llama_get_memory(ctx), true);
    sl_session_truncate(ss, 0);
    a = ll_eval(ctx, &bt, tok, np, 0);
    b = sl_eval(ss, tok, np);
    int div = -1;
    for (int i = 0; i < ng && a && b; i++) {
        llama_token ta = argmax(a, V), tb = argmax(b, V);
        if (ta != tb) {
            div = i;
            break;
        }
        a = ll_eval(ctx, &bt, &ta, 1, np + i);
        b = sl_eval(ss, &tb, 1);
    }
    if (div < 0) printf("greedy: %d tokens, the same text\n", ng);
    else printf("greedy: the texts part at generated token %d (position %d)\n", div, np + div);
    sl_session_free(ss);
    sl_model_free(sm);
    llama_batch_free(bt);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
