/* ref_forward.c - see ref_forward.h. Deliberately simple and slow. */
#include "common/ref_forward.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ref_math.h"
#include "gguf/gguf.h"
#include "quant/quant.h"

/* A weight dequantised to f32, and the type its matrix products quantise
 * activations to (the engine's integer kernels do; see mat()). */
typedef struct rt {
    float *w;
    int act_type; /* -1: activations stay f32 */
} rt;

typedef struct ref_layer {
    rt attn_norm, wq, wk, wv, wo, bq, bk, bv, qn, kn, ffn_norm;
    rt gate, up, down;                    /* dense */
    rt router, gate_x, up_x, down_x;      /* experts, stacked */
    rt gate_s, up_s, down_s, gate_inp_s;  /* shared expert */
} ref_layer;

struct ref_model {
    char arch[32];
    int n_layer, n_embd, n_head, n_kv, hd, n_ff, n_exp, k_used, n_ff_exp, n_ff_s, n_vocab;
    int rope_dim;
    float eps, base;
    int neox, qk_norm_mode, renorm; /* qk_norm_mode: 0 none, 1 per head, 2 whole */
    rt embd, out_norm, out;
    ref_layer *L;
};

static rt load_f32(sl_gguf *g, const char *name, int required, char *eb, int ec, int *bad)
{
    rt none = {NULL, -1};
    const sl_gguf_tensor *t = sl_gguf_find_tensor(g, name);
    if (!t) {
        if (required) {
            snprintf(eb, (size_t)ec, "ref: missing tensor %s", name);
            *bad = 1;
        }
        return none;
    }
    ref_w r;
    if (ref_w_read(g, t, &r)) {
        snprintf(eb, (size_t)ec, "ref: cannot read %s", name);
        *bad = 1;
        return none;
    }
    return (rt){r.w, r.act_type};
}

static int get_int(sl_gguf *g, const char *arch, const char *key, int dflt)
{
    char k[128];
    snprintf(k, sizeof k, "%s.%s", arch, key);
    uint32_t v;
    return sl_gguf_get_u32(g, k, &v) ? (int)v : dflt;
}

static float get_float(sl_gguf *g, const char *arch, const char *key, float dflt)
{
    char k[128];
    snprintf(k, sizeof k, "%s.%s", arch, key);
    float v;
    return sl_gguf_get_f32(g, k, &v) ? v : dflt;
}

ref_model *ref_model_load(const char *path, char *eb, int ec)
{
    sl_gguf *g;
    sl_err err;
    if (sl_gguf_open(&g, path, &err) != 0) {
        snprintf(eb, (size_t)ec, "ref: %s", err.msg);
        return NULL;
    }
    ref_model *m = calloc(1, sizeof *m);
    const char *a = sl_gguf_get_str(g, "general.architecture");
    snprintf(m->arch, sizeof m->arch, "%s", a ? a : "?");
    a = m->arch;
    m->n_layer = get_int(g, a, "block_count", 0);
    m->n_embd = get_int(g, a, "embedding_length", 0);
    m->n_head = get_int(g, a, "attention.head_count", 1);
    m->n_kv = get_int(g, a, "attention.head_count_kv", m->n_head);
    m->hd = get_int(g, a, "attention.key_length", m->n_embd / m->n_head);
    m->rope_dim = get_int(g, a, "rope.dimension_count", m->hd);
    m->n_ff = get_int(g, a, "feed_forward_length", 0);
    m->n_exp = get_int(g, a, "expert_count", 0);
    m->k_used = get_int(g, a, "expert_used_count", 0);
    m->n_ff_exp = get_int(g, a, "expert_feed_forward_length", m->n_ff);
    m->n_ff_s = get_int(g, a, "expert_shared_feed_forward_length", 0);
    m->eps = get_float(g, a, "attention.layer_norm_rms_epsilon", 1e-6f);
    m->base = get_float(g, a, "rope.freq_base", 10000.0f);
    /* the architecture rules, decided here independently of src/model */
    m->neox = strcmp(a, "llama") != 0;
    m->qk_norm_mode = (!strcmp(a, "qwen3") || !strcmp(a, "qwen3moe")) ? 1
                      : !strcmp(a, "olmoe")                            ? 2
                                                                       : 0;
    m->renorm = !strcmp(a, "qwen3moe") || !strcmp(a, "llama");
    char k[128];
    snprintf(k, sizeof k, "%s.expert_weights_norm", a);
    bool b;
    if (sl_gguf_get_bool(g, k, &b)) m->renorm = b;

    int bad = 0;
    m->embd = load_f32(g, "token_embd.weight", 1, eb, ec, &bad);
    const sl_gguf_tensor *te = sl_gguf_find_tensor(g, "token_embd.weight");
    m->n_vocab = te ? (int)te->ne[1] : 0;
    m->out_norm = load_f32(g, "output_norm.weight", 1, eb, ec, &bad);
    m->out = load_f32(g, "output.weight", 0, eb, ec, &bad);
    m->L = calloc((size_t)m->n_layer, sizeof *m->L);
    for (int i = 0; i < m->n_layer && !bad; i++) {
        ref_layer *L = &m->L[i];
        char n[128];
#define T(field, suffix, req)                                                  \
    (snprintf(n, sizeof n, "blk.%d.%s", i, suffix), L->field = load_f32(g, n, req, eb, ec, &bad))
        T(attn_norm, "attn_norm.weight", 1);
        T(wq, "attn_q.weight", 1);
        T(wk, "attn_k.weight", 1);
        T(wv, "attn_v.weight", 1);
        T(wo, "attn_output.weight", 1);
        T(bq, "attn_q.bias", 0);
        T(bk, "attn_k.bias", 0);
        T(bv, "attn_v.bias", 0);
        T(qn, "attn_q_norm.weight", 0);
        T(kn, "attn_k_norm.weight", 0);
        T(ffn_norm, "ffn_norm.weight", 1);
        T(gate, "ffn_gate.weight", 0);
        T(up, "ffn_up.weight", 0);
        T(down, "ffn_down.weight", 0);
        T(router, "ffn_gate_inp.weight", 0);
        T(gate_x, "ffn_gate_exps.weight", 0);
        T(up_x, "ffn_up_exps.weight", 0);
        T(down_x, "ffn_down_exps.weight", 0);
        T(gate_s, "ffn_gate_shexp.weight", 0);
        T(up_s, "ffn_up_shexp.weight", 0);
        T(down_s, "ffn_down_shexp.weight", 0);
        T(gate_inp_s, "ffn_gate_inp_shexp.weight", 0);
#undef T
    }
    sl_gguf_close(g);
    if (bad) {
        ref_model_free(m);
        return NULL;
    }
    return m;
}

void ref_model_free(ref_model *m)
{
    if (!m) return;
    for (int i = 0; i < m->n_layer; i++) {
        rt *f = (rt *)&m->L[i];
        for (size_t j = 0; j < sizeof(ref_layer) / sizeof(rt); j++) free(f[j].w);
    }
    free(m->L);
    free(m->embd.w);
    free(m->out_norm.w);
    free(m->out.w);
    free(m);
}

int ref_model_n_vocab(const ref_model *m) { return m->n_vocab; }

/* y[r] = sum_c W[r][c] * x[c], W stored row-major with `cols` per row.
 * Like the engine, a quantised weight's product sees the activations
 * rounded through the activation format (quantise, then dequantise with the
 * separately tested reference routines): that rounding is part of what the
 * model computes in every GGUF engine. Sums are in double. */
static void matmul(float *y, const rt *W, size_t off, const float *x, int rows, int cols)
{
    ref_matvec(y, W->w + off, W->act_type, x, rows, cols);
}

static void rmsnorm(float *o, const float *x, const float *w, int n, float eps)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    double s = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) o[i] = (float)(x[i] * s) * w[i];
}

static void rope(float *v, int hd, int n_rot, int pos, float base, int neox)
{
    for (int i = 0; i < n_rot / 2; i++) {
        double freq = pow(base, -2.0 * i / n_rot);
        double ang = pos * freq;
        double c = cos(ang), s = sin(ang);
        int a = neox ? i : 2 * i;
        int b = neox ? i + n_rot / 2 : 2 * i + 1;
        double x0 = v[a], x1 = v[b];
        v[a] = (float)(x0 * c - x1 * s);
        v[b] = (float)(x0 * s + x1 * c);
    }
    (void)hd;
}


/* out = down(silu(gate x) * up x) for one expert/dense block */
static void ffn(float *out, const rt *gate, const rt *up, const rt *down, size_t off,
                const float *x, int n_embd, int n_ff)
{
    float *g = malloc(sizeof(float) * n_ff), *u = malloc(sizeof(float) * n_ff);
    matmul(g, gate, off, x, n_ff, n_embd);
    matmul(u, up, off, x, n_ff, n_embd);
    for (int i = 0; i < n_ff; i++) g[i] = ref_silu(g[i]) * u[i];
    matmul(out, down, off, g, n_embd, n_ff);
    free(g);
    free(u);
}

int ref_forward(ref_model *m, const int32_t *tokens, int n, float *logits, float *margin)
{
    const int E = m->n_embd, hd = m->hd, qd = m->n_head * hd, kd = m->n_kv * hd;
    const int group = m->n_head / m->n_kv;
    for (int p = 0; p < n; p++)
        if (tokens[p] < 0 || tokens[p] >= m->n_vocab) return -1;
    /* cache[l][p][kd] */
    float *kc = calloc((size_t)m->n_layer * n * kd, sizeof(float));
    float *vc = calloc((size_t)m->n_layer * n * kd, sizeof(float));
    float *x = malloc(sizeof(float) * E), *xb = malloc(sizeof(float) * E);
    float *q = malloc(sizeof(float) * qd), *k = malloc(sizeof(float) * kd);
    float *v = malloc(sizeof(float) * kd), *att = malloc(sizeof(float) * qd);
    float *tmp = malloc(sizeof(float) * E), *acc = malloc(sizeof(float) * E);
    float *sc = malloc(sizeof(float) * n);
    float *probs = malloc(sizeof(float) * (m->n_exp > 0 ? m->n_exp : 1));
    int *chosen = malloc(sizeof(int) * (m->k_used > 0 ? m->k_used : 1));
    for (int p = 0; p < n; p++) {
        if (margin) margin[p] = INFINITY;
        memcpy(x, m->embd.w + (size_t)tokens[p] * E, sizeof(float) * E);
        for (int l = 0; l < m->n_layer; l++) {
            ref_layer *L = &m->L[l];
            float *Kl = kc + (size_t)l * n * kd, *Vl = vc + (size_t)l * n * kd;
            /* attention */
            rmsnorm(xb, x, L->attn_norm.w, E, m->eps);
            matmul(q, &L->wq, 0, xb, qd, E);
            matmul(k, &L->wk, 0, xb, kd, E);
            matmul(v, &L->wv, 0, xb, kd, E);
            if (L->bq.w) for (int i = 0; i < qd; i++) q[i] += L->bq.w[i];
            if (L->bk.w) for (int i = 0; i < kd; i++) k[i] += L->bk.w[i];
            if (L->bv.w) for (int i = 0; i < kd; i++) v[i] += L->bv.w[i];
            if (m->qk_norm_mode == 1) {
                for (int h = 0; h < m->n_head; h++) rmsnorm(q + h * hd, q + h * hd, L->qn.w, hd, m->eps);
                for (int h = 0; h < m->n_kv; h++) rmsnorm(k + h * hd, k + h * hd, L->kn.w, hd, m->eps);
            } else if (m->qk_norm_mode == 2) {
                rmsnorm(q, q, L->qn.w, qd, m->eps);
                rmsnorm(k, k, L->kn.w, kd, m->eps);
            }
            for (int h = 0; h < m->n_head; h++) rope(q + h * hd, hd, m->rope_dim, p, m->base, m->neox);
            for (int h = 0; h < m->n_kv; h++) rope(k + h * hd, hd, m->rope_dim, p, m->base, m->neox);
            memcpy(Kl + (size_t)p * kd, k, sizeof(float) * kd);
            memcpy(Vl + (size_t)p * kd, v, sizeof(float) * kd);
            for (int h = 0; h < m->n_head; h++) {
                const int kh = h / group;
                double mx = -1e300, sum = 0.0;
                for (int t = 0; t <= p; t++) {
                    double d = 0.0;
                    for (int i = 0; i < hd; i++) d += (double)q[h * hd + i] * Kl[(size_t)t * kd + kh * hd + i];
                    sc[t] = (float)(d / sqrt((double)hd));
                    if (sc[t] > mx) mx = sc[t];
                }
                for (int t = 0; t <= p; t++) sum += exp(sc[t] - mx);
                for (int i = 0; i < hd; i++) {
                    double o = 0.0;
                    for (int t = 0; t <= p; t++)
                        o += exp(sc[t] - mx) / sum * Vl[(size_t)t * kd + kh * hd + i];
                    att[h * hd + i] = (float)o;
                }
            }
            matmul(tmp, &L->wo, 0, att, E, qd);
            for (int i = 0; i < E; i++) x[i] += tmp[i];
            /* feed-forward */
            rmsnorm(xb, x, L->ffn_norm.w, E, m->eps);
            if (!L->gate_x.w) {
                ffn(tmp, &L->gate, &L->up, &L->down, 0, xb, E, m->n_ff);
                for (int i = 0; i < E; i++) x[i] += tmp[i];
                continue;
            }
            matmul(probs, &L->router, 0, xb, m->n_exp, E);
            double mx = -1e300, sum = 0.0;
            for (int e = 0; e < m->n_exp; e++) if (probs[e] > mx) mx = probs[e];
            for (int e = 0; e < m->n_exp; e++) sum += exp(probs[e] - mx);
            for (int e = 0; e < m->n_exp; e++) probs[e] = (float)(exp(probs[e] - mx) / sum);
            double wsum = 0.0;
            for (int r = 0; r < m->k_used; r++) { /* selection sort: highest first */
                int best = -1;
                for (int e = 0; e < m->n_exp; e++) {
                    int used = 0;
                    for (int j = 0; j < r; j++) used |= chosen[j] == e;
                    if (!used && (best < 0 || probs[e] > probs[best])) best = e;
                }
                chosen[r] = best;
                wsum += probs[best];
            }
            if (margin && m->k_used < m->n_exp) {
                /* gap between the k-th choice and the best rejected expert */
                double rejected = 0.0;
                for (int e = 0; e < m->n_exp; e++) {
                    int used = 0;
                    for (int j = 0; j < m->k_used; j++) used |= chosen[j] == e;
                    if (!used && probs[e] > rejected) rejected = probs[e];
                }
                double gap = log(probs[chosen[m->k_used - 1]]) - log(rejected);
                if (gap < margin[p]) margin[p] = (float)gap;
            }
            memset(acc, 0, sizeof(float) * E);
            const size_t gsz = (size_t)m->n_ff_exp * E;
            for (int r = 0; r < m->k_used; r++) {
                const int e = chosen[r];
                double w = probs[e];
                if (m->renorm) w /= wsum;
                ffn(tmp, &L->gate_x, &L->up_x, &L->down_x, e * gsz, xb, E, m->n_ff_exp);
                for (int i = 0; i < E; i++) acc[i] += (float)(w * tmp[i]);
            }
            if (L->gate_s.w) {
                ffn(tmp, &L->gate_s, &L->up_s, &L->down_s, 0, xb, E, m->n_ff_s);
                double gl = 0.0;
                for (int i = 0; i < E; i++) gl += (double)L->gate_inp_s.w[i] * xb[i];
                double gate = 1.0 / (1.0 + exp(-gl));
                for (int i = 0; i < E; i++) acc[i] += (float)(gate * tmp[i]);
            }
            for (int i = 0; i < E; i++) x[i] += acc[i];
        }
        rmsnorm(xb, x, m->out_norm.w, E, m->eps);
        matmul(logits + (size_t)p * m->n_vocab, m->out.w ? &m->out : &m->embd, 0, xb, m->n_vocab, E);
    }
    free(kc); free(vc); free(x); free(xb); free(q); free(k); free(v);
    free(att); free(tmp); free(acc); free(sc); free(probs); free(chosen);
    return 0;
}
