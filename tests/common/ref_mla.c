/* ref_mla.c - see ref_mla.h. Deliberately plain and slow: each rule is the
 * text of ARCHS.md sections 0, 3 and 4 as loops, nothing from the engine. */
#include "common/ref_mla.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ref_math.h"
#include "gguf/gguf.h"
#include "quant/quant.h"

/* A weight dequantised to f32, row-major, its shape and activation type
 * (common/ref_math.h). */
typedef ref_w wt;

typedef struct lay {
    bool dense;
    wt attn_norm, ffn_norm;
    wt wq, wq_a, q_a_norm, wq_b, wkv_a, kv_a_norm, wk_b, wv_b;  /* deepseek2 */
    wt wk, wv, bq, bk, bv, qn, kn;                            /* glm4moe */
    wt wo;
    wt gate, up, down;                                         /* dense */
    wt router, sel_b, gx, ux, dx, gs, us, ds;                  /* routed, shared */
} lay;

struct ref_ds {
    bool mla;
    int n_layer, E, H, HK, D, n_rot, V, n_dense;
    int q_lora, r, hd, hdv;                 /* MLA */
    int X, K, G, G_used, gating;
    bool norm_w;
    float w_scale, eps, base;
    bool yarn;
    float yarn_factor, log_mul;
    int yarn_orig;
    wt embd, out_norm, out;
    lay *L;
    float *cache;                            /* [layer][pos][width] */
    int cache_w, cache_cap;
};

/* ---- loading ---------------------------------------------------------------- */

typedef struct ld {
    sl_gguf *g;
    const char *arch;
    char *eb;
    int ec;
    bool bad;
} ld;

static void fail(ld *l, const char *fmt, const char *what)
{
    if (l->bad) return;
    snprintf(l->eb, (size_t)l->ec, fmt, what);
    l->bad = true;
}

static wt load(ld *l, const char *name, bool required, uint64_t n0, uint64_t n1, uint64_t n2)
{
    wt r = {NULL, -1, {1, 1, 1}};
    if (l->bad) return r;
    const sl_gguf_tensor *t = sl_gguf_find_tensor(l->g, name);
    if (!t) {
        if (required) fail(l, "ref_mla: tensor %s missing", name);
        return r;
    }
    if (t->ne[0] != n0 || t->ne[1] != (n1 ? n1 : 1) || t->ne[2] != (n2 ? n2 : 1)) {
        fail(l, "ref_mla: tensor %s has an unexpected shape", name);
        return r;
    }
    if (ref_w_read(l->g, t, &r)) fail(l, "ref_mla: cannot read tensor %s", name);
    return r;
}

static wt load_l(ld *l, int il, const char *suffix, bool required, uint64_t n0, uint64_t n1,
                 uint64_t n2)
{
    char name[128];
    snprintf(name, sizeof name, "blk.%d.%s", il, suffix);
    return load(l, name, required, n0, n1, n2);
}

static int key(ld *l, const char *suffix, bool required, int dflt)
{
    char k[128];
    snprintf(k, sizeof k, "%s.%s", l->arch, suffix);
    uint32_t v;
    if (sl_gguf_get_u32(l->g, k, &v)) return (int)v;
    if (required) fail(l, "ref_mla: key %s missing", k);
    return dflt;
}

static float keyf(ld *l, const char *suffix, float dflt)
{
    char k[128];
    snprintf(k, sizeof k, "%s.%s", l->arch, suffix);
    float v;
    return sl_gguf_get_f32(l->g, k, &v) ? v : dflt;
}

void ref_ds_free(ref_ds *m)
{
    if (!m) return;
    for (int i = 0; m->L && i < m->n_layer; i++) {
        wt *w = &m->L[i].attn_norm;
        const size_t n = (sizeof(lay) - ((char *)w - (char *)&m->L[i])) / sizeof(wt);
        for (size_t j = 0; j < n; j++) free(w[j].w);
    }
    free(m->L);
    free(m->embd.w);
    free(m->out_norm.w);
    free(m->out.w);
    free(m->cache);
    free(m);
}

int ref_ds_n_vocab(const ref_ds *m) { return m->V; }

ref_ds *ref_ds_load(const char *path, char *eb, int ec)
{
    ld l = {NULL, NULL, eb, ec, false};
    sl_err err;
    if (sl_gguf_open(&l.g, path, &err)) {
        snprintf(eb, (size_t)ec, "ref_mla: %s", err.msg);
        return NULL;
    }
    ref_ds *m = calloc(1, sizeof *m);
    l.arch = sl_gguf_get_str(l.g, "general.architecture");
    if (!m || !l.arch || (strcmp(l.arch, "deepseek2") && strcmp(l.arch, "glm4moe"))) {
        snprintf(eb, (size_t)ec, "ref_mla: %s is not deepseek2 or glm4moe", path);
        sl_gguf_close(l.g);
        free(m);
        return NULL;
    }
    m->mla = !strcmp(l.arch, "deepseek2");
    m->n_layer = key(&l, "block_count", true, 0) - key(&l, "nextn_predict_layers", false, 0);
    m->E = key(&l, "embedding_length", true, 0);
    m->H = key(&l, "attention.head_count", true, 1);
    m->HK = key(&l, "attention.head_count_kv", false, m->H);
    m->n_dense = key(&l, "leading_dense_block_count", false, 0);
    m->X = key(&l, "expert_count", true, 0);
    m->K = key(&l, "expert_used_count", true, 0);
    m->G = key(&l, "expert_group_count", false, 0);
    m->G_used = key(&l, "expert_group_used_count", false, 0);
    /* absent: softmax for deepseek2, sigmoid for glm4moe (their loaders) */
    m->gating = key(&l, "expert_gating_func", false, m->mla ? 1 : 2);
    m->w_scale = keyf(&l, "expert_weights_scale", 0.0f);
    char k[128];
    snprintf(k, sizeof k, "%s.expert_weights_norm", l.arch);
    bool nb = false;
    m->norm_w = sl_gguf_get_bool(l.g, k, &nb) && nb;
    m->eps = keyf(&l, "attention.layer_norm_rms_epsilon", 0.0f);
    m->base = keyf(&l, "rope.freq_base", 10000.0f);
    const int F = key(&l, "expert_feed_forward_length", true, 0);
    const int n_ff = key(&l, "feed_forward_length", false, 0);
    const int S = key(&l, "expert_shared_count", false, 0);
    if (m->mla) {
        m->q_lora = key(&l, "attention.q_lora_rank", false, 0);
        m->r = key(&l, "attention.kv_lora_rank", true, 0);
        m->hd = key(&l, "attention.key_length_mla", true, 0);
        m->hdv = key(&l, "attention.value_length_mla", true, 0);
        m->n_rot = key(&l, "rope.dimension_count", true, 0);
        snprintf(k, sizeof k, "%s.rope.scaling.type", l.arch);
        const char *st = sl_gguf_get_str(l.g, k);
        m->yarn = st && !strcmp(st, "yarn");
        m->yarn_factor = keyf(&l, "rope.scaling.factor", 1.0f);
        m->yarn_orig = key(&l, "rope.scaling.original_context_length", false,
                           key(&l, "context_length", false, 4096));
        m->log_mul = keyf(&l, "rope.scaling.yarn_log_multiplier", 0.0f) / 0.1f;
    } else {
        m->D = key(&l, "attention.key_length", false, m->E / m->H);
        m->n_rot = key(&l, "rope.dimension_count", false, m->D);
    }
    if (l.bad || m->n_layer < 1 || m->K < 1 || m->K > m->X) fail(&l, "ref_mla: %s", "bad keys");
    const sl_gguf_tensor *te = sl_gguf_find_tensor(l.g, "token_embd.weight");
    m->V = te ? (int)te->ne[1] : 0;
    m->embd = load(&l, "token_embd.weight", true, (uint64_t)m->E, (uint64_t)m->V, 0);
    m->out_norm = load(&l, "output_norm.weight", true, (uint64_t)m->E, 0, 0);
    m->out = load(&l, "output.weight", false, (uint64_t)m->E, (uint64_t)m->V, 0);
    m->L = calloc((size_t)(m->n_layer > 0 ? m->n_layer : 1), sizeof *m->L);
    const uint64_t E = (uint64_t)m->E, H = (uint64_t)m->H, X = (uint64_t)m->X;
    for (int i = 0; i < m->n_layer && !l.bad && m->L; i++) {
        lay *L = &m->L[i];
        L->attn_norm = load_l(&l, i, "attn_norm.weight", true, E, 0, 0);
        if (m->mla) {
            const uint64_t hd = (uint64_t)m->hd, r = (uint64_t)m->r;
            if (m->q_lora) {
                L->wq_a = load_l(&l, i, "attn_q_a.weight", true, E, (uint64_t)m->q_lora, 0);
                L->q_a_norm = load_l(&l, i, "attn_q_a_norm.weight", true, (uint64_t)m->q_lora, 0, 0);
                L->wq_b = load_l(&l, i, "attn_q_b.weight", true, (uint64_t)m->q_lora, H * hd, 0);
            } else {
                L->wq = load_l(&l, i, "attn_q.weight", true, E, H * hd, 0);
            }
            L->wkv_a = load_l(&l, i, "attn_kv_a_mqa.weight", true, E, r + (uint64_t)m->n_rot, 0);
            L->kv_a_norm = load_l(&l, i, "attn_kv_a_norm.weight", true, r, 0, 0);
            L->wk_b = load_l(&l, i, "attn_k_b.weight", true, hd - (uint64_t)m->n_rot, r, H);
            L->wv_b = load_l(&l, i, "attn_v_b.weight", true, r, (uint64_t)m->hdv, H);
            L->wo = load_l(&l, i, "attn_output.weight", true, H * (uint64_t)m->hdv, E, 0);
            L->ffn_norm = load_l(&l, i, "ffn_norm.weight", true, E, 0, 0);
        } else {
            const uint64_t q = H * (uint64_t)m->D, kv = (uint64_t)m->HK * (uint64_t)m->D;
            L->wq = load_l(&l, i, "attn_q.weight", true, E, q, 0);
            L->wk = load_l(&l, i, "attn_k.weight", true, E, kv, 0);
            L->wv = load_l(&l, i, "attn_v.weight", true, E, kv, 0);
            L->bq = load_l(&l, i, "attn_q.bias", false, q, 0, 0);
            L->bk = load_l(&l, i, "attn_k.bias", false, kv, 0, 0);
            L->bv = load_l(&l, i, "attn_v.bias", false, kv, 0, 0);
            L->qn = load_l(&l, i, "attn_q_norm.weight", false, (uint64_t)m->D, 0, 0);
            L->kn = load_l(&l, i, "attn_k_norm.weight", false, (uint64_t)m->D, 0, 0);
            L->wo = load_l(&l, i, "attn_output.weight", true, q, E, 0);
            L->ffn_norm = load_l(&l, i, "post_attention_norm.weight", true, E, 0, 0);
        }
        L->dense = i < m->n_dense;
        if (L->dense) {
            L->gate = load_l(&l, i, "ffn_gate.weight", true, E, (uint64_t)n_ff, 0);
            L->up = load_l(&l, i, "ffn_up.weight", true, E, (uint64_t)n_ff, 0);
            L->down = load_l(&l, i, "ffn_down.weight", true, (uint64_t)n_ff, E, 0);
        } else {
            L->router = load_l(&l, i, "ffn_gate_inp.weight", true, E, X, 0);
            L->sel_b = load_l(&l, i, "exp_probs_b.bias", false, X, 0, 0);
            L->gx = load_l(&l, i, "ffn_gate_exps.weight", true, E, (uint64_t)F, X);
            L->ux = load_l(&l, i, "ffn_up_exps.weight", true, E, (uint64_t)F, X);
            L->dx = load_l(&l, i, "ffn_down_exps.weight", true, (uint64_t)F, E, X);
            if (S > 0) {
                const uint64_t W = (uint64_t)F * (uint64_t)S;
                L->gs = load_l(&l, i, "ffn_gate_shexp.weight", true, E, W, 0);
                L->us = load_l(&l, i, "ffn_up_shexp.weight", true, E, W, 0);
                L->ds = load_l(&l, i, "ffn_down_shexp.weight", true, W, E, 0);
            }
        }
    }
    sl_gguf_close(l.g);
    if (l.bad || !m->L) {
        ref_ds_free(m);
        return NULL;
    }
    return m;
}

/* ---- the arithmetic ----------------------------------------------------- */

/* y[0..rows) = W[row0 ..] x, x rounded through W's activation type. */
static void mv(const wt *W, size_t row0, int rows, int cols, const float *x, float *y)
{
    ref_matvec(y, W->w + row0 * (size_t)cols, W->act_type, x, rows, cols);
}

/* x[0..n) rounded through W's activation type (nothing for f32 weights). */
static void round_act(const wt *W, float *x, int n)
{
    ref_round_act(W->act_type, x, n);
}

static void rms(float *y, const float *x, const float *w, int n, float eps)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    const double inv = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) y[i] = (float)(x[i] * inv * (w ? w[i] : 1.0f));
}

/* Rotates one head's n_rot dims at x (NORM: adjacent pairs; NEOX: halves)
 * for position pos, with YaRN when the model has it (ARCHS.md section 0;
 * DeepSeek's magnitude is 1: the scale carries mscale). */
static void rope(const ref_ds *m, float *x, int pos, bool neox)
{
    const int nr = m->n_rot;
    double lo = 0, hi = 0;
    if (m->yarn) {
        const double b = m->base;
        lo = floor(nr * log(m->yarn_orig / (32.0 * 2 * M_PI)) / (2 * log(b)));
        hi = ceil(nr * log(m->yarn_orig / (1.0 * 2 * M_PI)) / (2 * log(b)));
        if (lo < 0) lo = 0;
        if (hi > nr - 1) hi = nr - 1;
    }
    for (int i = 0; i < nr / 2; i++) {
        double th = pos * pow(m->base, -2.0 * i / nr);
        if (m->yarn) {
            double t = (i - lo) / fmax(0.001, hi - lo);
            t = t < 0 ? 0 : t > 1 ? 1 : t;
            const double ramp = 1.0 - t;
            th = th / m->yarn_factor * (1 - ramp) + th * ramp;
        }
        const int a = neox ? i : 2 * i, b = neox ? i + nr / 2 : 2 * i + 1;
        const double x0 = x[a], x1 = x[b];
        x[a] = (float)(x0 * cos(th) - x1 * sin(th));
        x[b] = (float)(x0 * sin(th) + x1 * cos(th));
    }
}


/* SwiGLU through gate/up/down slices (expert e; e = 0 for 2-D). */
static void swiglu(const wt *g, const wt *u, const wt *d, int e, const float *x, int E,
                   float *out)
{
    const int F = (int)g->ne[1];
    float *a = malloc(sizeof(float) * (size_t)F), *b = malloc(sizeof(float) * (size_t)F);
    mv(g, (size_t)e * F, F, E, x, a);
    mv(u, (size_t)e * F, F, E, x, b);
    for (int i = 0; i < F; i++) a[i] = ref_silu(a[i]) * b[i];
    mv(d, (size_t)e * E, E, F, a, out);
    free(a);
    free(b);
}

/* The routed FFN of ARCHS.md section 0 (MoE block) plus the ungated shared
 * expert; returns the selection margin. */
static double moe(const ref_ds *m, const lay *L, const float *h, float *out)
{
    const int E = m->E, X = m->X, K = m->K;
    float *lg = malloc(sizeof(float) * (size_t)X);
    double *p = malloc(sizeof(double) * (size_t)X), *sel = malloc(sizeof(double) * (size_t)X);
    mv(&L->router, 0, X, E, h, lg);
    if (m->gating == 2) {
        for (int e = 0; e < X; e++) p[e] = 1.0 / (1.0 + exp(-(double)lg[e]));
    } else {
        double mx = lg[0], s = 0;
        for (int e = 1; e < X; e++) mx = fmax(mx, lg[e]);
        for (int e = 0; e < X; e++) s += exp(lg[e] - mx);
        for (int e = 0; e < X; e++) p[e] = exp(lg[e] - mx) / s;
    }
    for (int e = 0; e < X; e++) sel[e] = p[e] + (L->sel_b.w ? L->sel_b.w[e] : 0.0);
    if (m->G > 1) { /* groups scored by their top two; the best G_used kept */
        const int per = X / m->G;
        double gs[256];
        bool keep[256];
        for (int g = 0; g < m->G; g++) {
            double a = -INFINITY, b = -INFINITY;
            for (int e = g * per; e < (g + 1) * per; e++) {
                if (sel[e] > a) {
                    b = a;
                    a = sel[e];
                } else if (sel[e] > b) {
                    b = sel[e];
                }
            }
            gs[g] = a + b;
            keep[g] = false;
        }
        for (int j = 0; j < m->G_used; j++) {
            int best = -1;
            for (int g = 0; g < m->G; g++)
                if (!keep[g] && (best < 0 || gs[g] > gs[best])) best = g;
            keep[best] = true;
        }
        for (int e = 0; e < X; e++)
            if (!keep[e / per]) sel[e] = -INFINITY;
    }
    int ids[64];
    bool *taken = calloc((size_t)X, 1);
    for (int r = 0; r < K; r++) {
        int best = -1;
        for (int e = 0; e < X; e++)
            if (!taken[e] && (best < 0 || sel[e] > sel[best])) best = e;
        taken[best] = true;
        ids[r] = best;
    }
    double next = -INFINITY;
    for (int e = 0; e < X; e++)
        if (!taken[e] && sel[e] > next) next = sel[e];
    const double margin = isinf(next) ? INFINITY : sel[ids[K - 1]] - next;
    double w[64], sum = 0;
    for (int r = 0; r < K; r++) sum += w[r] = p[ids[r]];
    for (int r = 0; r < K; r++) {
        if (m->norm_w) w[r] /= fmax(sum, 6.103515625e-5);
        if (m->w_scale != 0.0f && m->w_scale != 1.0f) w[r] *= m->w_scale;
    }
    float *y = malloc(sizeof(float) * (size_t)E);
    double *acc = calloc((size_t)E, sizeof(double));
    for (int r = 0; r < K; r++) {
        swiglu(&L->gx, &L->ux, &L->dx, ids[r], h, E, y);
        for (int i = 0; i < E; i++) acc[i] += w[r] * y[i];
    }
    if (L->gs.w) {
        swiglu(&L->gs, &L->us, &L->ds, 0, h, E, y);
        for (int i = 0; i < E; i++) acc[i] += y[i];
    }
    for (int i = 0; i < E; i++) out[i] = (float)acc[i];
    free(y);
    free(acc);
    free(taken);
    free(lg);
    free(p);
    free(sel);
    return margin;
}

/* softmax(scores) over n positions, in double */
static void softmax_d(double *s, int n)
{
    double mx = s[0], sum = 0;
    for (int j = 1; j < n; j++) mx = fmax(mx, s[j]);
    for (int j = 0; j < n; j++) sum += s[j] = exp(s[j] - mx);
    for (int j = 0; j < n; j++) s[j] /= sum;
}

/* MLA in the expanded form: per head, keys [W_kb^T c_j | k_pe_j] and
 * values W_vb c_j from each cached latent. */
static void mla(ref_ds *m, const lay *L, int il, const float *h, int pos, float *out)
{
    const int E = m->E, H = m->H, r = m->r, rot = m->n_rot, hd = m->hd, nope = hd - rot;
    const int hdv = m->hdv, W = r + rot;
    float *q = malloc(sizeof(float) * (size_t)(H * hd));
    if (m->q_lora) {
        float *c = malloc(sizeof(float) * (size_t)m->q_lora);
        mv(&L->wq_a, 0, m->q_lora, E, h, c);
        rms(c, c, L->q_a_norm.w, m->q_lora, m->eps);
        mv(&L->wq_b, 0, H * hd, m->q_lora, c, q);
        free(c);
    } else {
        mv(&L->wq, 0, H * hd, E, h, q);
    }
    float *row = m->cache + ((size_t)il * m->cache_cap + (size_t)pos) * (size_t)W;
    mv(&L->wkv_a, 0, W, E, h, row);
    rope(m, row + r, pos, false);
    rms(row, row, L->kv_a_norm.w, r, m->eps);
    for (int hh = 0; hh < H; hh++) rope(m, q + hh * hd + nope, pos, false);
    const double mscale = m->yarn ? 1.0 + 0.1 * m->log_mul * log(m->yarn_factor) : 1.0;
    const double scale = mscale * mscale / sqrt((double)hd);
    const int n = pos + 1;
    double *s = malloc(sizeof(double) * (size_t)n);
    float *o = malloc(sizeof(float) * (size_t)(H * hdv));
    float *lat = malloc(sizeof(float) * (size_t)r);
    for (int hh = 0; hh < H; hh++) {
        const float *kb = L->wk_b.w + (size_t)hh * r * nope; /* [r][nope] */
        const float *vb = L->wv_b.w + (size_t)hh * hdv * r;  /* [hdv][r] */
        /* a quantised attn_k_b's product reads q_nope rounded to its
         * activation type (llama.cpp multiplies q_nope by it) */
        round_act(&L->wk_b, q + hh * hd, nope);
        for (int j = 0; j < n; j++) {
            const float *cj = m->cache + ((size_t)il * m->cache_cap + (size_t)j) * (size_t)W;
            double dot = 0;
            for (int d = 0; d < nope; d++) {
                double kn = 0; /* k_nope[d] = sum_c kb[c][d] c_j[c] */
                for (int c = 0; c < r; c++) kn += (double)kb[(size_t)c * nope + d] * cj[c];
                dot += kn * q[hh * hd + d];
            }
            for (int d = 0; d < rot; d++) dot += (double)q[hh * hd + nope + d] * cj[r + d];
            s[j] = dot * scale;
        }
        softmax_d(s, n);
        if (L->wv_b.act_type >= 0) {
            /* a quantised attn_v_b reads the attention's latent output
             * rounded: its product can only follow the softmax */
            for (int c = 0; c < r; c++) {
                double acc = 0;
                for (int j = 0; j < n; j++)
                    acc += s[j] * m->cache[((size_t)il * m->cache_cap + (size_t)j) * (size_t)W + c];
                lat[c] = (float)acc;
            }
            mv(&L->wv_b, (size_t)hh * hdv, hdv, r, lat, o + hh * hdv);
            continue;
        }
        for (int d = 0; d < hdv; d++) {
            double acc = 0;
            for (int j = 0; j < n; j++) {
                const float *cj = m->cache + ((size_t)il * m->cache_cap + (size_t)j) * (size_t)W;
                double v = 0;
                for (int c = 0; c < r; c++) v += (double)vb[(size_t)d * r + c] * cj[c];
                acc += s[j] * v;
            }
            o[hh * hdv + d] = (float)acc;
        }
    }
    mv(&L->wo, 0, E, H * hdv, o, out);
    free(lat);
    free(q);
    free(s);
    free(o);
}

/* glm4moe attention: biases, optional per-head q/k norms, NEOX partial rope,
 * grouped-query softmax attention scaled by 1/sqrt(D). */
static void gqa(ref_ds *m, const lay *L, int il, const float *h, int pos, float *out)
{
    const int E = m->E, H = m->H, HK = m->HK, D = m->D, W = 2 * HK * D;
    float *q = malloc(sizeof(float) * (size_t)(H * D));
    float *row = m->cache + ((size_t)il * m->cache_cap + (size_t)pos) * (size_t)W;
    float *k = row, *v = row + HK * D;
    mv(&L->wq, 0, H * D, E, h, q);
    mv(&L->wk, 0, HK * D, E, h, k);
    mv(&L->wv, 0, HK * D, E, h, v);
    for (int i = 0; L->bq.w && i < H * D; i++) q[i] += L->bq.w[i];
    for (int i = 0; L->bk.w && i < HK * D; i++) k[i] += L->bk.w[i];
    for (int i = 0; L->bv.w && i < HK * D; i++) v[i] += L->bv.w[i];
    for (int hh = 0; hh < H; hh++) {
        if (L->qn.w) rms(q + hh * D, q + hh * D, L->qn.w, D, m->eps);
        rope(m, q + hh * D, pos, true);
    }
    for (int hh = 0; hh < HK; hh++) {
        if (L->kn.w) rms(k + hh * D, k + hh * D, L->kn.w, D, m->eps);
        rope(m, k + hh * D, pos, true);
    }
    const int n = pos + 1;
    double *s = malloc(sizeof(double) * (size_t)n);
    float *o = malloc(sizeof(float) * (size_t)(H * D));
    for (int hh = 0; hh < H; hh++) {
        const int kh = hh / (H / HK);
        for (int j = 0; j < n; j++) {
            const float *kj = m->cache + ((size_t)il * m->cache_cap + (size_t)j) * (size_t)W;
            double dot = 0;
            for (int d = 0; d < D; d++) dot += (double)q[hh * D + d] * kj[kh * D + d];
            s[j] = dot / sqrt((double)D);
        }
        softmax_d(s, n);
        for (int d = 0; d < D; d++) {
            double acc = 0;
            for (int j = 0; j < n; j++) {
                const float *vj =
                    m->cache + ((size_t)il * m->cache_cap + (size_t)j) * (size_t)W + HK * D;
                acc += s[j] * vj[kh * D + d];
            }
            o[hh * D + d] = (float)acc;
        }
    }
    mv(&L->wo, 0, E, H * D, o, out);
    free(q);
    free(s);
    free(o);
}

int ref_ds_forward(ref_ds *m, const int32_t *tokens, int n, float *logits, float *margin)
{
    const int E = m->E;
    m->cache_w = m->mla ? m->r + m->n_rot : 2 * m->HK * m->D;
    m->cache_cap = n;
    free(m->cache);
    m->cache = malloc(sizeof(float) * (size_t)m->n_layer * (size_t)n * (size_t)m->cache_w);
    float *x = malloc(sizeof(float) * (size_t)E), *h = malloc(sizeof(float) * (size_t)E);
    float *y = malloc(sizeof(float) * (size_t)E);
    if (!m->cache || !x || !h || !y) {
        free(x);
        free(h);
        free(y);
        return -1;
    }
    for (int t = 0; t < n; t++) {
        if (tokens[t] < 0 || tokens[t] >= m->V) {
            free(x);
            free(h);
            free(y);
            return -1;
        }
        memcpy(x, m->embd.w + (size_t)tokens[t] * E, sizeof(float) * (size_t)E);
        double mg = INFINITY;
        for (int il = 0; il < m->n_layer; il++) {
            const lay *L = &m->L[il];
            rms(h, x, L->attn_norm.w, E, m->eps);
            if (m->mla)
                mla(m, L, il, h, t, y);
            else
                gqa(m, L, il, h, t, y);
            for (int i = 0; i < E; i++) x[i] += y[i];
            rms(h, x, L->ffn_norm.w, E, m->eps);
            if (L->dense) {
                swiglu(&L->gate, &L->up, &L->down, 0, h, E, y);
            } else {
                const double g = moe(m, L, h, y);
                if (g < mg) mg = g;
            }
            for (int i = 0; i < E; i++) x[i] += y[i];
        }
        rms(h, x, m->out_norm.w, E, m->eps);
        mv(m->out.w ? &m->out : &m->embd, 0, m->V, E, h, logits + (size_t)t * m->V);
        if (margin) margin[t] = (float)mg;
    }
    free(x);
    free(h);
    free(y);
    return 0;
}
