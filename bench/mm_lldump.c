/* mm_lldump.c - sluice's matrix products against llama.cpp's own, bit for bit.
 *
 * llama.cpp's intermediate tensors of one ubatch (dumped as raw f32 by
 * /tmp/lldump/lldump, see /work/notes/lldump/README.md) give, for every
 * matrix product of the graph, its input rows and its output rows. This tool
 * loads the weight tensor from the GGUF, runs sluice's matmul path
 * (sl_matvec_prepare + sl_matmul_rows) on llama.cpp's input rows, once with
 * all tokens as one batch and once one token at a time, and counts the
 * output values whose bits equal llama.cpp's.
 *
 *   build/rel/bench/mm_lldump GGUF DUMPDIR TENSOR IN OUT [PROBS]
 *
 * TENSOR is a weight name (blk.0.attn_q.weight); IN and OUT are dump file
 * names without the directory (attn_norm-0.MUL.f32, Qcur-0.MUL_MAT.f32).
 * For an expert tensor (3 dims) OUT is the MUL_MAT_ID output [n_out, k,
 * tokens]; IN is either [cols, tokens] (shared by the k slots) or [cols, k,
 * tokens] (the down projection); PROBS (ffn_moe_probs-L.SOFT_MAX.f32) gives
 * the routing: the k most probable experts per token, in llama.cpp's order
 * (descending probability). Prints one line:
 *   TENSOR type rows batch=<%> single=<%> rule=<%> (of N) maxrel=<..>
 * batch: sl_matmul_rows with all tokens routed to the matrix as one batch;
 * single: one token at a time; rule: the kernel ops/matmul_order.h picks
 * given the tensor's expert count (which sl_mat does not carry yet); maxrel:
 * the largest relative difference of the batch run.
 * Not a test: the dumps live outside the repository. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "ops/matmul_order.h"
#include "ops/ops.h"
#include "quant/vec_dot_rp.h"
#include "quant/quant.h"
#include "util/status.h"

static float *read_f32(const char *dir, const char *name, size_t *n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    float *p = malloc((size_t)len);
    if (!p || fread(p, 1, (size_t)len, f) != (size_t)len) exit(2);
    fclose(f);
    *n = (size_t)len / sizeof(float);
    return p;
}

/* the k largest of p[0..n) in descending order (first index wins ties) */
static void topk(const float *p, int n, int k, int *out)
{
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int e = 0; e < n; e++) {
            bool used = false;
            for (int i = 0; i < j; i++) used |= out[i] == e;
            if (!used && (best < 0 || p[e] > p[best])) best = e;
        }
        out[j] = best;
    }
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s GGUF DUMPDIR TENSOR IN OUT [PROBS]\n", argv[0]);
        return 2;
    }
    sl_err err = {0};
    sl_gguf *g = NULL;
    if (sl_gguf_open(&g, argv[1], &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    const sl_gguf_tensor *t = sl_gguf_find_tensor(g, argv[3]);
    if (!t) {
        fprintf(stderr, "no tensor %s\n", argv[3]);
        return 2;
    }
    uint8_t *wdata = malloc(t->nbytes);
    if (sl_gguf_read_tensor(g, t, 0, wdata, t->nbytes, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    const sl_type_traits *tr = sl_type_get(t->type);
    const int64_t cols = (int64_t)t->ne[0], rows = (int64_t)t->ne[1];
    const int64_t n_exp = t->n_dims >= 3 ? (int64_t)t->ne[2] : 1;
    const size_t row_bytes = (size_t)cols / tr->block_size * tr->type_size;

    size_t n_in, n_out;
    float *in = read_f32(argv[2], argv[4], &n_in);
    float *ref = read_f32(argv[2], argv[5], &n_out);
    const bool expert = t->n_dims >= 3;
    /* slots per token: k for MUL_MAT_ID outputs, 1 otherwise */
    const int64_t n_tok_slots = (int64_t)(n_out / (size_t)rows);
    int k = 1;
    int *route = NULL;
    int64_t n_tok = n_tok_slots;
    if (expert) {
        if (argc < 7 && n_exp > 1) {
            fprintf(stderr, "expert tensor with %lld experts needs PROBS\n", (long long)n_exp);
            return 2;
        }
        /* tokens from the input: [cols, tokens] or [cols, k, tokens] */
        if (argc >= 7) {
            size_t n_p;
            float *probs = read_f32(argv[2], argv[6], &n_p);
            n_tok = (int64_t)(n_p / (size_t)n_exp);
            k = (int)(n_tok_slots / n_tok);
            route = malloc(sizeof(int) * (size_t)(n_tok * k));
            for (int64_t i = 0; i < n_tok; i++) topk(probs + i * n_exp, (int)n_exp, k, route + i * k);
            free(probs);
        } else {
            n_tok = n_tok_slots;
            k = 1;
            route = calloc((size_t)n_tok, sizeof(int));
        }
    }
    const bool in_per_slot = (int64_t)(n_in / (size_t)cols) == n_tok * k && k > 1;

    const size_t abytes = sl_matvec_act_bytes(t->type, cols);
    const int64_t n_rows_total = n_tok * k; /* (token, slot) pairs */
    uint8_t *acts = malloc(abytes * (size_t)n_rows_total);
    const void **ap = malloc(sizeof(void *) * (size_t)n_rows_total);
    float *y = malloc(sizeof(float) * (size_t)(rows * n_rows_total));
    float *y1 = malloc(sizeof(float) * (size_t)(rows * n_rows_total));
    float *tmp = malloc(sizeof(float) * (size_t)cols);
    long long eq_b = 0, eq_1 = 0, eq_r = 0, tot = 0;
    /* the kernel matmul_order.h's rule picks when the matrix's expert
     * count is known (sl_matmul_rows takes every matrix for 2-d) */
    const bool is_exps = strstr(argv[3], "_exps") != NULL; /* an expert tensor, any n_dims */
    const sl_mm_order order = sl_mm_order_for(t->type, rows, is_exps ? n_exp : 0);
    double maxrel = 0;
    /* one expert at a time: its (token, slot) pairs as one batch */
    for (int64_t e = 0; e < n_exp; e++) {
        int64_t nb = 0;
        int64_t *which = malloc(sizeof(int64_t) * (size_t)n_rows_total);
        for (int64_t i = 0; i < n_rows_total; i++)
            if (!expert || route[i] == e) which[nb++] = i;
        if (nb == 0) {
            free(which);
            continue;
        }
        sl_mat m = {.type = t->type, .rows = rows, .cols = cols, .row_bytes = row_bytes,
                    .data = wdata + (size_t)e * (size_t)rows * row_bytes,
                    .n_experts = is_exps ? n_exp : 0};
        for (int64_t j = 0; j < nb; j++) {
            const int64_t i = which[j];
            const float *x = in + (size_t)(in_per_slot ? i : i / k) * (size_t)cols;
            sl_matvec_prepare(&m, x, acts + (size_t)j * abytes);
            ap[j] = acts + (size_t)j * abytes;
        }
        sl_matmul_rows(&m, ap, (int)nb, y, (size_t)rows, 0, rows, tmp);
        for (int64_t j = 0; j < nb; j++) sl_matmul_rows(&m, ap + j, 1, y1 + j * rows, 0, 0, rows, tmp);
        for (int64_t j = 0; j < nb; j++) {
            const float *want = ref + (size_t)which[j] * (size_t)rows;
            for (int64_t r = 0; r < rows; r++) {
                float a = y[j * rows + r], b = y1[j * rows + r];
                eq_b += memcmp(&a, &want[r], 4) == 0;
                eq_1 += memcmp(&b, &want[r], 4) == 0;
                float c;
                const uint8_t *wr = (const uint8_t *)m.data + (size_t)r * row_bytes;
                if (order == SL_MM_PLAIN) tr->vec_dot(cols, &c, wr, ap[j]);
                else if (order == SL_MM_RP_B32) sl_vec_dot_n_b32_rp(t->type)(cols, &c, wr, ap + j, 1);
                else sl_vec_dot_n_q4_K_rp(order == SL_MM_RP_GEMV ? SL_RP_GEMV : SL_RP_GEMM)(cols, &c, wr, ap + j, 1);
                eq_r += memcmp(&c, &want[r], 4) == 0;
                double rel = fabs((double)a - want[r]) / (fabs((double)want[r]) + 1e-30);
                if (rel > maxrel) maxrel = rel;
                tot++;
            }
        }
        free(which);
    }
    printf("%-28s %-5s rows %-5lld batch=%.1f%% single=%.1f%% rule=%.1f%% (of %lld) maxrel=%.2e\n",
           argv[3], tr->name, (long long)rows, 100.0 * eq_b / tot, 100.0 * eq_1 / tot,
           100.0 * eq_r / tot, tot, maxrel);
    sl_gguf_close(g);
    return 0;
}
