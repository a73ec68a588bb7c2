/* spec_policy.c - see spec_policy.h. */
#include "engine/spec_policy.h"

#include <string.h>

#define REMEASURE 64       /* steps between re-measures when costs say no */
#define PRIOR_SLOPE 0.5    /* T(k) = T(0) (1 + k PRIOR_SLOPE) before any verify step */
#define PLAIN_EVERY 32     /* verify steps before a plain one refreshes T(0) */
#define PLAIN_FIRST 2      /* plain steps measured before the first draft */
#define A_PRIOR 0.5        /* a position's chance of holding before any outcome */
#define A_RATE 0.3         /* moving average weight of an outcome */
#define T_RATE_PLAIN 0.15  /* of a plain step's time */
#define T_RATE_VERIFY 0.25 /* of a verify step's time */
#define MARGIN 1.02        /* the expected gain that switches drafting on */

void sl_spec_policy_init(sl_spec_policy *p, int max, bool always)
{
    memset(p, 0, sizeof *p);
    p->max = max < 1 ? 1 : max > SL_SPEC_MAX ? SL_SPEC_MAX : max;
    p->always = always;
    p->cap = p->max;
    for (int i = 0; i <= SL_SPEC_MAX; i++) p->acc[i] = A_PRIOR;
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
    if (w == 0) return p->t_plain * (1 + PRIOR_SLOPE * k);
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

int sl_spec_policy_len(sl_spec_policy *p)
{
    const int lim = p->cap < p->max ? p->cap : p->max;
    if (p->always) return lim;
    p->since_remeasure++;
    int best = 0;
    double g_best = 0;
    if (p->n_plain >= PLAIN_FIRST && p->since_plain < PLAIN_EVERY)
        for (int k = 1; k <= lim; k++) {
            const double g = sl_spec_policy_gain(p, k);
            if (g > g_best) {
                g_best = g;
                best = k;
            }
        }
    if (best > 0 && g_best >= MARGIN) {
        p->drafting = true;
        return best;
    }
    if (p->drafting) p->switches_off++;
    p->drafting = false;
    /* the measured costs say no: re-measure now and then if the guesses
     * hold well enough that the first cost guess would have said yes */
    if (best > 0 && p->since_remeasure >= REMEASURE &&
        expected_tokens(p, 1) / (1 + PRIOR_SLOPE) >= MARGIN) {
        p->since_remeasure = 0;
        return 1;
    }
    return 0;
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
            p->t_plain = p->n_plain ? p->t_plain + T_RATE_PLAIN * (seconds - p->t_plain)
                                    : seconds;
            p->n_plain++;
            p->since_plain = 0;
        }
        return;
    }
    if (k > p->max) k = p->max;
    if (seconds >= 0) {
        p->t_verify[k] = p->n_verify[k]
                             ? p->t_verify[k] + T_RATE_VERIFY * (seconds - p->t_verify[k])
                             : seconds;
        p->n_verify[k]++;
        p->since_remeasure = 0;
    }
    p->since_plain++;
    outcome(p, k, c);
}
