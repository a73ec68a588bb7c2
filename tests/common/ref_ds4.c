/* ref_ds4.c - see ref_ds4.h. Deliberately plain and slow: each rule of
 * ARCHS.md section 9 as loops over the whole history. */
#include "common/ref_ds4.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ref_math.h"
#include "gguf/gguf.h"

typedef ref_w wt;

typedef struct lay {
    int ratio;
    float clamp, clamp_sh;
    wt hc_fn[2], hc_base[2], hc_scale[2]; /* [0] attention, [1] FFN */
    wt attn_norm, sinks, q_a, q_a_norm, q_b, kv, kv_norm, o_a, o_b;
    wt c_kv, c_gate, c_ape, c_norm;                      /* ratio 4 / 128 */
    wt i_proj, i_q_b, i_kv, i_gate, i_ape, i_norm;       /* ratio 4 */
    wt ffn_norm, router, bias, gx, ux, dx, gs, us, ds;
    int32_t *tid2eid;                                    /* hash layers */
    /* history: per position */
    float *k;          /* [pos][D] roped keys */
    float *ca, *cg;    /* [pos][c D] compressor rows (g with ape) */
    float *ia, *ig;    /* [pos][2 di] */
    float *comp, *ik;  /* [block][D], [block][di] */
} lay;

struct ref_ds4 {
    int n_layer, E, H, D, n_rot, V, q_lora, n_swa, G, R, ih, di, kt, n_hash, iters, X, K;
    float eps, hc_eps, base, comp_base, w_scale, yarn_factor;
    int yarn_orig;
    bool yarn, norm_w;
    wt embd, out_norm, out, head_fn, head_base, head_scale;
    lay *L;
    int cap; /* positions the histories hold */
};

/* ---- loading -------------------------------------------------------------- */

typedef struct ld {
    sl_gguf *g;
    char *eb;
    int ec;
    bool bad;
} ld;

static void fail(ld *l, const char *what)
{
    if (l->bad) return;
    snprintf(l->eb, (size_t)l->ec, "ref_ds4: %s", what);
    l->bad = true;
}

static wt load(ld *l, const char *name, uint64_t n0, uint64_t n1)
{
    wt r = {NULL, -1, {1, 1, 1}};
    if (l->bad) return r;
    const sl_gguf_tensor *t = sl_gguf_find_tensor(l->g, name);
    char msg[192];
    if (!t || t->ne[0] != n0 || t->ne[1] != (n1 ? n1 : 1)) {
        snprintf(msg, sizeof msg, "tensor %s missing or misshapen", name);
        fail(l, msg);
        return r;
    }
    if (ref_w_read(l->g, t, &r)) {
        snprintf(msg, sizeof msg, "cannot read tensor %s", name);
        fail(l, msg);
    }
    return r;
}

static wt load_l(ld *l, int il, const char *suffix, uint64_t n0, uint64_t n1)
{
    char name[128];
    snprintf(name, sizeof name, "blk.%d.%s", il, suffix);
    return load(l, name, n0, n1);
}

static wt load_x(ld *l, int il, const char *suffix, uint64_t n0, uint64_t n1, uint64_t n2)
{
    char name[128];
    snprintf(name, sizeof name, "blk.%d.%s", il, suffix);
    wt r = {NULL, -1, {1, 1, 1}};
    const sl_gguf_tensor *t = l->bad ? NULL : sl_gguf_find_tensor(l->g, name);
    if (!t || t->ne[0] != n0 || t->ne[1] != n1 || t->ne[2] != n2 || ref_w_read(l->g, t, &r))
        fail(l, "an expert tensor is missing or misshapen");
    return r;
}

static int key(ld *l, const char *suffix)
{
    char k[128];
    snprintf(k, sizeof k, "deepseek4.%s", suffix);
    uint32_t v;
    if (sl_gguf_get_u32(l->g, k, &v)) return (int)v;
    fail(l, "a required key is missing");
    return 0;
}

static float keyf(ld *l, const char *suffix, float dflt)
{
    char k[128];
    snprintf(k, sizeof k, "deepseek4.%s", suffix);
    float v;
    return sl_gguf_get_f32(l->g, k, &v) ? v : dflt;
}

/* Entry il of a per-layer array key (or the scalar). */
static double arr(ld *l, const char *suffix, int il)
{
    char k[128];
    snprintf(k, sizeof k, "deepseek4.%s", suffix);
    const sl_gguf_array *a = sl_gguf_get_arr(l->g, k);
    double v = 0;
    if (a && sl_gguf_arr_f64(a, (uint64_t)il, &v)) return v;
    float f;
    if (sl_gguf_get_f32(l->g, k, &f)) return f;
    fail(l, "a per-layer key is missing");
    return 0;
}

static void free_w(wt *w, size_t n)
{
    for (size_t i = 0; i < n; i++) free(w[i].w);
}

void ref_ds4_free(ref_ds4 *m)
{
    if (!m) return;
    for (int i = 0; m->L && i < m->n_layer; i++) {
        lay *y = &m->L[i];
        free_w(y->hc_fn, 2), free_w(y->hc_base, 2), free_w(y->hc_scale, 2);
        wt *ws[] = {&y->attn_norm, &y->sinks, &y->q_a, &y->q_a_norm, &y->q_b, &y->kv,
                    &y->kv_norm, &y->o_a, &y->o_b, &y->c_kv, &y->c_gate, &y->c_ape,
                    &y->c_norm, &y->i_proj, &y->i_q_b, &y->i_kv, &y->i_gate, &y->i_ape,
                    &y->i_norm, &y->ffn_norm, &y->router, &y->bias, &y->gx, &y->ux, &y->dx,
                    &y->gs, &y->us, &y->ds};
        for (size_t j = 0; j < sizeof ws / sizeof ws[0]; j++) free(ws[j]->w);
        free(y->tid2eid);
        free(y->k), free(y->ca), free(y->cg), free(y->ia), free(y->ig), free(y->comp),
            free(y->ik);
    }
    free(m->L);
    wt *g[] = {&m->embd, &m->out_norm, &m->out, &m->head_fn, &m->head_base, &m->head_scale};
    for (size_t j = 0; j < sizeof g / sizeof g[0]; j++) free(g[j]->w);
    free(m);
}

int ref_ds4_n_vocab(const ref_ds4 *m) { return m->V; }

static void load_layer(ld *l, ref_ds4 *m, int il)
{
    lay *y = &m->L[il];
    const uint64_t E = (uint64_t)m->E, D = (uint64_t)m->D, H = (uint64_t)m->H;
    const uint64_t ql = (uint64_t)m->q_lora, di = (uint64_t)m->di, X = (uint64_t)m->X;
    y->ratio = (int)arr(l, "attention.compress_ratios", il);
    y->clamp = (float)arr(l, "swiglu_clamp_exp", il);
    y->clamp_sh = (float)arr(l, "swiglu_clamp_shexp", il);
    const char *hn[2] = {"attn", "ffn"};
    for (int h = 0; h < 2; h++) {
        char s[64];
        snprintf(s, sizeof s, "hc_%s_fn.weight", hn[h]);
        y->hc_fn[h] = load_l(l, il, s, 4 * E, 24);
        snprintf(s, sizeof s, "hc_%s_base.weight", hn[h]);
        y->hc_base[h] = load_l(l, il, s, 24, 0);
        snprintf(s, sizeof s, "hc_%s_scale.weight", hn[h]);
        y->hc_scale[h] = load_l(l, il, s, 3, 0);
    }
    y->attn_norm = load_l(l, il, "attn_norm.weight", E, 0);
    y->sinks = load_l(l, il, "attn_sinks.weight", H, 0);
    y->q_a = load_l(l, il, "attn_q_a.weight", E, ql);
    y->q_a_norm = load_l(l, il, "attn_q_a_norm.weight", ql, 0);
    y->q_b = load_l(l, il, "attn_q_b.weight", ql, H * D);
    y->kv = load_l(l, il, "attn_kv.weight", E, D);
    y->kv_norm = load_l(l, il, "attn_kv_a_norm.weight", D, 0);
    y->o_a = load_l(l, il, "attn_output_a.weight", H * D / (uint64_t)m->G,
                    (uint64_t)(m->G * m->R));
    y->o_b = load_l(l, il, "attn_output_b.weight", (uint64_t)(m->G * m->R), E);
    if (y->ratio) {
        const uint64_t c = y->ratio == 4 ? 2 : 1;
        y->c_kv = load_l(l, il, "attn_compressor_kv.weight", E, c * D);
        y->c_gate = load_l(l, il, "attn_compressor_gate.weight", E, c * D);
        y->c_ape = load_l(l, il, "attn_compressor_ape.weight", c * D, (uint64_t)y->ratio);
        y->c_norm = load_l(l, il, "attn_compressor_norm.weight", D, 0);
    }
    if (y->ratio == 4) {
        y->i_proj = load_l(l, il, "indexer.proj.weight", E, (uint64_t)m->ih);
        y->i_q_b = load_l(l, il, "indexer.attn_q_b.weight", ql, (uint64_t)m->ih * di);
        y->i_kv = load_l(l, il, "indexer_compressor_kv.weight", E, 2 * di);
        y->i_gate = load_l(l, il, "indexer_compressor_gate.weight", E, 2 * di);
        y->i_ape = load_l(l, il, "indexer_compressor_ape.weight", 2 * di, 4);
        y->i_norm = load_l(l, il, "indexer_compressor_norm.weight", di, 0);
    }
    y->ffn_norm = load_l(l, il, "ffn_norm.weight", E, 0);
    y->router = load_l(l, il, "ffn_gate_inp.weight", E, X);
    if (il < m->n_hash) {
        char name[64];
        snprintf(name, sizeof name, "blk.%d.ffn_gate_tid2eid.weight", il);
        const sl_gguf_tensor *t = l->bad ? NULL : sl_gguf_find_tensor(l->g, name);
        sl_err err;
        if (!t || t->type != SL_TYPE_I32 || t->ne[0] != (uint64_t)m->K ||
            t->ne[1] != (uint64_t)m->V || !(y->tid2eid = malloc(t->nbytes)) ||
            sl_gguf_read_tensor(l->g, t, 0, y->tid2eid, t->nbytes, &err))
            fail(l, "the token-id table is missing or misshapen");
    } else {
        y->bias = load_l(l, il, "exp_probs_b.bias", X, 0);
    }
    const uint64_t F = (uint64_t)key(l, "expert_feed_forward_length");
    const uint64_t S = F * (uint64_t)key(l, "expert_shared_count");
    y->gx = load_x(l, il, "ffn_gate_exps.weight", E, F, X);
    y->ux = load_x(l, il, "ffn_up_exps.weight", E, F, X);
    y->dx = load_x(l, il, "ffn_down_exps.weight", F, E, X);
    y->gs = load_l(l, il, "ffn_gate_shexp.weight", E, S);
    y->us = load_l(l, il, "ffn_up_shexp.weight", E, S);
    y->ds = load_l(l, il, "ffn_down_shexp.weight", S, E);
}

ref_ds4 *ref_ds4_load(const char *path, char *eb, int ec)
{
    ld l = {NULL, eb, ec, false};
    sl_err err;
    if (sl_gguf_open(&l.g, path, &err)) {
        snprintf(eb, (size_t)ec, "ref_ds4: %s", err.msg);
        return NULL;
    }
    ref_ds4 *m = calloc(1, sizeof *m);
    const char *a = sl_gguf_get_str(l.g, "general.architecture");
    if (!m || !a || strcmp(a, "deepseek4")) {
        snprintf(eb, (size_t)ec, "ref_ds4: %s is not deepseek4", path);
        sl_gguf_close(l.g);
        free(m);
        return NULL;
    }
    m->n_layer = key(&l, "block_count");
    m->E = key(&l, "embedding_length");
    m->H = key(&l, "attention.head_count");
    m->D = key(&l, "attention.key_length");
    m->n_rot = key(&l, "rope.dimension_count");
    m->q_lora = key(&l, "attention.q_lora_rank");
    m->n_swa = key(&l, "attention.sliding_window");
    m->G = key(&l, "attention.output_group_count");
    m->R = key(&l, "attention.output_lora_rank");
    m->ih = key(&l, "attention.indexer.head_count");
    m->di = key(&l, "attention.indexer.key_length");
    m->kt = key(&l, "attention.indexer.top_k");
    m->n_hash = key(&l, "hash_layer_count");
    m->iters = key(&l, "hyper_connection.sinkhorn_iterations");
    m->X = key(&l, "expert_count");
    m->K = key(&l, "expert_used_count");
    m->eps = keyf(&l, "attention.layer_norm_rms_epsilon", 1e-6f);
    m->hc_eps = keyf(&l, "hyper_connection.epsilon", 1e-6f);
    m->base = keyf(&l, "rope.freq_base", 10000.0f);
    m->comp_base = keyf(&l, "attention.compress_rope_freq_base", 10000.0f);
    m->w_scale = keyf(&l, "expert_weights_scale", 0.0f);
    bool nb = false;
    m->norm_w = sl_gguf_get_bool(l.g, "deepseek4.expert_weights_norm", &nb) && nb;
    const char *st = sl_gguf_get_str(l.g, "deepseek4.rope.scaling.type");
    m->yarn = st && !strcmp(st, "yarn");
    m->yarn_factor = keyf(&l, "rope.scaling.factor", 1.0f);
    uint32_t oc = 4096;
    sl_gguf_get_u32(l.g, "deepseek4.rope.scaling.original_context_length", &oc);
    m->yarn_orig = (int)oc;
    const sl_gguf_tensor *emb = sl_gguf_find_tensor(l.g, "token_embd.weight");
    m->V = emb ? (int)emb->ne[1] : 0;
    const uint64_t E = (uint64_t)m->E, V = (uint64_t)m->V;
    m->embd = load(&l, "token_embd.weight", E, V);
    m->out_norm = load(&l, "output_norm.weight", E, 0);
    m->out = load(&l, "output.weight", E, V);
    m->head_fn = load(&l, "output_hc_fn.weight", 4 * E, 4);
    m->head_base = load(&l, "output_hc_base.weight", 4, 0);
    m->head_scale = load(&l, "output_hc_scale.weight", 1, 0);
    m->L = calloc((size_t)(m->n_layer > 0 ? m->n_layer : 1), sizeof *m->L);
    if (!m->L) fail(&l, "out of memory");
    for (int il = 0; il < m->n_layer && !l.bad; il++) load_layer(&l, m, il);
    sl_gguf_close(l.g);
    if (l.bad) {
        ref_ds4_free(m);
        return NULL;
    }
    return m;
}

/* ---- arithmetic --------------------------------------------------------- */

/* y = W[rows r0 ..) x through the weight's activation rounding. */
static void mv(const wt *w, size_t r0, int rows, int cols, const float *x, float *y)
{
    ref_matvec(y, w->w + r0 * (size_t)cols, w->act_type, x, rows, cols);
}

static void rms(float *y, const float *x, const float *w, int n, float eps)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    const double inv = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) y[i] = (float)(x[i] * inv * (w ? w[i] : 1.0f));
}

static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }

/* NORM rope of the n_rot dims at x, by +theta(pos) or (back) -theta, with
 * base `base` and YaRN when yarn (magnitude 1: DeepSeek-V4's attn factor
 * cancels YaRN's). */
static void rope(const ref_ds4 *m, float *x, int pos, double base, bool yarn, bool back)
{
    const int nr = m->n_rot;
    double lo = 0, hi = 0;
    if (yarn) {
        lo = floor(nr * log(m->yarn_orig / (32.0 * 2 * M_PI)) / (2 * log(base)));
        hi = ceil(nr * log(m->yarn_orig / (1.0 * 2 * M_PI)) / (2 * log(base)));
        if (lo < 0) lo = 0;
        if (hi > nr - 1) hi = nr - 1;
    }
    for (int i = 0; i < nr / 2; i++) {
        double th = pos * pow(base, -2.0 * i / nr);
        if (yarn) {
            double t = (i - lo) / fmax(0.001, hi - lo);
            t = t < 0 ? 0 : t > 1 ? 1 : t;
            const double ramp = 1.0 - t;
            th = th / m->yarn_factor * (1 - ramp) + th * ramp;
        }
        if (back) th = -th;
        const double x0 = x[2 * i], x1 = x[2 * i + 1];
        x[2 * i] = (float)(x0 * cos(th) - x1 * sin(th));
        x[2 * i + 1] = (float)(x0 * sin(th) + x1 * cos(th));
    }
}

/* A layer's rope: the file's base without YaRN on ratio-0 layers, the
 * compress base with YaRN on the others. */
static void rope_l(const ref_ds4 *m, const lay *y, float *x, int pos, bool back)
{
    if (y->ratio) rope(m, x, pos, m->comp_base, m->yarn, back);
    else rope(m, x, pos, m->base, false, back);
}

/* The mixes of one hc half: pre (4), post (4), C[d][s] (16). */
static void hc_mix(const ref_ds4 *m, const float *Xs, const wt *fn, const wt *base,
                   const wt *scale, double *pre, double *post, double C[4][4])
{
    const int W = 4 * m->E;
    float *nx = malloc(sizeof(float) * (size_t)W), mx[24];
    rms(nx, Xs, NULL, W, m->eps);
    mv(fn, 0, 24, W, nx, mx);
    free(nx);
    const float *b = base->w, *k = scale->w;
    for (int s = 0; s < 4; s++) {
        pre[s] = sigm((double)mx[s] * k[0] + b[s]) + m->hc_eps;
        post[s] = 2.0 * sigm((double)mx[4 + s] * k[1] + b[4 + s]);
    }
    for (int d = 0; d < 4; d++)
        for (int s = 0; s < 4; s++) C[d][s] = (double)mx[8 + d + 4 * s] * k[2] + b[8 + d + 4 * s];
    const double e = m->hc_eps;
    for (int s = 0; s < 4; s++) { /* softmax over destinations, + eps */
        double mxv = -INFINITY, sum = 0;
        for (int d = 0; d < 4; d++) mxv = fmax(mxv, C[d][s]);
        for (int d = 0; d < 4; d++) sum += (C[d][s] = exp(C[d][s] - mxv));
        for (int d = 0; d < 4; d++) C[d][s] = C[d][s] / sum + e;
    }
    for (int it = 0; it < m->iters; it++) {
        if (it > 0)
            for (int s = 0; s < 4; s++) {
                double sum = e;
                for (int d = 0; d < 4; d++) sum += C[d][s];
                for (int d = 0; d < 4; d++) C[d][s] /= sum;
            }
        for (int d = 0; d < 4; d++) {
            double sum = e;
            for (int s = 0; s < 4; s++) sum += C[d][s];
            for (int s = 0; s < 4; s++) C[d][s] /= sum;
        }
    }
}

/* X'[d] = post[d] f + sum_s C[d][s] X[s]. */
static void hc_post(const ref_ds4 *m, float *Xs, const float *f, const double *post,
                    double C[4][4])
{
    const int E = m->E;
    float *old = malloc(sizeof(float) * 4 * (size_t)E);
    memcpy(old, Xs, sizeof(float) * 4 * (size_t)E);
    for (int d = 0; d < 4; d++)
        for (int i = 0; i < E; i++) {
            double v = post[d] * f[i];
            for (int s = 0; s < 4; s++) v += C[d][s] * old[(size_t)s * E + i];
            Xs[(size_t)d * E + i] = (float)v;
        }
    free(old);
}

/* Softmax-pooled block row: out[e] = sum_j softmax_j(g_j[e]) a_j[e] over
 * the n entries (a, g pointers to each entry's channel 0). */
static void pool(const float *const *a, const float *const *g, int n, int w, float *out)
{
    for (int e = 0; e < w; e++) {
        double mx = -INFINITY, sum = 0, acc = 0;
        for (int j = 0; j < n; j++) mx = fmax(mx, g[j][e]);
        for (int j = 0; j < n; j++) {
            const double p = exp(g[j][e] - mx);
            sum += p;
            acc += p * a[j][e];
        }
        out[e] = (float)(acc / sum);
    }
}

/* Block b of a compressor (rows a, g of width cw per position) pooled,
 * normed, roped at b r: w values into out. */
static void block_row(const ref_ds4 *m, int r, int b, const float *A, const float *Gs, int w,
                      const wt *norm, float *out)
{
    const float *aa[8], *gg[8];
    int n = 0;
    if (r == 128) {
        const float *a128[128], *g128[128];
        for (int j = 0; j < 128; j++) {
            a128[j] = A + (size_t)(b * 128 + j) * w;
            g128[j] = Gs + (size_t)(b * 128 + j) * w;
        }
        pool(a128, g128, 128, w, out);
    } else {
        const int cw = 2 * w;
        for (int j = 0; b > 0 && j < 4; j++) { /* the previous block: first halves */
            aa[n] = A + (size_t)((b - 1) * 4 + j) * cw;
            gg[n++] = Gs + (size_t)((b - 1) * 4 + j) * cw;
        }
        for (int j = 0; j < 4; j++) { /* its own: second halves */
            aa[n] = A + (size_t)(b * 4 + j) * cw + w;
            gg[n++] = Gs + (size_t)(b * 4 + j) * cw + w;
        }
        pool(aa, gg, n, w, out);
    }
    rms(out, out, norm->w, w, m->eps);
    rope(m, out + (w - m->n_rot), b * r, m->comp_base, m->yarn, false);
}

/* The attention half of layer y for the token at pos: h (the normed
 * input) in, f out (E). */
static void attention(const ref_ds4 *m, lay *y, int pos, const float *h, float *f,
                      float *margin)
{
    const int D = m->D, H = m->H, ql = m->q_lora, nope = D - m->n_rot, E = m->E;
    float *qr = malloc(sizeof(float) * (size_t)ql), *q = malloc(sizeof(float) * (size_t)H * D);
    mv(&y->q_a, 0, ql, E, h, qr);
    rms(qr, qr, y->q_a_norm.w, ql, m->eps);
    mv(&y->q_b, 0, H * D, ql, qr, q);
    for (int i = 0; i < H; i++) {
        rms(q + (size_t)i * D, q + (size_t)i * D, NULL, D, m->eps);
        rope_l(m, y, q + (size_t)i * D + nope, pos, false);
    }
    float *k = y->k + (size_t)pos * D;
    mv(&y->kv, 0, D, E, h, k);
    rms(k, k, y->kv_norm.w, D, m->eps);
    rope_l(m, y, k + nope, pos, false);
    /* compressors: this position's rows, and the block it completes */
    const int r = y->ratio;
    int chosen[4096], n_chosen = 0;
    if (r) {
        const int cw = (r == 4 ? 2 : 1) * D;
        float *ca = y->ca + (size_t)pos * cw, *cg = y->cg + (size_t)pos * cw;
        mv(&y->c_kv, 0, cw, E, h, ca);
        mv(&y->c_gate, 0, cw, E, h, cg);
        for (int i = 0; i < cw; i++) cg[i] += y->c_ape.w[(size_t)(pos % r) * cw + i];
        if ((pos + 1) % r == 0)
            block_row(m, r, pos / r, y->ca, y->cg, D, &y->c_norm, y->comp + (size_t)(pos / r) * D);
    }
    const int n_vis = r ? (pos + 1) / r : 0;
    if (r == 4) {
        const int di = m->di, ih = m->ih;
        float *ia = y->ia + (size_t)pos * 2 * di, *ig = y->ig + (size_t)pos * 2 * di;
        mv(&y->i_kv, 0, 2 * di, E, h, ia);
        mv(&y->i_gate, 0, 2 * di, E, h, ig);
        for (int i = 0; i < 2 * di; i++) ig[i] += y->i_ape.w[(size_t)(pos % 4) * 2 * di + i];
        if ((pos + 1) % 4 == 0)
            block_row(m, 4, pos / 4, y->ia, y->ig, di, &y->i_norm, y->ik + (size_t)(pos / 4) * di);
        float *iq = malloc(sizeof(float) * (size_t)ih * di), wh[4096];
        mv(&y->i_q_b, 0, ih * di, ql, qr, iq);
        for (int i = 0; i < ih; i++) rope(m, iq + (size_t)i * di + (di - m->n_rot), pos, m->comp_base, m->yarn, false);
        mv(&y->i_proj, 0, ih, E, h, wh);
        double *sc = malloc(sizeof(double) * (size_t)(n_vis + 1));
        for (int b = 0; b < n_vis; b++) {
            double s = 0;
            for (int i = 0; i < ih; i++) {
                double d = 0;
                for (int e = 0; e < di; e++) d += (double)iq[(size_t)i * di + e] * y->ik[(size_t)b * di + e];
                s += (double)wh[i] / sqrt((double)di * ih) * (d > 0 ? d : 0);
            }
            sc[b] = s;
        }
        const int keep = n_vis < m->kt ? n_vis : m->kt;
        bool *taken = calloc((size_t)n_vis + 1, 1);
        for (int j = 0; j < keep; j++) { /* the best left, ties to the lower block */
            int best = -1;
            for (int b = 0; b < n_vis; b++)
                if (!taken[b] && (best < 0 || sc[b] > sc[best])) best = b;
            taken[best] = true;
            chosen[n_chosen++] = best;
        }
        if (margin && keep < n_vis) { /* the gap between the last kept and the best left */
            double last = INFINITY, left = -INFINITY;
            for (int b = 0; b < n_vis; b++) {
                if (taken[b]) last = fmin(last, sc[b]);
                else left = fmax(left, sc[b]);
            }
            *margin = fminf(*margin, (float)(last - left));
        }
        free(taken);
        free(sc);
        free(iq);
    } else if (r == 128) {
        for (int b = 0; b < n_vis; b++) chosen[n_chosen++] = b;
    }
    /* attention over the window and the chosen blocks, key = value */
    const int lo = pos - m->n_swa + 1 > 0 ? pos - m->n_swa + 1 : 0;
    const int nk = pos - lo + 1 + n_chosen;
    const float **rows = malloc(sizeof(float *) * (size_t)nk);
    for (int j = lo; j <= pos; j++) rows[j - lo] = y->k + (size_t)j * D;
    for (int c = 0; c < n_chosen; c++) rows[pos - lo + 1 + c] = y->comp + (size_t)chosen[c] * D;
    float *o = malloc(sizeof(float) * (size_t)H * D);
    double *s = malloc(sizeof(double) * (size_t)nk);
    for (int i = 0; i < H; i++) {
        double mx = y->sinks.w[i];
        for (int j = 0; j < nk; j++) {
            double d = 0;
            for (int e = 0; e < D; e++) d += (double)q[(size_t)i * D + e] * rows[j][e];
            s[j] = d / sqrt((double)D);
            mx = fmax(mx, s[j]);
        }
        double sum = exp(y->sinks.w[i] - mx);
        for (int j = 0; j < nk; j++) sum += (s[j] = exp(s[j] - mx));
        for (int e = 0; e < D; e++) {
            double acc = 0;
            for (int j = 0; j < nk; j++) acc += s[j] * rows[j][e];
            o[(size_t)i * D + e] = (float)(acc / sum);
        }
        rope_l(m, y, o + (size_t)i * D + nope, pos, true); /* de-rope by -theta(pos) */
    }
    /* grouped low-rank output */
    const int G = m->G, R = m->R, gw = H * D / G;
    float *z = malloc(sizeof(float) * (size_t)G * R);
    for (int g = 0; g < G; g++) mv(&y->o_a, (size_t)g * R, R, gw, o + (size_t)g * gw, z + (size_t)g * R);
    mv(&y->o_b, 0, E, G * R, z, f);
    free(z), free(s), free(o), free(rows), free(q), free(qr);
}

/* down(silu(min(g, L)) clamp(u, -L, L)) of the slices of expert e. */
static void swiglu(const wt *g, const wt *u, const wt *d, int e, const float *x, int E, float L,
                   float *out)
{
    const int F = (int)g->ne[1];
    float *a = malloc(sizeof(float) * (size_t)F), *b = malloc(sizeof(float) * (size_t)F);
    mv(g, (size_t)e * F, F, E, x, a);
    mv(u, (size_t)e * F, F, E, x, b);
    for (int i = 0; i < F; i++) {
        float gv = a[i], uv = b[i];
        if (L > 1e-6f) {
            gv = gv < L ? gv : L;
            uv = uv < -L ? -L : uv > L ? L : uv;
        }
        a[i] = ref_silu(gv) * uv;
    }
    mv(d, (size_t)e * E, E, F, a, out);
    free(a);
    free(b);
}

static void ffn(const ref_ds4 *m, const lay *y, int token, const float *h, float *f,
                float *margin)
{
    const int E = m->E, X = m->X, K = m->K;
    float lg[4096];
    double p[4096], sel[4096];
    int ids[64];
    mv(&y->router, 0, X, E, h, lg);
    for (int e = 0; e < X; e++) {
        const double l = lg[e];
        p[e] = sqrt(l > 20 ? l : log1p(exp(l)));
        sel[e] = p[e] + (y->bias.w ? y->bias.w[e] : 0.0);
    }
    if (y->tid2eid) {
        for (int r = 0; r < K; r++) ids[r] = y->tid2eid[(size_t)token * K + r];
    } else {
        bool taken[4096] = {false};
        for (int r = 0; r < K; r++) {
            int best = -1;
            for (int e = 0; e < X; e++)
                if (!taken[e] && (best < 0 || sel[e] > sel[best])) best = e;
            taken[best] = true;
            ids[r] = best;
        }
        if (margin && K < X) {
            double left = -INFINITY;
            for (int e = 0; e < X; e++)
                if (!taken[e]) left = fmax(left, sel[e]);
            *margin = fminf(*margin, (float)(sel[ids[K - 1]] - left));
        }
    }
    double w[64], sum = 0;
    for (int r = 0; r < K; r++) sum += (w[r] = p[ids[r]]);
    for (int r = 0; r < K; r++) {
        if (m->norm_w) w[r] /= fmax(sum, 6.103515625e-5);
        if (m->w_scale != 0.0f) w[r] *= m->w_scale;
    }
    float *t = malloc(sizeof(float) * (size_t)E);
    double *acc = calloc((size_t)E, sizeof(double));
    for (int r = 0; r < K; r++) {
        swiglu(&y->gx, &y->ux, &y->dx, ids[r], h, E, y->clamp, t);
        for (int i = 0; i < E; i++) acc[i] += w[r] * t[i];
    }
    swiglu(&y->gs, &y->us, &y->ds, 0, h, E, y->clamp_sh, t);
    for (int i = 0; i < E; i++) f[i] = (float)(acc[i] + t[i]);
    free(acc);
    free(t);
}

/* Room for n positions in every layer's history. */
static int grow(ref_ds4 *m, int n)
{
    if (n <= m->cap) return 0;
    for (int il = 0; il < m->n_layer; il++) {
        lay *y = &m->L[il];
        const size_t N = (size_t)n, D = (size_t)m->D, di = (size_t)m->di;
        const size_t cw = y->ratio == 4 ? 2 * D : D;
        float **ps[] = {&y->k, &y->ca, &y->cg, &y->ia, &y->ig, &y->comp, &y->ik};
        const size_t w[] = {D, cw, cw, 2 * di, 2 * di, D, di};
        for (int j = 0; j < 7; j++) {
            float *nv = realloc(*ps[j], sizeof(float) * N * w[j]);
            if (!nv) return -1;
            *ps[j] = nv;
        }
    }
    m->cap = n;
    return 0;
}

int ref_ds4_forward(ref_ds4 *m, const int32_t *tokens, int n, float *logits, float *margin)
{
    if (grow(m, n)) return -1;
    const int E = m->E, V = m->V;
    float *Xs = malloc(sizeof(float) * 4 * (size_t)E), *u = malloc(sizeof(float) * (size_t)E);
    float *h = malloc(sizeof(float) * (size_t)E), *f = malloc(sizeof(float) * (size_t)E);
    int rc = Xs && u && h && f ? 0 : -1;
    for (int pos = 0; pos < n && !rc; pos++) {
        const int tk = tokens[pos];
        if (tk < 0 || tk >= V) {
            rc = -1;
            break;
        }
        float mg = INFINITY;
        for (int s = 0; s < 4; s++)
            memcpy(Xs + (size_t)s * E, m->embd.w + (size_t)tk * E, sizeof(float) * (size_t)E);
        for (int il = 0; il < m->n_layer; il++) {
            lay *y = &m->L[il];
            for (int half = 0; half < 2; half++) {
                double pre[4], post[4], C[4][4];
                hc_mix(m, Xs, &y->hc_fn[half], &y->hc_base[half], &y->hc_scale[half], pre, post,
                       C);
                for (int i = 0; i < E; i++) {
                    double v = 0;
                    for (int s = 0; s < 4; s++) v += pre[s] * Xs[(size_t)s * E + i];
                    u[i] = (float)v;
                }
                if (half == 0) {
                    rms(h, u, y->attn_norm.w, E, m->eps);
                    attention(m, y, pos, h, f, &mg);
                } else {
                    rms(h, u, y->ffn_norm.w, E, m->eps);
                    ffn(m, y, tk, h, f, &mg);
                }
                hc_post(m, Xs, f, post, C);
            }
        }
        /* the hc head */
        float *nx = malloc(sizeof(float) * 4 * (size_t)E), mx[4];
        rms(nx, Xs, NULL, 4 * E, m->eps);
        mv(&m->head_fn, 0, 4, 4 * E, nx, mx);
        free(nx);
        double pre[4];
        for (int s = 0; s < 4; s++)
            pre[s] = sigm((double)mx[s] * m->head_scale.w[0] + m->head_base.w[s]) + m->hc_eps;
        for (int i = 0; i < E; i++) {
            double v = 0;
            for (int s = 0; s < 4; s++) v += pre[s] * Xs[(size_t)s * E + i];
            u[i] = (float)v;
        }
        rms(h, u, m->out_norm.w, E, m->eps);
        mv(&m->out, 0, V, E, h, logits + (size_t)pos * V);
        if (margin) margin[pos] = mg;
    }
    free(Xs), free(u), free(h), free(f);
    return rc;
}
