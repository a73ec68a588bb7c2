/* mix_gdn.c - the gated DeltaNet mixer (qwen35moe's linear layers), as
 * ../shared/ARCHS.md section 1 gives llama.cpp's rules. Per token:
 *
 *   u = Wqkv x (2 kd + vd channels), z = Wz x, beta = sigmoid(Wbeta x),
 *   g = a * softplus(Walpha x + dt_bias)                 (per v head, < 0)
 *   c = silu(causal depthwise conv of u over the last K tokens)
 *   q, k, v = split(c); q, k L2-normalised per head
 *   per v head h (reading q/k head h % nk), state S (ds x ds, value rows):
 *     S *= exp(g); d = beta (v - S k); S += d k^T; o = S q / sqrt(ds)
 *   o = rmsnorm(o) * silu(z) per head; out = Wout o
 *
 * The state (the last K-1 inputs of the conv, and S of every v head)
 * summarises the whole sequence, so it cannot be cut back to an earlier
 * position. A batch is run token by token in four pool jobs (conv by
 * channel, silu by token, norms by (token, head), the recurrence by v head); every value
 * is computed by one thread in a fixed order, so results do not depend on
 * the thread count or on how a prompt is split into batches. */
#include <math.h>
#include <string.h>

#include "engine/fwd_mm.h"
#include "engine/mixer.h"
#include "engine/session.h"
#include "util/checked.h"

static void gdn_state_rows(const sl_layer_desc *d, size_t elem, uint64_t row_bytes[2])
{
    (void)d;
    (void)elem;
    row_bytes[0] = row_bytes[1] = 0;
}

/* Channels of the conv: q and k of nk heads, v of nv heads. */
static uint64_t gdn_channels(const sl_gdn_desc *g)
{
    return (2 * (uint64_t)g->n_qk + (uint64_t)g->n_v) * (uint64_t)g->d_state;
}

static uint64_t gdn_state_seq(const sl_layer_desc *d)
{
    const sl_gdn_desc *g = &d->gdn;
    const uint64_t ds = (uint64_t)g->d_state;
    return sizeof(float) * ((uint64_t)(g->conv_k - 1) * gdn_channels(g) + (uint64_t)g->n_v * ds * ds);
}

/* The layer's scratch, carved from the session's kind_scratch for
 * micro-batches of B tokens: u (B, channels) the conv's input, then q|k|v;
 * z and o (B, nv ds) the output gate and the output before Wout; beta and
 * alpha (B, nv). */
typedef struct gdn_scratch {
    float *u, *z, *o, *beta, *alpha;
} gdn_scratch;

/* Floats of each piece for micro-batches of B, in the order carved; false
 * on overflow. */
static bool gdn_sizes(const sl_gdn_desc *g, uint64_t B, uint64_t sz[5])
{
    const uint64_t vd = (uint64_t)g->n_v * (uint64_t)g->d_state;
    return sl_mul_u64(B, gdn_channels(g), &sz[0]) && sl_mul_u64(B, vd, &sz[1]) &&
           sl_mul_u64(B, vd, &sz[2]) && sl_mul_u64(B, (uint64_t)g->n_v, &sz[3]) &&
           sl_mul_u64(B, (uint64_t)g->n_v, &sz[4]);
}

static bool gdn_scratch_floats(const sl_model *m, const sl_layer_desc *d, uint64_t B,
                               uint64_t *floats)
{
    (void)m;
    uint64_t sz[5];
    *floats = 0;
    if (!gdn_sizes(&d->gdn, B, sz)) return false;
    for (int i = 0; i < 5; i++)
        if (!sl_add_u64(*floats, sz[i], floats)) return false;
    return true;
}

static gdn_scratch gdn_carve(const sl_session *s, const sl_gdn_desc *g)
{
    uint64_t sz[5] = {0};
    gdn_sizes(g, (uint64_t)s->n_batch_max, sz); /* checked when the session was laid out */
    float *p = s->kind_scratch;
    gdn_scratch c;
    c.u = p;
    c.z = c.u + sz[0];
    c.o = c.z + sz[1];
    c.beta = c.o + sz[2];
    c.alpha = c.beta + sz[3];
    return c;
}

typedef struct gdn_job {
    sl_session *s;
    const sl_layer *L;
    const sl_layer_state *st;
    int n;
    gdn_scratch sc;
} gdn_job;

/* The causal conv of channels [c0, c1) over the batch, token by token:
 * taps 0..K-2 read the state (the previous K-1 inputs), tap K-1 the
 * token's own input; the state then shifts by one. u becomes the conv
 * (silu_worker applies silu). */
static void conv_worker(void *ctx, int chunk, int n_chunks, int tid)
{
    (void)tid;
    const gdn_job *j = ctx;
    const sl_gdn_desc *g = &j->L->d.gdn;
    const int K = g->conv_k;
    const size_t C = (size_t)gdn_channels(g);
    const float *w = j->L->ssm_conv.data; /* [K, C]: channel ch's taps at ch * K */
    float *state = j->st->seq;            /* (K - 1, C) */
    long long c0, c1;
    sl_split_range((long long)C, chunk, n_chunks, &c0, &c1);
    for (int t = 0; t < j->n; t++) {
        float *u = j->sc.u + (size_t)t * C;
        for (long long ch = c0; ch < c1; ch++) {
            const float *wc = w + (size_t)ch * (size_t)K;
            /* the taps oldest first, as llama.cpp's compiled ggml_ssm_conv
             * sums them: products rounded and added in order for the taps
             * in whole fours (its vectorised part), the rest by FMA */
            const int k4 = K - K % 4;
            float acc = 0.0f;
            for (int k = 0; k < K; k++) {
                const float x = k < K - 1 ? state[(size_t)k * C + (size_t)ch] : u[ch];
                acc = k < k4 ? acc + x * wc[k] : fmaf(x, wc[k], acc);
            }
            for (int k = 0; k + 1 < K - 1; k++)
                state[(size_t)k * C + (size_t)ch] = state[(size_t)(k + 1) * C + (size_t)ch];
            if (K > 1) state[(size_t)(K - 2) * C + (size_t)ch] = u[ch];
            u[ch] = acc;
        }
    }
}

/* silu over each token's conv outputs, a whole row per token (the
 * reference's vectorised silu counts its eights from the row's start). */
static void silu_worker(void *ctx, int chunk, int n_chunks, int tid)
{
    (void)tid;
    const gdn_job *j = ctx;
    const size_t C = (size_t)gdn_channels(&j->L->d.gdn);
    long long t0, t1;
    sl_split_range(j->n, chunk, n_chunks, &t0, &t1);
    for (long long t = t0; t < t1; t++) sl_silu(j->sc.u + (size_t)t * C, (int64_t)C);
}

/* x / max(|x|, eps) over n values as llama.cpp's ggml_l2_norm computes it
 * (float squares summed in double, the scale in float): the q/k norm of the
 * reference fixtures' llama.cpp (model/llama_rev.h, 2026-08). */
static void l2_normalise(float *x, int n, float eps)
{
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    const float scale = 1.0f / fmaxf(sqrtf((float)sum), eps);
    for (int i = 0; i < n; i++) x[i] *= scale;
}

/* The same norm as later llama.cpp builds compose it (2026-09, after its
 * PR 28068): an RMS norm with eps / n (the squares summed in double, their
 * mean and 1 / sqrt(mean + eps / n) in float, x times that), then x times
 * 1 / sqrt(n). It differs from l2_normalise in the last bit of about a
 * third of the values; a quantised ssm_out rounds its activations from
 * them, so such a bit can move a Q8_0 step. */
static void l2_normalise_rms(float *x, int n, float eps)
{
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    const float nf = (float)n;
    const float mean = (float)(sum / (double)n);
    const float scale = 1.0f / sqrtf(mean + eps / nf);
    const float post = 1.0f / sqrtf(nf);
    for (int i = 0; i < n; i++) x[i] *= scale;
    for (int i = 0; i < n; i++) x[i] *= post;
}

/* L2 norms of the q and k heads of every token: pairs (token, q/k head). */
static void qk_norm_worker(void *ctx, int chunk, int n_chunks, int tid)
{
    (void)tid;
    const gdn_job *j = ctx;
    const sl_gdn_desc *g = &j->L->d.gdn;
    const size_t C = (size_t)gdn_channels(g);
    const int heads = 2 * g->n_qk; /* q heads, then k heads: contiguous in u */
    long long p0, p1;
    sl_split_range((long long)j->n * heads, chunk, n_chunks, &p0, &p1);
    for (long long p = p0; p < p1; p++) {
        float *u = j->sc.u + (size_t)(p / heads) * C;
        float *x = u + (size_t)(p % heads) * (size_t)g->d_state;
        if (g->l2_rms) l2_normalise_rms(x, g->d_state, g->eps);
        else l2_normalise(x, g->d_state, g->eps);
    }
}

static float softplus(float x) { return x > 20.0f ? x : logf(1.0f + expf(x)); }

/* The delta rule of v heads [h0, h1), token by token, then each head's
 * output norm and gate. */
static void recur_worker(void *ctx, int chunk, int n_chunks, int tid)
{
    (void)tid;
    const gdn_job *j = ctx;
    const sl_session *s = j->s;
    const sl_layer *L = j->L;
    const sl_gdn_desc *g = &L->d.gdn;
    const int ds = g->d_state, nk = g->n_qk, nv = g->n_v;
    const size_t C = (size_t)gdn_channels(g), kd = (size_t)nk * (size_t)ds;
    const size_t vd = (size_t)nv * (size_t)ds;
    const size_t conv_floats = (size_t)(g->conv_k - 1) * C;
    const float *a = L->ssm_a.data, *dt = L->ssm_dt.data, *nw = L->ssm_norm.data;
    const float out_scale = 1.0f / sqrtf((float)ds);
    const sl_attn_kernels *kr = s->attn_k; /* SIMD dot and axpy over f32 rows */
    float (*const dot)(const float *, const float *, int64_t) =
        g->dot_vtail ? sl_dot_f32_untiled_vtail : sl_dot_f32_untiled;
    long long h0, h1;
    sl_split_range(nv, chunk, n_chunks, &h0, &h1);
    for (long long h = h0; h < h1; h++) {
        float *S = j->st->seq + conv_floats + (size_t)h * (size_t)ds * (size_t)ds;
        const size_t qk = (size_t)(h % nk) * (size_t)ds;
        for (int t = 0; t < j->n; t++) {
            const float *u = j->sc.u + (size_t)t * C;
            const float *q = u + qk, *k = u + kd + qk, *v = u + 2 * kd + (size_t)h * (size_t)ds;
            const float beta = 1.0f / (1.0f + expf(-j->sc.beta[(size_t)t * (size_t)nv + (size_t)h]));
            const float gl = a[h] * softplus(j->sc.alpha[(size_t)t * (size_t)nv + (size_t)h] + dt[h]);
            const float decay = expf(gl);
            float *o = j->sc.o + (size_t)t * vd + (size_t)h * (size_t)ds;
            for (int r = 0; r < ds; r++) {
                float *row = S + (size_t)r * (size_t)ds; /* value r over key dims */
                for (int i = 0; i < ds; i++) row[i] *= decay;
                const float delta = (v[r] - dot(row, k, ds)) * beta;
                kr->axpy_f32(row, delta, k, ds);
                o[r] = dot(row, q, ds) * out_scale;
            }
            sl_rmsnorm(o, o, nw, ds, g->eps);
            float *z = j->sc.z + (size_t)t * vd + (size_t)h * (size_t)ds;
            sl_silu(z, ds); /* each (token, head) row is read here only */
            for (int r = 0; r < ds; r++) o[r] *= z[r];
        }
    }
}

static int chunks_for(long long work, int cap)
{
    return work < 1 ? 1 : work < cap ? (int)work : cap;
}

static void gdn_forward(sl_session *s, const sl_layer *L, int il, int n, float *out)
{
    const sl_gdn_desc *g = &L->d.gdn;
    const sl_mat qkv = sl_fwd_mat(&L->ssm_qkv), z = sl_fwd_mat(&L->ssm_z);
    const sl_mat beta = sl_fwd_mat(&L->ssm_beta), alpha = sl_fwd_mat(&L->ssm_alpha);
    const sl_mat *mats[4] = {&qkv, &z, &beta, &alpha};
    const gdn_scratch sc = gdn_carve(s, g);
    float *ys[4] = {sc.u, sc.z, sc.beta, sc.alpha};
    sl_fwd_mm_shared(s, mats, ys, 4, s->xb, n);

    gdn_job j = {s, L, &s->layer_state[il], n, sc};
    sl_pool_run(s->pool, conv_worker, &j, chunks_for((long long)gdn_channels(g) / 64, 32));
    sl_pool_run(s->pool, silu_worker, &j, chunks_for(n, 32));
    sl_pool_run(s->pool, qk_norm_worker, &j, chunks_for((long long)n * 2 * g->n_qk, 32));
    sl_pool_run(s->pool, recur_worker, &j, chunks_for(g->n_v, 64));
    sl_fwd_mm_tensor(s, &L->ssm_out, sc.o, n, out);
}

const sl_mixer_ops sl_mixer_gdn = {
    .name = "gated DeltaNet",
    .cache = SL_CACHE_NONE,
    .state_rows = gdn_state_rows,
    .state_seq = gdn_state_seq,
    .forward = gdn_forward,
    .truncatable = false,
    .scratch_floats = gdn_scratch_floats,
};
