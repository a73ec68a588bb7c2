/* ref_gemma4.c - see ref_gemma4.h. Deliberately simple and slow: every rule
 * below is the text of ARCHS.md section 6 (and the shared machinery of
 * section 0) turned into loops, nothing taken from the engine. */
#include "common/ref_gemma4.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ref_math.h"
#include "gguf/gguf.h"
#include "quant/quant.h"

/* A weight dequantised to f32, its shape, and the type its products round
 * the activations to (common/ref_math.h). */
typedef ref_w w32;

typedef struct g4_layer {
    bool swa, moe;
    int HK, D, n_rot;
    float base;
    w32 attn_norm, wq, wk, wv, wo, qn, kn, post_attn;
    w32 ffn_norm, gate, up, down, post_ffw;
    w32 router, router_s, pre2, post1, post2, gate_x, up_x, gate_up_x, down_x, down_s;
    w32 out_scale;
    float *kc, *vc; /* (n_ctx, HK * D) f32 cache */
} g4_layer;

struct ref_g4 {
    int n_layer, E, H, V, X, k_used, F, Fx, n_swa;
    float eps, softcap;
    w32 embd, out_norm, out, rope_freqs;
    g4_layer *L;
    int cap; /* positions the caches hold */
};

/* ---- loading -------------------------------------------------------------- */

typedef struct loader {
    sl_gguf *g;
    char *eb;
    int ec;
    int bad;
} loader;

static void fail(loader *ld, const char *fmt, const char *a, long long b)
{
    if (ld->bad) return;
    char msg[256];
    snprintf(msg, sizeof msg, fmt, a, b);
    snprintf(ld->eb, (size_t)ld->ec, "ref_g4: %s", msg);
    ld->bad = 1;
}

static w32 load(loader *ld, const char *name, bool required, uint64_t ne0, uint64_t ne1,
                uint64_t ne2)
{
    w32 r = {NULL, -1, {1, 1, 1}};
    if (ld->bad) return r;
    const sl_gguf_tensor *t = sl_gguf_find_tensor(ld->g, name);
    if (!t) {
        if (required) fail(ld, "tensor %s missing%.0lld", name, 0);
        return r;
    }
    const uint64_t want[3] = {ne0, ne1 ? ne1 : 1, ne2 ? ne2 : 1};
    for (int d = 0; d < 3; d++)
        if (t->ne[d] != want[d]) {
            fail(ld, "tensor %s: dimension %lld has the wrong size", name, d);
            return r;
        }
    if (ref_w_read(ld->g, t, &r)) fail(ld, "cannot read tensor %s%.0lld", name, 0);
    return r;
}

static w32 load_l(loader *ld, int l, const char *suffix, bool required, uint64_t ne0,
                  uint64_t ne1, uint64_t ne2)
{
    char name[128];
    snprintf(name, sizeof name, "blk.%d.%s", l, suffix);
    return load(ld, name, required, ne0, ne1, ne2);
}

static bool key_u32(loader *ld, const char *suffix, int *out, bool required)
{
    char k[128];
    snprintf(k, sizeof k, "gemma4.%s", suffix);
    uint32_t v;
    if (sl_gguf_get_u32(ld->g, k, &v)) {
        *out = (int)v;
        return true;
    }
    if (required) fail(ld, "key %s missing%.0lld", k, 0);
    return false;
}

static bool key_f32(loader *ld, const char *suffix, float *out)
{
    char k[128];
    snprintf(k, sizeof k, "gemma4.%s", suffix);
    return sl_gguf_get_f32(ld->g, k, out);
}

/* Element l of an integer or bool array key, or the scalar; dflt if absent. */
static int per_layer(loader *ld, const char *suffix, int l, int dflt)
{
    char k[128];
    snprintf(k, sizeof k, "gemma4.%s", suffix);
    const sl_gguf_array *a = sl_gguf_get_arr(ld->g, k);
    if (a) {
        if ((uint64_t)l >= a->n) {
            fail(ld, "key %s is shorter than the layer count%.0lld", k, 0);
            return dflt;
        }
        if (a->type == SL_GGUF_BOOL) return ((const uint8_t *)a->data)[l] != 0;
        int64_t v;
        return sl_gguf_arr_i64(a, (uint64_t)l, &v) ? (int)v : dflt;
    }
    uint32_t v;
    if (sl_gguf_get_u32(ld->g, k, &v)) return (int)v;
    bool b;
    if (sl_gguf_get_bool(ld->g, k, &b)) return b;
    return dflt;
}

void ref_g4_free(ref_g4 *m)
{
    if (!m) return;
    for (int l = 0; m->L && l < m->n_layer; l++) {
        g4_layer *L = &m->L[l];
        w32 *ws[] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo, &L->qn, &L->kn,
                     &L->post_attn, &L->ffn_norm, &L->gate, &L->up, &L->down, &L->post_ffw,
                     &L->router, &L->router_s, &L->pre2, &L->post1, &L->post2, &L->gate_x,
                     &L->up_x, &L->gate_up_x, &L->down_x, &L->down_s, &L->out_scale};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) free(ws[i]->w);
        free(L->kc);
        free(L->vc);
    }
    free(m->L);
    free(m->embd.w);
    free(m->out_norm.w);
    free(m->out.w);
    free(m->rope_freqs.w);
    free(m);
}

int ref_g4_n_vocab(const ref_g4 *m) { return m->V; }
int ref_g4_layer_slides(const ref_g4 *m, int l) { return m->L[l].swa; }
int ref_g4_window(const ref_g4 *m) { return m->n_swa; }

ref_g4 *ref_g4_load(const char *path, char *errbuf, int errcap)
{
    ref_g4 *m = calloc(1, sizeof *m);
    loader ld = {NULL, errbuf, errcap, 0};
    sl_err err;
    if (!m || sl_gguf_open(&ld.g, path, &err) != 0) {
        snprintf(errbuf, (size_t)errcap, "ref_g4: cannot open %s", path);
        free(m);
        return NULL;
    }
    int D_full = 0, D_swa = 0, rot_full = 0, rot_swa = 0, v = 0;
    key_u32(&ld, "block_count", &m->n_layer, true);
    key_u32(&ld, "embedding_length", &m->E, true);
    key_u32(&ld, "attention.head_count", &m->H, true);
    key_u32(&ld, "feed_forward_length", &m->F, true);
    key_u32(&ld, "attention.key_length", &D_full, true);
    key_u32(&ld, "attention.key_length_swa", &D_swa, true);
    key_u32(&ld, "attention.sliding_window", &m->n_swa, true);
    rot_full = D_full;
    key_u32(&ld, "rope.dimension_count", &rot_full, false);
    rot_swa = rot_full;
    key_u32(&ld, "rope.dimension_count_swa", &rot_swa, false);
    key_u32(&ld, "expert_count", &m->X, false);
    key_u32(&ld, "expert_used_count", &m->k_used, false);
    key_u32(&ld, "expert_feed_forward_length", &m->Fx, false);
    if (key_u32(&ld, "embedding_length_per_layer_input", &v, false) && v)
        fail(&ld, "per-layer embeddings are not implemented%s%.0lld", "", 0);
    if (key_u32(&ld, "attention.shared_kv_layers", &v, false) && v)
        fail(&ld, "KV-shared layers are not implemented%s%.0lld", "", 0);
    m->eps = 1e-6f;
    key_f32(&ld, "attention.layer_norm_rms_epsilon", &m->eps);
    m->softcap = 30.0f; /* the default when the key is absent */
    key_f32(&ld, "final_logit_softcapping", &m->softcap);
    float base_full = 10000.0f, base_swa = 10000.0f;
    key_f32(&ld, "rope.freq_base", &base_full);
    key_f32(&ld, "rope.freq_base_swa", &base_swa);
    const sl_gguf_tensor *te = sl_gguf_find_tensor(ld.g, "token_embd.weight");
    m->V = te ? (int)te->ne[1] : 0;
    if (!te) fail(&ld, "tensor %s missing%.0lld", "token_embd.weight", 0);
    const uint64_t E = (uint64_t)m->E;
    m->embd = load(&ld, "token_embd.weight", true, E, (uint64_t)m->V, 0);
    m->out_norm = load(&ld, "output_norm.weight", true, E, 0, 0);
    m->out = load(&ld, "output.weight", false, E, (uint64_t)m->V, 0);
    m->L = calloc((size_t)(m->n_layer > 0 ? m->n_layer : 1), sizeof *m->L);
    for (int l = 0; !ld.bad && l < m->n_layer; l++) {
        g4_layer *L = &m->L[l];
        L->swa = per_layer(&ld, "attention.sliding_window_pattern", l, 0);
        L->HK = per_layer(&ld, "attention.head_count_kv", l, m->H);
        L->D = L->swa ? D_swa : D_full;
        L->n_rot = L->swa ? rot_swa : rot_full;
        L->base = L->swa ? base_swa : base_full;
        const uint64_t D = (uint64_t)L->D, q = (uint64_t)m->H * D, kv = (uint64_t)L->HK * D;
        L->attn_norm = load_l(&ld, l, "attn_norm.weight", true, E, 0, 0);
        L->wq = load_l(&ld, l, "attn_q.weight", true, E, q, 0);
        L->wk = load_l(&ld, l, "attn_k.weight", true, E, kv, 0);
        L->wv = load_l(&ld, l, "attn_v.weight", false, E, kv, 0);
        L->wo = load_l(&ld, l, "attn_output.weight", true, q, E, 0);
        L->qn = load_l(&ld, l, "attn_q_norm.weight", true, D, 0, 0);
        L->kn = load_l(&ld, l, "attn_k_norm.weight", true, D, 0, 0);
        L->post_attn = load_l(&ld, l, "post_attention_norm.weight", true, E, 0, 0);
        L->out_scale = load_l(&ld, l, "layer_output_scale.weight", false, 1, 0, 0);
        L->ffn_norm = load_l(&ld, l, "ffn_norm.weight", true, E, 0, 0);
        L->gate = load_l(&ld, l, "ffn_gate.weight", true, E, (uint64_t)m->F, 0);
        L->up = load_l(&ld, l, "ffn_up.weight", true, E, (uint64_t)m->F, 0);
        L->down = load_l(&ld, l, "ffn_down.weight", true, (uint64_t)m->F, E, 0);
        L->post_ffw = load_l(&ld, l, "post_ffw_norm.weight", true, E, 0, 0);
        const uint64_t X = (uint64_t)m->X, Fx = (uint64_t)m->Fx;
        L->router = load_l(&ld, l, "ffn_gate_inp.weight", false, E, X, 0);
        L->moe = L->router.w != NULL;
        if (!L->moe) continue;
        L->router_s = load_l(&ld, l, "ffn_gate_inp.scale", true, E, 0, 0);
        L->pre2 = load_l(&ld, l, "pre_ffw_norm_2.weight", true, E, 0, 0);
        L->post1 = load_l(&ld, l, "post_ffw_norm_1.weight", true, E, 0, 0);
        L->post2 = load_l(&ld, l, "post_ffw_norm_2.weight", true, E, 0, 0);
        L->gate_up_x = load_l(&ld, l, "ffn_gate_up_exps.weight", false, E, 2 * Fx, X);
        if (!L->gate_up_x.w) {
            L->gate_x = load_l(&ld, l, "ffn_gate_exps.weight", true, E, Fx, X);
            L->up_x = load_l(&ld, l, "ffn_up_exps.weight", true, E, Fx, X);
        }
        L->down_x = load_l(&ld, l, "ffn_down_exps.weight", true, Fx, E, X);
        L->down_s = load_l(&ld, l, "ffn_down_exps.scale", false, X, 0, 0);
    }
    for (int l = 0; !ld.bad && l < m->n_layer; l++)
        if (!m->L[l].swa && !m->rope_freqs.w)
            m->rope_freqs = load(&ld, "rope_freqs.weight", true, (uint64_t)m->L[l].D / 2, 0, 0);
    sl_gguf_close(ld.g);
    if (ld.bad) {
        ref_g4_free(m);
        return NULL;
    }
    return m;
}

/* ---- the operations ------------------------------------------------------- */

/* y[r] = sum_c W[r][c] x[c] for rows [row0, row0 + rows) of W (rows of cols
 * values), sums in double; a quantised W sees x rounded through its
 * activation type first. */
static void matmul(float *y, const w32 *W, size_t row0, const float *x, int rows, int cols)
{
    ref_matvec(y, W->w + row0 * (size_t)cols, W->act_type, x, rows, cols);
}

/* RMS norm, the sum of squares in double; w NULL: no weight. */
static void rmsnorm(float *o, const float *x, const float *w, int n, float eps)
{
    ref_rmsnorm(o, x, w, n, eps);
}

static float f16_round(float x) { return sl_fp16_to_f32(sl_f32_to_fp16(x)); }

/* GELU, tanh form, on the f16-rounded input, the result rounded to f16;
 * 0 below -10 and the identity above 10. */
static float gelu(float x)
{
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    const float h = f16_round(x);
    const float t = tanhf(0.7978845608f * h * (1.0f + 0.044715f * h * h));
    return f16_round(0.5f * h * (1.0f + t));
}

/* NeoX rope of one head over its first n_rot dimensions, pair i's angle
 * pos * base^(-2i/n_rot) / ff[i] (ff NULL: 1). */
static void rope(float *x, int n_rot, float base, const float *ff, int pos)
{
    for (int i = 0; i < n_rot / 2; i++) {
        double th = pos * pow(base, -2.0 * i / n_rot);
        if (ff) th /= ff[i];
        const double c = cos(th), s = sin(th);
        const double a = x[i], b = x[i + n_rot / 2];
        x[i] = (float)(a * c - b * s);
        x[i + n_rot / 2] = (float)(a * s + b * c);
    }
}

static void softmax(float *p, int n)
{
    float mx = p[0];
    for (int i = 1; i < n; i++) mx = p[i] > mx ? p[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += exp((double)p[i] - mx);
    for (int i = 0; i < n; i++) p[i] = (float)(exp((double)p[i] - mx) / sum);
}

/* The GeGLU MLP out = W_down (gelu(W_gate x) * W_up x) with gate rows at
 * g_row0 of G and up rows at u_row0 of U (an expert's slice or a whole
 * dense matrix), width F, down rows at d_row0 of Dn. */
static void geglu_mlp(float *out, const w32 *G, size_t g_row0, const w32 *U, size_t u_row0,
                      const w32 *Dn, size_t d_row0, const float *x, int E, int F)
{
    float *g = malloc(sizeof(float) * (size_t)F), *u = malloc(sizeof(float) * (size_t)F);
    matmul(g, G, g_row0, x, F, E);
    matmul(u, U, u_row0, x, F, E);
    for (int i = 0; i < F; i++) g[i] = gelu(g[i]) * u[i];
    matmul(out, Dn, d_row0, g, E, F);
    free(g);
    free(u);
}

/* One token at position pos through layer l; x is the residual stream. */
static void layer(ref_g4 *m, int l, float *x, int pos, float *margin)
{
    g4_layer *L = &m->L[l];
    const int E = m->E, H = m->H, HK = L->HK, D = L->D;
    float *h = malloc(sizeof(float) * (size_t)E), *q = malloc(sizeof(float) * (size_t)H * D);
    float *k = malloc(sizeof(float) * (size_t)HK * D), *v = malloc(sizeof(float) * (size_t)HK * D);
    float *o = malloc(sizeof(float) * (size_t)H * D), *a = malloc(sizeof(float) * (size_t)E);
    rmsnorm(h, x, L->attn_norm.w, E, m->eps);
    matmul(q, &L->wq, 0, h, H * D, E);
    matmul(k, &L->wk, 0, h, HK * D, E);
    if (L->wv.w) matmul(v, &L->wv, 0, h, HK * D, E);
    else memcpy(v, k, sizeof(float) * (size_t)HK * D); /* K = V: v is k's projection */
    const float *ff = L->swa ? NULL : m->rope_freqs.w;
    for (int hh = 0; hh < H; hh++) {
        rmsnorm(q + hh * D, q + hh * D, L->qn.w, D, m->eps);
        rope(q + hh * D, L->n_rot, L->base, ff, pos);
    }
    for (int hh = 0; hh < HK; hh++) {
        rmsnorm(k + hh * D, k + hh * D, L->kn.w, D, m->eps);
        rmsnorm(v + hh * D, v + hh * D, NULL, D, m->eps);
        rope(k + hh * D, L->n_rot, L->base, ff, pos);
    }
    memcpy(L->kc + (size_t)pos * HK * D, k, sizeof(float) * (size_t)HK * D);
    memcpy(L->vc + (size_t)pos * HK * D, v, sizeof(float) * (size_t)HK * D);
    const int lo = L->swa && pos + 1 > m->n_swa ? pos + 1 - m->n_swa : 0;
    double *sc = malloc(sizeof(double) * (size_t)(pos + 1));
    for (int hh = 0; hh < H; hh++) {
        const int kvh = hh / (H / HK); /* grouped */
        double mx = -INFINITY, sum = 0.0;
        for (int p = lo; p <= pos; p++) {
            double s = 0.0;
            for (int i = 0; i < D; i++)
                s += (double)q[hh * D + i] * L->kc[((size_t)p * HK + kvh) * D + i];
            sc[p] = s; /* scale 1 */
            mx = s > mx ? s : mx;
        }
        for (int p = lo; p <= pos; p++) sum += sc[p] = exp(sc[p] - mx);
        for (int i = 0; i < D; i++) {
            double acc = 0.0;
            for (int p = lo; p <= pos; p++) acc += sc[p] * L->vc[((size_t)p * HK + kvh) * D + i];
            o[hh * D + i] = (float)(acc / sum);
        }
    }
    free(sc);
    matmul(a, &L->wo, 0, o, E, H * D);
    rmsnorm(a, a, L->post_attn.w, E, m->eps);
    for (int i = 0; i < E; i++) x[i] += a[i]; /* x is now attn_out */

    float *d = malloc(sizeof(float) * (size_t)E);
    rmsnorm(h, x, L->ffn_norm.w, E, m->eps);
    geglu_mlp(d, &L->gate, 0, &L->up, 0, &L->down, 0, h, E, m->F);
    if (L->moe) {
        const int X = m->X, K = m->k_used, Fx = m->Fx;
        rmsnorm(d, d, L->post1.w, E, m->eps);
        /* router: unweighted RMS / sqrt(E) * per-channel scale */
        rmsnorm(h, x, NULL, E, m->eps);
        for (int i = 0; i < E; i++) h[i] = h[i] / sqrtf((float)E) * L->router_s.w[i];
        float *p = malloc(sizeof(float) * (size_t)X);
        matmul(p, &L->router, 0, h, X, E);
        softmax(p, X);
        int *ids = malloc(sizeof(int) * (size_t)K);
        bool *taken = calloc((size_t)X, 1);
        double wsum = 0.0;
        for (int r = 0; r < K; r++) {
            int best = -1;
            for (int e = 0; e < X; e++)
                if (!taken[e] && (best < 0 || p[e] > p[best])) best = e;
            ids[r] = best;
            taken[best] = true;
            wsum += p[best];
        }
        if (margin && K < X) {
            float rej = -1.0f;
            for (int e = 0; e < X; e++)
                if (!taken[e] && p[e] > rej) rej = p[e];
            const float gap = p[ids[K - 1]] - rej;
            if (gap < *margin) *margin = gap;
        }
        float *mi = malloc(sizeof(float) * (size_t)E), *y = calloc((size_t)E, sizeof(float));
        float *eo = malloc(sizeof(float) * (size_t)E);
        rmsnorm(mi, x, L->pre2.w, E, m->eps);
        for (int r = 0; r < K; r++) {
            const int e = ids[r];
            const float w = (float)(p[e] / wsum);
            if (L->gate_up_x.w)
                geglu_mlp(eo, &L->gate_up_x, (size_t)e * 2 * Fx, &L->gate_up_x,
                          (size_t)e * 2 * Fx + Fx, &L->down_x, (size_t)e * E, mi, E, Fx);
            else
                geglu_mlp(eo, &L->gate_x, (size_t)e * Fx, &L->up_x, (size_t)e * Fx, &L->down_x,
                          (size_t)e * E, mi, E, Fx);
            const float s = L->down_s.w ? L->down_s.w[e] : 1.0f;
            for (int i = 0; i < E; i++) y[i] += w * (eo[i] * s);
        }
        rmsnorm(y, y, L->post2.w, E, m->eps);
        for (int i = 0; i < E; i++) d[i] += y[i];
        free(p);
        free(ids);
        free(taken);
        free(mi);
        free(y);
        free(eo);
    }
    rmsnorm(d, d, L->post_ffw.w, E, m->eps);
    const float scale = L->out_scale.w ? L->out_scale.w[0] : 1.0f;
    for (int i = 0; i < E; i++) x[i] = (x[i] + d[i]) * scale;
    free(d);
    free(h);
    free(q);
    free(k);
    free(v);
    free(o);
    free(a);
}

int ref_g4_forward(ref_g4 *m, const int32_t *tokens, int n, float *logits, float *margin)
{
    const int E = m->E, V = m->V;
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= V) return -1;
    for (int l = 0; l < m->n_layer; l++) {
        g4_layer *L = &m->L[l];
        free(L->kc);
        free(L->vc);
        L->kc = malloc(sizeof(float) * (size_t)n * L->HK * L->D);
        L->vc = malloc(sizeof(float) * (size_t)n * L->HK * L->D);
        if (!L->kc || !L->vc) return -1;
    }
    float *x = malloc(sizeof(float) * (size_t)E), *h = malloc(sizeof(float) * (size_t)E);
    if (!x || !h) return -1;
    for (int t = 0; t < n; t++) {
        const float s = sqrtf((float)E);
        for (int i = 0; i < E; i++) x[i] = m->embd.w[(size_t)tokens[t] * E + i] * s;
        float mg = INFINITY;
        for (int l = 0; l < m->n_layer; l++) layer(m, l, x, t, &mg);
        if (margin) margin[t] = mg;
        rmsnorm(h, x, m->out_norm.w, E, m->eps);
        float *lg = logits + (size_t)t * V;
        matmul(lg, m->out.w ? &m->out : &m->embd, 0, h, V, E); /* tied when absent */
        if (m->softcap > 0.0f)
            for (int v = 0; v < V; v++) lg[v] = m->softcap * tanhf(lg[v] / m->softcap);
    }
    free(x);
    free(h);
    return 0;
}
