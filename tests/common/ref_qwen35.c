/* ref_qwen35.c - see ref_qwen35.h. Deliberately simple and slow: every rule
 * below is the text of ARCHS.md section 1 (and the shared machinery of
 * section 0) turned into loops, nothing taken from the engine. */
#include "common/ref_qwen35.h"

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

typedef struct q35_layer {
    bool linear;
    w32 attn_norm, post_norm;
    /* full attention */
    w32 wq, wk, wv, wqkv_full, wo, qn, kn;
    /* gated DeltaNet */
    w32 wqkv, wz, conv, dt, a, wbeta, walpha, ssm_norm, ssm_out;
    /* FFN */
    w32 router, gate_x, up_x, gate_up_x, down_x, sh_gate_inp, gate_s, up_s, down_s;
} q35_layer;

struct ref_q35 {
    int n_layer, E, H, HK, D, n_rot, V;
    int X, k_used, F, Fs;
    int K, ds, nk, nv; /* conv kernel, state size, q/k heads, v heads */
    int sections[4];
    float eps, base;
    bool kv_f16; /* K and V cached as f16 values (llama.cpp's default) */
    w32 embd, out_norm, out;
    q35_layer *L;
};

/* ---- loading -------------------------------------------------------------- */

typedef struct loader {
    sl_gguf *g;
    char *eb;
    int ec;
    int bad;
} loader;

static w32 load(loader *ld, const char *name, bool required)
{
    w32 r = {NULL, -1, {1, 1, 1}};
    if (ld->bad) return r;
    const sl_gguf_tensor *t = sl_gguf_find_tensor(ld->g, name);
    if (!t) {
        if (required) {
            snprintf(ld->eb, (size_t)ld->ec, "ref_q35: tensor %s missing", name);
            ld->bad = 1;
        }
        return r;
    }
    if (ref_w_read(ld->g, t, &r)) {
        snprintf(ld->eb, (size_t)ld->ec, "ref_q35: cannot read tensor %s", name);
        ld->bad = 1;
    }
    return r;
}

/* Loads blk.l.suffix and checks its shape (ne2 = 0: 2-D, ne1 = 0: 1-D). */
static w32 load_l(loader *ld, int l, const char *suffix, bool required, uint64_t ne0,
                  uint64_t ne1, uint64_t ne2)
{
    char name[128];
    snprintf(name, sizeof name, "blk.%d.%s", l, suffix);
    w32 r = load(ld, name, required);
    if (r.w && !ld->bad) {
        uint64_t want[3] = {ne0, ne1 ? ne1 : 1, ne2 ? ne2 : 1};
        if (r.ne[0] != want[0] || r.ne[1] != want[1] || r.ne[2] != want[2]) {
            snprintf(ld->eb, (size_t)ld->ec,
                     "ref_q35: %s has shape [%llu, %llu, %llu], expected [%llu, %llu, %llu]",
                     name, (unsigned long long)r.ne[0], (unsigned long long)r.ne[1],
                     (unsigned long long)r.ne[2], (unsigned long long)want[0],
                     (unsigned long long)want[1], (unsigned long long)want[2]);
            ld->bad = 1;
        }
    }
    return r;
}

static bool key_u32(loader *ld, const char *suffix, int *out, bool required, int dflt)
{
    char k[128];
    snprintf(k, sizeof k, "qwen35moe.%s", suffix);
    uint32_t v;
    if (sl_gguf_get_u32(ld->g, k, &v)) {
        *out = (int)v;
        return true;
    }
    *out = dflt;
    if (required && !ld->bad) {
        snprintf(ld->eb, (size_t)ld->ec, "ref_q35: key %s missing", k);
        ld->bad = 1;
    }
    return false;
}

static void free_w(w32 *w)
{
    free(w->w);
    w->w = NULL;
}

void ref_q35_free(ref_q35 *m)
{
    if (!m) return;
    for (int l = 0; m->L && l < m->n_layer; l++) {
        w32 *f = (w32 *)((char *)&m->L[l] + offsetof(q35_layer, attn_norm));
        size_t nw = (sizeof(q35_layer) - offsetof(q35_layer, attn_norm)) / sizeof(w32);
        for (size_t j = 0; j < nw; j++) free_w(&f[j]);
    }
    free(m->L);
    free_w(&m->embd);
    free_w(&m->out_norm);
    free_w(&m->out);
    free(m);
}

ref_q35 *ref_q35_load(const char *path, char *eb, int ec)
{
    loader ld = {NULL, eb, ec, 0};
    sl_err err;
    if (sl_gguf_open(&ld.g, path, &err) != 0) {
        snprintf(eb, (size_t)ec, "ref_q35: %s", err.msg);
        return NULL;
    }
    ref_q35 *m = calloc(1, sizeof *m);
    const char *arch = sl_gguf_get_str(ld.g, "general.architecture");
    if (!m || !arch || strcmp(arch, "qwen35moe")) {
        snprintf(eb, (size_t)ec, "ref_q35: %s: architecture '%s', expected qwen35moe", path,
                 arch ? arch : "(none)");
        sl_gguf_close(ld.g);
        free(m);
        return NULL;
    }
    int block_count, nextn, interval, inner, ctx;
    key_u32(&ld, "block_count", &block_count, true, 0);
    key_u32(&ld, "context_length", &ctx, true, 0);
    key_u32(&ld, "embedding_length", &m->E, true, 0);
    key_u32(&ld, "attention.head_count", &m->H, true, 1);
    key_u32(&ld, "attention.head_count_kv", &m->HK, false, m->H);
    key_u32(&ld, "attention.key_length", &m->D, false, m->H ? m->E / m->H : 0);
    key_u32(&ld, "rope.dimension_count", &m->n_rot, false, m->D);
    key_u32(&ld, "expert_count", &m->X, true, 0);
    key_u32(&ld, "expert_used_count", &m->k_used, true, 0);
    int n_ff;
    key_u32(&ld, "feed_forward_length", &n_ff, false, 0);
    key_u32(&ld, "expert_feed_forward_length", &m->F, false,
            m->k_used ? n_ff / m->k_used : 0);
    key_u32(&ld, "expert_shared_feed_forward_length", &m->Fs, false, n_ff);
    key_u32(&ld, "ssm.conv_kernel", &m->K, true, 0);
    key_u32(&ld, "ssm.state_size", &m->ds, true, 0);
    key_u32(&ld, "ssm.group_count", &m->nk, true, 0);
    key_u32(&ld, "ssm.time_step_rank", &m->nv, true, 0);
    key_u32(&ld, "ssm.inner_size", &inner, true, 0);
    key_u32(&ld, "nextn_predict_layers", &nextn, false, 0);
    key_u32(&ld, "full_attention_interval", &interval, false, 4);
    if (!sl_gguf_get_f32(ld.g, "qwen35moe.attention.layer_norm_rms_epsilon", &m->eps) && !ld.bad) {
        snprintf(eb, (size_t)ec, "ref_q35: key qwen35moe.attention.layer_norm_rms_epsilon missing");
        ld.bad = 1;
    }
    if (!sl_gguf_get_f32(ld.g, "qwen35moe.rope.freq_base", &m->base)) m->base = 10000.0f;
    const sl_gguf_array *sec = sl_gguf_get_arr(ld.g, "qwen35moe.rope.dimension_sections");
    for (int i = 0; i < 4; i++) {
        int64_t v = 0;
        if (!sec || !sl_gguf_arr_i64(sec, (uint64_t)i, &v)) {
            if (!ld.bad)
                snprintf(eb, (size_t)ec, "ref_q35: key qwen35moe.rope.dimension_sections "
                                         "missing or shorter than 4");
            ld.bad = 1;
        }
        m->sections[i] = (int)v;
    }
    if (!ld.bad && (inner != m->nv * m->ds || m->nk < 1 || m->nv % m->nk || m->H % m->HK ||
                    m->n_rot > m->D || m->n_rot % 2 || interval < 1 || nextn >= block_count ||
                    m->k_used < 1 || m->k_used > m->X)) {
        snprintf(eb, (size_t)ec, "ref_q35: inconsistent hyperparameters (inner %d vs nv*ds %d, "
                                 "nk %d nv %d, heads %d/%d, n_rot %d D %d, interval %d, top-k %d/%d)",
                 inner, m->nv * m->ds, m->nk, m->nv, m->H, m->HK, m->n_rot, m->D, interval,
                 m->k_used, m->X);
        ld.bad = 1;
    }
    m->n_layer = ld.bad ? 0 : block_count - nextn;

    m->embd = load(&ld, "token_embd.weight", true);
    m->V = (int)m->embd.ne[1];
    m->out_norm = load(&ld, "output_norm.weight", true);
    m->out = load(&ld, "output.weight", false);
    m->L = calloc((size_t)(m->n_layer > 0 ? m->n_layer : 1), sizeof *m->L);
    if (!m->L) ld.bad = 1;

    /* The layer pattern: attention.recurrent_layers if present, else the
     * interval rule. */
    const sl_gguf_array *rec = sl_gguf_get_arr(ld.g, "qwen35moe.attention.recurrent_layers");
    const int E = m->E, D = m->D, kd = m->nk * m->ds, vd = m->nv * m->ds, C = 2 * kd + vd;
    for (int l = 0; l < m->n_layer && !ld.bad; l++) {
        q35_layer *L = &m->L[l];
        if (rec && rec->type == SL_GGUF_BOOL && rec->n > (uint64_t)l)
            L->linear = ((const uint8_t *)rec->data)[l] != 0;
        else
            L->linear = (l + 1) % interval != 0;
        L->attn_norm = load_l(&ld, l, "attn_norm.weight", true, (uint64_t)E, 0, 0);
        L->post_norm = load_l(&ld, l, "post_attention_norm.weight", true, (uint64_t)E, 0, 0);
        if (!L->linear) {
            const uint64_t qd = (uint64_t)m->H * D, kvd = (uint64_t)m->HK * D;
            L->wqkv_full = load_l(&ld, l, "attn_qkv.weight", false, (uint64_t)E,
                                  2 * qd + 2 * kvd, 0);
            const bool sep = L->wqkv_full.w == NULL;
            L->wq = load_l(&ld, l, "attn_q.weight", sep, (uint64_t)E, 2 * qd, 0);
            L->wk = load_l(&ld, l, "attn_k.weight", sep, (uint64_t)E, kvd, 0);
            L->wv = load_l(&ld, l, "attn_v.weight", sep, (uint64_t)E, kvd, 0);
            L->wo = load_l(&ld, l, "attn_output.weight", true, qd, (uint64_t)E, 0);
            L->qn = load_l(&ld, l, "attn_q_norm.weight", true, (uint64_t)D, 0, 0);
            L->kn = load_l(&ld, l, "attn_k_norm.weight", true, (uint64_t)D, 0, 0);
        } else {
            L->wqkv = load_l(&ld, l, "attn_qkv.weight", true, (uint64_t)E, (uint64_t)C, 0);
            L->wz = load_l(&ld, l, "attn_gate.weight", true, (uint64_t)E, (uint64_t)vd, 0);
            L->conv = load_l(&ld, l, "ssm_conv1d.weight", true, (uint64_t)m->K, (uint64_t)C, 0);
            L->dt = load_l(&ld, l, "ssm_dt.bias", true, (uint64_t)m->nv, 0, 0);
            L->a = load_l(&ld, l, "ssm_a", true, (uint64_t)m->nv, 0, 0);
            L->wbeta = load_l(&ld, l, "ssm_beta.weight", true, (uint64_t)E, (uint64_t)m->nv, 0);
            L->walpha = load_l(&ld, l, "ssm_alpha.weight", true, (uint64_t)E, (uint64_t)m->nv, 0);
            L->ssm_norm = load_l(&ld, l, "ssm_norm.weight", true, (uint64_t)m->ds, 0, 0);
            L->ssm_out = load_l(&ld, l, "ssm_out.weight", true, (uint64_t)vd, (uint64_t)E, 0);
        }
        const uint64_t X = (uint64_t)m->X, F = (uint64_t)m->F, Fs = (uint64_t)m->Fs;
        L->router = load_l(&ld, l, "ffn_gate_inp.weight", true, (uint64_t)E, X, 0);
        L->gate_up_x = load_l(&ld, l, "ffn_gate_up_exps.weight", false, (uint64_t)E, 2 * F, X);
        const bool split = L->gate_up_x.w == NULL;
        L->gate_x = load_l(&ld, l, "ffn_gate_exps.weight", split, (uint64_t)E, F, X);
        L->up_x = load_l(&ld, l, "ffn_up_exps.weight", split, (uint64_t)E, F, X);
        L->down_x = load_l(&ld, l, "ffn_down_exps.weight", true, F, (uint64_t)E, X);
        L->sh_gate_inp = load_l(&ld, l, "ffn_gate_inp_shexp.weight", true, (uint64_t)E, 0, 0);
        L->gate_s = load_l(&ld, l, "ffn_gate_shexp.weight", true, (uint64_t)E, Fs, 0);
        L->up_s = load_l(&ld, l, "ffn_up_shexp.weight", true, (uint64_t)E, Fs, 0);
        L->down_s = load_l(&ld, l, "ffn_down_shexp.weight", true, Fs, (uint64_t)E, 0);
    }
    sl_gguf_close(ld.g);
    if (ld.bad) {
        ref_q35_free(m);
        return NULL;
    }
    (void)ctx;
    return m;
}

int ref_q35_n_vocab(const ref_q35 *m) { return m->V; }
void ref_q35_set_kv_f16(ref_q35 *m, int on) { m->kv_f16 = on != 0; }
int ref_q35_n_layer(const ref_q35 *m) { return m->n_layer; }
int ref_q35_layer_is_linear(const ref_q35 *m, int l)
{
    return l >= 0 && l < m->n_layer && m->L[l].linear;
}

/* ---- the operations ------------------------------------------------------- */

/* y[r] = sum_c W[r][c] x[c] over rows [row0, row0 + rows) of W (row length
 * cols), sums in double. A quantised W sees x rounded through its
 * activation type first (quantise, dequantise), as every GGUF engine's
 * integer kernels do. */
static void matmul(float *y, const w32 *W, size_t row0, const float *x, int rows, int cols)
{
    ref_matvec(y, W->w + row0 * (size_t)cols, W->act_type, x, rows, cols);
}

/* RMS norm: the sum of squares in double, the scale 1/sqrt(mean + eps) in
 * float as ggml's rms_norm_f32, then the weight. o may alias x. */
static void rmsnorm(float *o, const float *x, const float *w, int n, float eps)
{
    ref_rmsnorm(o, x, w, n, eps);
}

/* L2 norm: x / max(||x||, eps), the sum in double. */
static void l2norm(float *x, int n, float eps)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    const float nrm = (float)sqrt(ss);
    const float scale = 1.0f / (nrm > eps ? nrm : eps);
    for (int i = 0; i < n; i++) x[i] *= scale;
}

static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

/* IMROPE for a text position p (positions (p, p, p, 0)): NEOX pairs
 * (i, i + n_rot/2) for i < n_rot/2, pair i in sector i mod sum(sections);
 * the sector picks h (sector%3 == 1, sector < 3 s1), w (sector%3 == 2,
 * sector < 3 s2), t (sector%3 == 0, sector < 3 s0), else e (position 0: no
 * rotation). The angle p * base^(-2i/n_rot) is built as ggml builds it, by
 * repeated float multiplication with theta_scale = powf(base, -2/n_rot). */
static void imrope(float *v, int n_rot, int pos, float base, const int sec[4])
{
    const int sect_dims = sec[0] + sec[1] + sec[2] + sec[3];
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    float theta = (float)pos;
    for (int i = 0; i < n_rot / 2; i++) {
        const int s = sect_dims > 0 ? i % sect_dims : 0;
        bool rotates = (s % 3 == 1 && s < 3 * sec[1]) || (s % 3 == 2 && s < 3 * sec[2]) ||
                       (s % 3 == 0 && s < 3 * sec[0]);
        const float ang = rotates ? theta : 0.0f;
        const float c = cosf(ang), sn = sinf(ang);
        const float x0 = v[i], x1 = v[i + n_rot / 2];
        v[i] = x0 * c - x1 * sn;
        v[i + n_rot / 2] = x0 * sn + x1 * c;
        theta *= theta_scale;
    }
}

/* ---- the forward pass ----------------------------------------------------- */

typedef struct scratch {
    float *x, *h, *tmp, *acc;
    float *qfull, *q, *k, *v, *g, *att;  /* full attention */
    float *u, *c, *z, *beta, *gdecay, *o; /* DeltaNet */
    float *probs, *ga, *ua;
    int *chosen;
} scratch;

/* One full-attention layer for the token at position p: h is the normed
 * input, kc/vc this layer's caches [n][HK*D]. Writes the mixer output
 * (before the residual) into s->tmp. */
static void full_attention(const ref_q35 *m, const q35_layer *L, scratch *s, int p, float *kc,
                           float *vc)
{
    const int E = m->E, D = m->D, H = m->H, HK = m->HK, qd = H * D, kvd = HK * D;
    if (L->wqkv_full.w) {
        float *all = malloc(sizeof(float) * (size_t)(2 * qd + 2 * kvd));
        matmul(all, &L->wqkv_full, 0, s->h, 2 * qd + 2 * kvd, E);
        memcpy(s->qfull, all, sizeof(float) * (size_t)(2 * qd));
        memcpy(s->k, all + 2 * qd, sizeof(float) * (size_t)kvd);
        memcpy(s->v, all + 2 * qd + kvd, sizeof(float) * (size_t)kvd);
        free(all);
    } else {
        matmul(s->qfull, &L->wq, 0, s->h, 2 * qd, E);
        matmul(s->k, &L->wk, 0, s->h, kvd, E);
        matmul(s->v, &L->wv, 0, s->h, kvd, E);
    }
    /* per head: D query rows, then D gate rows */
    for (int hh = 0; hh < H; hh++) {
        memcpy(s->q + hh * D, s->qfull + (size_t)hh * 2 * D, sizeof(float) * (size_t)D);
        memcpy(s->g + hh * D, s->qfull + (size_t)hh * 2 * D + D, sizeof(float) * (size_t)D);
        rmsnorm(s->q + hh * D, s->q + hh * D, L->qn.w, D, m->eps);
        imrope(s->q + hh * D, m->n_rot, p, m->base, m->sections);
    }
    for (int hh = 0; hh < HK; hh++) {
        rmsnorm(s->k + hh * D, s->k + hh * D, L->kn.w, D, m->eps);
        imrope(s->k + hh * D, m->n_rot, p, m->base, m->sections);
    }
    float *kp = kc + (size_t)p * kvd, *vp = vc + (size_t)p * kvd;
    memcpy(kp, s->k, sizeof(float) * (size_t)kvd);
    memcpy(vp, s->v, sizeof(float) * (size_t)kvd);
    if (m->kv_f16)
        for (int i = 0; i < kvd; i++) {
            kp[i] = sl_fp16_to_f32(sl_f32_to_fp16(kp[i]));
            vp[i] = sl_fp16_to_f32(sl_f32_to_fp16(vp[i]));
        }
    const int group = H / HK;
    const double scale = 1.0 / sqrt((double)D);
    double *sc = malloc(sizeof(double) * (size_t)(p + 1));
    for (int hh = 0; hh < H; hh++) {
        const int kh = hh / group; /* grouped GQA */
        double mx = -INFINITY, sum = 0.0;
        for (int t = 0; t <= p; t++) {
            double d = 0.0;
            for (int i = 0; i < D; i++)
                d += (double)s->q[hh * D + i] * kc[(size_t)t * kvd + kh * D + i];
            sc[t] = d * scale;
            if (sc[t] > mx) mx = sc[t];
        }
        for (int t = 0; t <= p; t++) {
            sc[t] = exp(sc[t] - mx);
            sum += sc[t];
        }
        for (int i = 0; i < D; i++) {
            double o = 0.0;
            for (int t = 0; t <= p; t++) o += sc[t] * vc[(size_t)t * kvd + kh * D + i];
            s->att[hh * D + i] = (float)(o / sum) * sigmoid(s->g[hh * D + i]);
        }
    }
    free(sc);
    matmul(s->tmp, &L->wo, 0, s->att, E, qd);
}

/* One gated-DeltaNet layer for one token: conv holds the previous K-1 raw
 * projections [K-1][C] (oldest first), S the nv states [nv][ds][ds] (row i
 * over value dims, column j over key dims). Writes s->tmp. */
static void delta_net(const ref_q35 *m, const q35_layer *L, scratch *s, float *conv, float *S)
{
    const int E = m->E, K = m->K, ds = m->ds, nk = m->nk, nv = m->nv;
    const int kd = nk * ds, vd = nv * ds, C = 2 * kd + vd;
    matmul(s->u, &L->wqkv, 0, s->h, C, E);
    matmul(s->z, &L->wz, 0, s->h, vd, E);
    matmul(s->beta, &L->wbeta, 0, s->h, nv, E);
    matmul(s->gdecay, &L->walpha, 0, s->h, nv, E);
    for (int hh = 0; hh < nv; hh++) {
        s->beta[hh] = sigmoid(s->beta[hh]);
        s->gdecay[hh] = L->a.w[hh] * softplus(s->gdecay[hh] + L->dt.w[hh]);
    }
    /* causal depthwise conv: tap K-1 takes the current token */
    for (int ch = 0; ch < C; ch++) {
        const float *w = L->conv.w + (size_t)ch * K;
        float acc = 0.0f;
        for (int j = 0; j < K - 1; j++) acc += w[j] * conv[(size_t)j * C + ch];
        acc += w[K - 1] * s->u[ch];
        s->c[ch] = ref_silu(acc);
    }
    /* shift the conv state by one token */
    if (K > 1) {
        memmove(conv, conv + C, sizeof(float) * (size_t)(K - 2) * C);
        memcpy(conv + (size_t)(K - 2) * C, s->u, sizeof(float) * (size_t)C);
    }
    float *q = s->c, *k = s->c + kd, *v = s->c + 2 * kd;
    for (int hh = 0; hh < nk; hh++) {
        l2norm(q + hh * ds, ds, m->eps);
        l2norm(k + hh * ds, ds, m->eps);
    }
    const double qscale = 1.0 / sqrt((double)ds);
    double *sk = malloc(sizeof(double) * (size_t)ds);
    for (int hh = 0; hh < nv; hh++) {
        const int kh = hh % nk; /* tiled, not grouped */
        const float *kv = k + kh * ds, *qv = q + kh * ds, *vv = v + hh * ds;
        float *Sh = S + (size_t)hh * ds * ds;
        const float decay = expf(s->gdecay[hh]);
        for (int i = 0; i < ds * ds; i++) Sh[i] *= decay;
        for (int i = 0; i < ds; i++) {
            double acc = 0.0;
            for (int j = 0; j < ds; j++) acc += (double)Sh[i * ds + j] * kv[j];
            sk[i] = acc;
        }
        for (int i = 0; i < ds; i++) {
            const float delta = s->beta[hh] * (float)(vv[i] - sk[i]);
            for (int j = 0; j < ds; j++) Sh[i * ds + j] += delta * kv[j];
        }
        float *oh = s->o + hh * ds;
        for (int i = 0; i < ds; i++) {
            double acc = 0.0;
            for (int j = 0; j < ds; j++) acc += (double)Sh[i * ds + j] * qv[j];
            oh[i] = (float)(acc * qscale);
        }
        rmsnorm(oh, oh, L->ssm_norm.w, ds, m->eps);
        for (int i = 0; i < ds; i++) oh[i] *= ref_silu(s->z[hh * ds + i]);
    }
    free(sk);
    matmul(s->tmp, &L->ssm_out, 0, s->o, E, vd);
}

/* down(silu(gate x) * up x), gate and up rows taken from row0 of their
 * matrices (the expert's slice), down from down_row0. */
static void swiglu(float *out, const w32 *gate, size_t g0, const w32 *up, size_t u0,
                   const w32 *down, size_t d0, const float *x, int E, int F, float *ga,
                   float *ua)
{
    matmul(ga, gate, g0, x, F, E);
    matmul(ua, up, u0, x, F, E);
    for (int i = 0; i < F; i++) ga[i] = ref_silu(ga[i]) * ua[i];
    matmul(out, down, d0, ga, E, F);
}

/* MoE (softmax over all experts, top-k, renormalised) plus the
 * sigmoid-gated shared expert, on the normed h; adds into x. */
static void moe_ffn(const ref_q35 *m, const q35_layer *L, scratch *s, float *margin)
{
    const int E = m->E, X = m->X, k = m->k_used, F = m->F;
    matmul(s->probs, &L->router, 0, s->h, X, E);
    double mx = -INFINITY, sum = 0.0;
    for (int e = 0; e < X; e++) if (s->probs[e] > mx) mx = s->probs[e];
    for (int e = 0; e < X; e++) sum += exp(s->probs[e] - mx);
    for (int e = 0; e < X; e++) s->probs[e] = (float)(exp(s->probs[e] - mx) / sum);
    double wsum = 0.0;
    for (int r = 0; r < k; r++) { /* selection: highest first, lowest index on ties */
        int best = -1;
        for (int e = 0; e < X; e++) {
            bool used = false;
            for (int j = 0; j < r; j++) used |= s->chosen[j] == e;
            if (!used && (best < 0 || s->probs[e] > s->probs[best])) best = e;
        }
        s->chosen[r] = best;
        wsum += s->probs[best];
    }
    if (margin && k < X) {
        double rejected = 0.0;
        for (int e = 0; e < X; e++) {
            bool used = false;
            for (int j = 0; j < k; j++) used |= s->chosen[j] == e;
            if (!used && s->probs[e] > rejected) rejected = s->probs[e];
        }
        double gap = log(s->probs[s->chosen[k - 1]]) - log(rejected);
        if (gap < *margin) *margin = (float)gap;
    }
    if (wsum < 6.103515625e-5) wsum = 6.103515625e-5;
    memset(s->acc, 0, sizeof(float) * (size_t)E);
    for (int r = 0; r < k; r++) {
        const size_t e = (size_t)s->chosen[r];
        const float w = (float)(s->probs[e] / wsum);
        if (L->gate_up_x.w)
            swiglu(s->tmp, &L->gate_up_x, e * 2 * F, &L->gate_up_x, e * 2 * F + F, &L->down_x,
                   e * E, s->h, E, F, s->ga, s->ua);
        else
            swiglu(s->tmp, &L->gate_x, e * F, &L->up_x, e * F, &L->down_x, e * E, s->h, E, F,
                   s->ga, s->ua);
        for (int i = 0; i < E; i++) s->acc[i] += w * s->tmp[i];
    }
    if (L->up_s.w) {
        swiglu(s->tmp, &L->gate_s, 0, &L->up_s, 0, &L->down_s, 0, s->h, E, m->Fs, s->ga, s->ua);
        float gl = 0.0f;
        matmul(&gl, &L->sh_gate_inp, 0, s->h, 1, E);
        const float gate = sigmoid(gl);
        for (int i = 0; i < E; i++) s->acc[i] += gate * s->tmp[i];
    }
    for (int i = 0; i < E; i++) s->x[i] += s->acc[i];
}

int ref_q35_forward(ref_q35 *m, const int32_t *tokens, int n, float *logits, float *margin)
{
    for (int p = 0; p < n; p++)
        if (tokens[p] < 0 || tokens[p] >= m->V) return -1;
    const int E = m->E, D = m->D, kvd = m->HK * D, qd = m->H * D;
    const int kd = m->nk * m->ds, vd = m->nv * m->ds, C = 2 * kd + vd;
    const int fmax = m->F > m->Fs ? m->F : m->Fs;
    int n_full = 0, n_lin = 0;
    for (int l = 0; l < m->n_layer; l++) {
        if (m->L[l].linear) n_lin++;
        else n_full++;
    }
    /* per full layer an f32 K/V cache; per linear layer conv + delta state */
    const size_t conv_sz = (size_t)(m->K > 1 ? m->K - 1 : 0) * C;
    const size_t st_sz = (size_t)m->nv * m->ds * m->ds;
    float *kc = calloc((size_t)n_full * n * kvd + 1, sizeof(float));
    float *vc = calloc((size_t)n_full * n * kvd + 1, sizeof(float));
    float *conv = calloc((size_t)n_lin * conv_sz + 1, sizeof(float));
    float *S = calloc((size_t)n_lin * st_sz + 1, sizeof(float));
    scratch s;
    s.x = malloc(sizeof(float) * E);
    s.h = malloc(sizeof(float) * E);
    s.tmp = malloc(sizeof(float) * E);
    s.acc = malloc(sizeof(float) * E);
    s.qfull = malloc(sizeof(float) * (2 * qd + 1));
    s.q = malloc(sizeof(float) * (qd + 1));
    s.g = malloc(sizeof(float) * (qd + 1));
    s.att = malloc(sizeof(float) * (qd + 1));
    s.k = malloc(sizeof(float) * (kvd + 1));
    s.v = malloc(sizeof(float) * (kvd + 1));
    s.u = malloc(sizeof(float) * (C + 1));
    s.c = malloc(sizeof(float) * (C + 1));
    s.z = malloc(sizeof(float) * (vd + 1));
    s.o = malloc(sizeof(float) * (vd + 1));
    s.beta = malloc(sizeof(float) * (m->nv + 1));
    s.gdecay = malloc(sizeof(float) * (m->nv + 1));
    s.probs = malloc(sizeof(float) * (m->X + 1));
    s.ga = malloc(sizeof(float) * (fmax + 1));
    s.ua = malloc(sizeof(float) * (fmax + 1));
    s.chosen = malloc(sizeof(int) * (m->k_used + 1));
    int rc = 0;
    if (!kc || !vc || !conv || !S || !s.x || !s.h || !s.tmp || !s.acc || !s.qfull || !s.q ||
        !s.g || !s.att || !s.k || !s.v || !s.u || !s.c || !s.z || !s.o || !s.beta || !s.gdecay ||
        !s.probs || !s.ga || !s.ua || !s.chosen)
        rc = -1;
    for (int p = 0; p < n && !rc; p++) {
        if (margin) margin[p] = INFINITY;
        memcpy(s.x, m->embd.w + (size_t)tokens[p] * E, sizeof(float) * E);
        int fi = 0, li = 0;
        for (int l = 0; l < m->n_layer; l++) {
            const q35_layer *L = &m->L[l];
            rmsnorm(s.h, s.x, L->attn_norm.w, E, m->eps);
            if (L->linear) {
                delta_net(m, L, &s, conv + (size_t)li * conv_sz, S + (size_t)li * st_sz);
                li++;
            } else {
                full_attention(m, L, &s, p, kc + (size_t)fi * n * kvd, vc + (size_t)fi * n * kvd);
                fi++;
            }
            for (int i = 0; i < E; i++) s.x[i] += s.tmp[i];
            rmsnorm(s.h, s.x, L->post_norm.w, E, m->eps);
            moe_ffn(m, L, &s, margin ? &margin[p] : NULL);
        }
        rmsnorm(s.h, s.x, m->out_norm.w, E, m->eps);
        matmul(logits + (size_t)p * m->V, m->out.w ? &m->out : &m->embd, 0, s.h, m->V, E);
    }
    free(kc); free(vc); free(conv); free(S);
    free(s.x); free(s.h); free(s.tmp); free(s.acc); free(s.qfull); free(s.q); free(s.g);
    free(s.att); free(s.k); free(s.v); free(s.u); free(s.c); free(s.z); free(s.o);
    free(s.beta); free(s.gdecay); free(s.probs); free(s.ga); free(s.ua); free(s.chosen);
    return rc;
}
