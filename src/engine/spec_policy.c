/* spec_policy.c - see spec_policy.h. */
#include "engine/spec_policy.h"

#include <math.h>
#include <string.h>

#define REMEASURE 64       /* steps before the first re-measure when costs say no */
#define REMEASURE_MAX 4096 /* the longest wait, after doubling */
#define PRIOR_SLOPE 0.5    /* T(k) = T(0) (1 + k PRIOR_SLOPE) + k d before any verify step */
#define PLAIN_EVERY 32     /* verify steps before a plain one refreshes T(0) */
#define PLAIN_FIRST 2      /* plain steps measured before the first draft */
#define A_PRIOR 0.5        /* a position's chance of holding before any outcome */
#define A_RATE 0.3         /* moving average weight of an outcome */
#define T_RATE_PLAIN 0.15  /* of a plain step's time */
#define T_RATE_VERIFY 0.25 /* of a verify step's time */
#define T_RATE_PROBE 0.3   /* of a probe's time */
#define MARGIN 1.02        /* the expected gain that switches drafting on */
#define PROBE_SHARE 0.01   /* probes cost about this share of plain decoding */
#define PROBE_GAP_MAX 4096 /* steps between probes at most */
#define CLIP 2.0           /* a time counts at most this many times its average */

void sl_spec_policy_init(sl_spec_policy *p, int max, bool always)
{
    memset(p, 0, sizeof *p);
    p->max = max < 1 ? 1 : max > SL_SPEC_MAX ? SL_SPEC_MAX : max;
    p->always = always;
    p->cap = p->max;
    p->remeasure_gap = REMEASURE;
    p->since_probe = PROBE_GAP_MAX; /* the first probe comes at once */
    for (int i = 0; i <= SL_SPEC_MAX; i++) p->acc[i] = A_PRIOR;
}

/* A moving average avg of n samples moved by x at rate r; x clipped to
 * [avg / CLIP, CLIP avg] once there is a nonzero average: a step the scheduler
 * preempted (milliseconds on a loaded machine, against steps of a tenth of
 * one) must not make plain decoding look dear or drafting cheap. */
static double average(double avg, int n, double x, double r)
{
    if (n == 0) return x;
    if (avg <= 0) return avg + r * x; /* a drafter that cost nothing so far */
    if (x > CLIP * avg) x = CLIP * avg;
    if (x < avg / CLIP) x = avg / CLIP;
    return avg + r * (x - avg);
}

/* The drafter's time a guess, from the probes (0: none measured). */
static double guess_cost(const sl_spec_policy *p)
{
    return p->n_probe && p->probe_guesses > 0 ? p->t_probe / p->probe_guesses : 0;
}

/* The first guess of T(k), before any verify step: optimistic on the
 * verify step, the drafter's time as the probes measured it. */
static double prior_cost(const sl_spec_policy *p, int k)
{
    return p->t_plain * (1 + PRIOR_SLOPE * k) + k * guess_cost(p);
}

/* T(k): measured, else T(0) plus k times the mean extra cost per draft of
 * the lengths measured (never below T(0)), else the first guess. */
static double verify_cost(const sl_spec_policy *p, int k)
{
    if (p->n_verify[k]) return p->t_verify[k];
    double slope = 0, w = 0;
    for (int j = 1; j <= p->max; j++)
        if (p->n_verify[j]) {
            slope += p->n_verify[j] * (p->t_verify[j] - p->t_plain) / j;
            w += p->n_verify[j];
        }
    if (w == 0) return prior_cost(p, k);
    slope /= w;
    return p->t_plain + (slope > 0 ? slope : 0) * k;
}

/* E(k): an untried position is taken to hold as often as the one before. */
static double expected_tokens(const sl_spec_policy *p, int k)
{
    double e = 1, chain = 1, a = A_PRIOR;
    for (int i = 1; i <= k; i++) {
        if (p->n_acc[i]) a = p->acc[i];
        chain *= a;
        e += chain;
    }
    return e;
}

double sl_spec_policy_gain(const sl_spec_policy *p, int k)
{
    if (k < 1 || k > p->max || p->n_plain == 0 || p->t_plain <= 0) return 0;
    return expected_tokens(p, k) * p->t_plain / verify_cost(p, k);
}

static int limit(const sl_spec_policy *p) { return p->cap < p->max ? p->cap : p->max; }

/* Whether no length up to lim would pay even if every guess held. */
static bool never_pays(const sl_spec_policy *p, int lim)
{
    if (p->n_plain < PLAIN_FIRST || p->t_plain <= 0) return false;
    for (int k = 1; k <= lim; k++)
        if ((k + 1) * p->t_plain >= MARGIN * verify_cost(p, k)) return false;
    return true;
}

int sl_spec_policy_len(sl_spec_policy *p)
{
    const int lim = limit(p);
    if (p->always) return lim;
    p->since_remeasure++;
    if (p->n_plain < PLAIN_FIRST) return 0;
    if (p->since_plain >= PLAIN_EVERY) return 0; /* a plain step to measure, drafting or not */
    int best = 0;
    double g_best = 0;
    for (int k = 1; k <= lim; k++) {
        const double g = sl_spec_policy_gain(p, k);
        if (g > g_best) {
            g_best = g;
            best = k;
        }
    }
    if (best > 0 && g_best >= MARGIN) {
        if (!p->drafting) p->remeasure_gap = REMEASURE;
        p->drafting = true;
        return best;
    }
    if (p->drafting) p->switches_off++;
    p->drafting = false;
    /* the measured costs say no: re-measure now and then if the guesses
     * hold well enough that the first cost guess would have said yes */
    if (best > 0 && p->since_remeasure >= p->remeasure_gap &&
        expected_tokens(p, 1) * p->t_plain >= MARGIN * prior_cost(p, 1)) {
        p->since_remeasure = 0;
        p->remeasure_gap = p->remeasure_gap < REMEASURE_MAX / 2 ? 2 * p->remeasure_gap
                                                                : REMEASURE_MAX;
        return 1;
    }
    return 0;
}

int sl_spec_policy_probe(sl_spec_policy *p)
{
    if (p->always || p->drafting) return 0;
    const int lim = limit(p);
    p->since_probe++;
    /* spaced so that probes cost PROBE_SHARE of plain decoding; one that
     * costs something is not made while no guess could make drafting pay */
    double gap = 1;
    if (p->n_probe && p->t_plain > 0) gap = ceil(p->t_probe / (PROBE_SHARE * p->t_plain));
    if (gap > PROBE_GAP_MAX) gap = PROBE_GAP_MAX;
    if (gap > 1 && never_pays(p, lim)) return 0;
    if (p->since_probe < gap) return 0;
    p->since_probe = 0;
    p->probes++;
    return lim;
}

void sl_spec_policy_probe_cost(sl_spec_policy *p, int guesses, double seconds)
{
    if (seconds < 0 || guesses < 0) return;
    p->t_probe = average(p->t_probe, p->n_probe, seconds, T_RATE_PROBE);
    p->probe_guesses = p->n_probe ? p->probe_guesses + T_RATE_PROBE * (guesses - p->probe_guesses)
                                  : guesses;
    p->n_probe++;
}

/* The moving averages of positions 1..min(c + 1, k): 1..c held, c + 1 not. */
static void outcome(sl_spec_policy *p, int k, int c)
{
    if (k > p->max) k = p->max;
    if (c > k) c = k;
    for (int i = 1; i <= c + 1 && i <= k; i++) {
        const double x = i <= c ? 1.0 : 0.0;
        p->acc[i] += A_RATE * (x - p->acc[i]);
        p->n_acc[i]++;
    }
    const int cap = c == k ? 2 * k : c + 1;
    p->cap = cap < p->max ? cap : p->max;
}

void sl_spec_policy_observe(sl_spec_policy *p, int k, int c)
{
    if (k > 0) outcome(p, k, c);
}

void sl_spec_policy_record(sl_spec_policy *p, int k, int c, double seconds)
{
    if (k <= 0) {
        if (seconds >= 0) {
            p->t_plain = average(p->t_plain, p->n_plain, seconds, T_RATE_PLAIN);
            p->n_plain++;
            p->since_plain = 0;
        }
        return;
    }
    if (k > p->max) k = p->max;
    if (seconds >= 0) {
        p->t_verify[k] = average(p->t_verify[k], p->n_verify[k], seconds, T_RATE_VERIFY);
        p->n_verify[k]++;
        p->since_remeasure = 0;
    }
    p->since_plain++;
    outcome(p, k, c);
}
