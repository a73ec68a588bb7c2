/* sampler.c - the sampler chain of sampler.h.
 *
 * Sorting is our own heap sort/select over (logit desc, id asc): a total
 * order, so the result never depends on the sort algorithm, and no
 * allocation happens per token (qsort may allocate in glibc). */
#include "sample/sampler.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

sl_sampler_config sl_sampler_config_default(void)
{
    sl_sampler_config c;
    c.temp = 0.8f;
    c.top_k = 40;
    c.top_p = 0.95f;
    c.min_p = 0.05f;
    c.repeat_penalty = 1.0f;
    c.presence_penalty = 0.0f;
    c.frequency_penalty = 0.0f;
    c.repeat_last_n = 64;
    c.seed = SL_SAMPLER_DEFAULT_SEED;
    return c;
}

static int check_config(const sl_sampler_config *c, int32_t n_vocab, sl_err *err)
{
    if (n_vocab <= 0)
        return sl_err_set(err, SL_EINVAL, "sampler: n_vocab is %d, expected > 0", (int)n_vocab);
    if (isnan(c->temp))
        return sl_err_set(err, SL_EINVAL, "sampler: temperature is NaN");
    if (!(c->top_p > 0.0f && c->top_p <= 1.0f))
        return sl_err_set(err, SL_EINVAL, "sampler: top_p is %g, expected in (0, 1]",
                          (double)c->top_p);
    if (!(c->min_p >= 0.0f && c->min_p <= 1.0f))
        return sl_err_set(err, SL_EINVAL, "sampler: min_p is %g, expected in [0, 1]",
                          (double)c->min_p);
    if (!(c->repeat_penalty > 0.0f) || isinf(c->repeat_penalty))
        return sl_err_set(err, SL_EINVAL,
                          "sampler: repeat_penalty is %g, expected a finite value > 0",
                          (double)c->repeat_penalty);
    if (!isfinite(c->presence_penalty))
        return sl_err_set(err, SL_EINVAL, "sampler: presence_penalty is %g, expected finite",
                          (double)c->presence_penalty);
    if (!isfinite(c->frequency_penalty))
        return sl_err_set(err, SL_EINVAL, "sampler: frequency_penalty is %g, expected finite",
                          (double)c->frequency_penalty);
    if (c->repeat_last_n < 0)
        return sl_err_set(err, SL_EINVAL, "sampler: repeat_last_n is %d, expected >= 0",
                          (int)c->repeat_last_n);
    return SL_OK;
}

int sl_sampler_init(sl_sampler *s, const sl_sampler_config *cfg, int32_t n_vocab,
                    sl_err *err)
{
    memset(s, 0, sizeof *s);
    int rc = check_config(cfg, n_vocab, err);
    if (rc) return rc;
    s->cfg = *cfg;
    s->n_vocab = n_vocab;
    size_t n = (size_t)n_vocab;
    s->cand = malloc(n * sizeof *s->cand);
    s->weight = malloc(n * sizeof *s->weight);
    s->count = calloc(n, sizeof *s->count);
    s->stamp = calloc(n, sizeof *s->stamp);
    if (cfg->repeat_last_n > 0) s->ring = malloc((size_t)cfg->repeat_last_n * sizeof *s->ring);
    if (!s->cand || !s->weight || !s->count || !s->stamp ||
        (cfg->repeat_last_n > 0 && !s->ring)) {
        sl_sampler_free(s);
        return sl_err_set(err, SL_ENOMEM, "sampler: out of memory for %d candidates",
                          (int)n_vocab);
    }
    sl_rng_seed(&s->rng_seeded, cfg->seed);
    s->rng = s->rng_seeded;
    return SL_OK;
}

void sl_sampler_free(sl_sampler *s)
{
    if (!s) return;
    free(s->cand);
    free(s->weight);
    free(s->count);
    free(s->stamp);
    free(s->ring);
    memset(s, 0, sizeof *s);
}

void sl_sampler_reset(sl_sampler *s)
{
    for (int32_t i = 0; i < s->ring_len; i++) s->count[s->ring[i]] = 0;
    s->ring_len = 0;
    s->ring_head = 0;
    s->rng = s->rng_seeded;
}

int sl_sampler_accept(sl_sampler *s, int32_t id, sl_err *err)
{
    if (id < 0 || id >= s->n_vocab)
        return sl_err_set(err, SL_EINVAL, "sampler: accepted token id %d is outside [0, %d)",
                          (int)id, (int)s->n_vocab);
    int32_t cap = s->cfg.repeat_last_n;
    if (cap == 0) return SL_OK;
    if (s->ring_len == cap) s->count[s->ring[s->ring_head]]--;
    else s->ring_len++;
    s->ring[s->ring_head] = id;
    s->ring_head = (s->ring_head + 1) % cap;
    s->count[id]++;
    return SL_OK;
}

static bool penalties_active(const sl_sampler_config *c)
{
    return c->repeat_last_n > 0 &&
           (c->repeat_penalty != 1.0f || c->presence_penalty != 0.0f ||
            c->frequency_penalty != 0.0f);
}

void sl_sampler_apply_penalties(sl_sampler *s, sl_sampler_cand *cand)
{
    if (!penalties_active(&s->cfg) || s->ring_len == 0) return;
    if (++s->cur_stamp == 0) { /* wrapped: old stamps could collide */
        memset(s->stamp, 0, (size_t)s->n_vocab * sizeof *s->stamp);
        s->cur_stamp = 1;
    }
    const float rp = s->cfg.repeat_penalty;
    const float fp = s->cfg.frequency_penalty;
    const float pp = s->cfg.presence_penalty;
    for (int32_t k = 0; k < s->ring_len; k++) {
        int32_t id = s->ring[k];
        if (s->stamp[id] == s->cur_stamp) continue; /* each distinct id once */
        s->stamp[id] = s->cur_stamp;
        float l = cand[id].logit;
        /* dividing a negative logit would raise its probability; llama.cpp
         * multiplies it instead so the penalty always lowers it */
        l = l > 0.0f ? l / rp : l * rp;
        l -= (float)s->count[id] * fp + pp;
        cand[id].logit = l;
    }
}

/* a ranks before b: higher logit, then lower id. A strict total order once
 * NaN is excluded, so every sort below has exactly one answer. */
static inline bool better(const sl_sampler_cand *a, const sl_sampler_cand *b)
{
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

static inline void swap_cand(sl_sampler_cand *a, sl_sampler_cand *b)
{
    sl_sampler_cand t = *a;
    *a = *b;
    *b = t;
}

/* Min-heap by rank: the root is the worst element of h[0..n). */
static void sift_down(sl_sampler_cand *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && better(&h[w], &h[l])) w = l;
        if (r < n && better(&h[w], &h[r])) w = r;
        if (w == i) return;
        swap_cand(&h[i], &h[w]);
        i = w;
    }
}

/* Moves the k best of c[0..n) to c[0..k), sorted best first (k <= n). */
static void select_top(sl_sampler_cand *c, size_t n, size_t k)
{
    if (k == 0) return;
    for (size_t i = k / 2; i-- > 0;) sift_down(c, k, i);
    for (size_t i = k; i < n; i++) {
        if (better(&c[i], &c[0])) {
            swap_cand(&c[i], &c[0]);
            sift_down(c, k, 0);
        }
    }
    for (size_t end = k - 1; end > 0; end--) {
        swap_cand(&c[0], &c[end]); /* worst remaining goes to the back */
        sift_down(c, end, 0);
    }
}

/* Keeps, in order, the candidates with logit >= thr; returns their count. */
static size_t keep_at_least(sl_sampler_cand *c, size_t n, float thr)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i].logit >= thr) c[m++] = c[i];
    return m;
}

/* Length of the shortest prefix of the sorted c[0..n) whose weights
 * exp(l - lmax), added to `cum`, reach target; n if rounding never gets
 * there. */
static size_t sorted_prefix_reaching(const sl_sampler_cand *c, size_t n, float lmax, double cum,
                                     double target)
{
    for (size_t i = 0; i < n; i++) {
        cum += exp((double)c[i].logit - lmax);
        if (cum >= target) return i + 1;
    }
    return n;
}

/* Top-p over unsorted candidates without sorting them all: bucket the
 * candidates by distance below lmax (NB buckets of 1/8 nat; everything
 * further than 32 nats below shares the last), find the bucket where the
 * cumulative mass reaches target, keep every bucket above it whole, and
 * sort only that crossing bucket to place the cut. Buckets are a monotone
 * function of the logit, so the kept set is exactly a prefix of the sorted
 * order. Leaves the kept candidates in c[0..return): those of the buckets
 * above first (in no particular but deterministic order), then the
 * crossing bucket's, sorted. */
#define NB 256
#define NB_PER_NAT 8.0

static size_t bucket_of(float l, float lmax)
{
    double d = ((double)lmax - (double)l) * NB_PER_NAT;
    return d < (double)(NB - 1) ? (size_t)d : (size_t)(NB - 1);
}

static size_t nucleus_unsorted(sl_sampler_cand *c, size_t n, float lmax, double target)
{
    double mass[NB] = {0};
    for (size_t i = 0; i < n; i++) mass[bucket_of(c[i].logit, lmax)] += exp((double)c[i].logit - lmax);
    size_t bc = NB - 1;
    double above = 0.0; /* mass of the buckets before bc */
    for (size_t b = 0; b < NB; b++) {
        if (above + mass[b] >= target) {
            bc = b;
            break;
        }
        above += mass[b];
    }
    /* partition by swaps: buckets < bc, then bucket bc, then the rest */
    size_t a = 0;
    for (size_t i = 0; i < n; i++)
        if (bucket_of(c[i].logit, lmax) < bc) swap_cand(&c[a++], &c[i]);
    size_t e = a;
    for (size_t i = a; i < n; i++)
        if (bucket_of(c[i].logit, lmax) == bc) swap_cand(&c[e++], &c[i]);
    select_top(c + a, e - a, e - a);
    return a + sorted_prefix_reaching(c + a, e - a, lmax, above, target);
}

int sl_sampler_sample(sl_sampler *s, const float *logits, sl_err *err)
{
    return sl_sampler_sample_pref(s, logits, -1, err);
}

int sl_sampler_sample_pref(sl_sampler *s, const float *logits, int32_t pref, sl_err *err)
{
    const size_t nv = (size_t)s->n_vocab;
    sl_sampler_cand *c = s->cand;
    for (size_t i = 0; i < nv; i++) {
        float l = logits[i];
        if (isnan(l) || l == INFINITY)
            return sl_err_set(err, SL_EINVAL, "sampler: logit of token %zu is %s", i,
                              isnan(l) ? "NaN" : "+inf");
        c[i].id = (int32_t)i;
        c[i].logit = l;
    }
    sl_sampler_apply_penalties(s, c);

    size_t imax = 0;
    for (size_t i = 1; i < nv; i++)
        if (c[i].logit > c[imax].logit) imax = i; /* strict: lowest id wins ties */
    const float lmax = c[imax].logit;
    if (lmax == -INFINITY)
        return sl_err_set(err, SL_EINVAL, "sampler: all %zu logits are -inf", nv);
    if (isnan(lmax))
        return sl_err_set(err, SL_EINVAL, "sampler: penalties produced a NaN logit");

    const sl_sampler_config *cfg = &s->cfg;
    if (cfg->temp <= 0.0f) return c[imax].id;

    size_t n = nv;
    bool sorted = false;
    if (cfg->top_k > 0 && (size_t)cfg->top_k < n) {
        select_top(c, n, (size_t)cfg->top_k);
        n = (size_t)cfg->top_k;
        sorted = true;
    }
    const float min_logit = cfg->min_p > 0.0f ? lmax + logf(cfg->min_p) : -INFINITY;
    if (cfg->top_p < 1.0f) {
        double norm = 0.0;
        for (size_t i = 0; i < n; i++) norm += exp((double)c[i].logit - lmax);
        const double target = (double)cfg->top_p * norm;
        if (sorted) {
            n = sorted_prefix_reaching(c, n, lmax, 0.0, target);
        } else {
            /* top-p keeps a prefix of the sorted order and so does min-p
             * (its threshold depends only on lmax, which both keep), so the
             * result is the shorter prefix: top-p need only look at min-p's
             * survivors. The normaliser above already covered everyone. */
            size_t m = cfg->min_p > 0.0f ? keep_at_least(c, n, min_logit) : n;
            n = nucleus_unsorted(c, m, lmax, target);
        }
    }
    if (cfg->min_p > 0.0f) n = keep_at_least(c, n, min_logit);
    SL_ASSERT(n >= 1); /* the argmax survives every stage */

    const double inv_t = 1.0 / (double)cfg->temp;
    double total = 0.0;
    for (size_t i = 0; i < n; i++) {
        double w = exp(((double)c[i].logit - lmax) * inv_t);
        s->weight[i] = w;
        total += w;
    }
    const double target = sl_rng_uniform(&s->rng) * total;
    double acc = 0.0;
    size_t last = 0;
    if (pref >= 0) {
        /* the preferred token first: taken when u < p(pref); else the walk
         * below, past pref's share, draws from the rest renormalised */
        for (size_t i = 0; i < n; i++) {
            if (s->cand[i].id != pref || s->weight[i] <= 0.0) continue;
            acc = s->weight[i];
            if (acc > target) return pref;
            s->weight[i] = 0.0; /* walked already */
            break;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (s->weight[i] <= 0.0) continue;
        acc += s->weight[i];
        last = i;
        if (acc > target) return c[i].id;
    }
    return c[last].id; /* rounding left target at the very top */
}
