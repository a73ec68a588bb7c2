/* spec_policy.c - see spec_policy.h. */
#include "engine/spec_policy.h"

#include <string.h>

#define FIRST_BACKOFF 16   /* plain steps after drafting stops paying */
#define LAST_BACKOFF 256   /* the longest stretch between probes */
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
    p->backoff = FIRST_BACKOFF;
    for (int i = 0; i <= SL_SPEC_MAX; i++) p->acc[i] = A_PRIOR;
}

/* T(k): measured, else T(0) plus k times the mean extra cost per draft of
 * the lengths measured (never below T(0)); 0 when nothing is measured. */
static double verify_cost(const sl_spec_policy *p, int k)
{
    if (p->n_verify[k]) return p->t_verify[k];
    double slope = 0, w = 0;
    for (int j = 1; j <= p->max; j++)
        if (p->n_verify[j]) {
            slope += p->n_verify[j] * (p->t_verify[j] - p->t_plain) / j;
            w += p->n_verify[j];
        }
    if (w == 0) return 0;
    slope /= w;
    return p->t_plain + (slope > 0 ? slope : 0) * k;
}

double sl_spec_policy_gain(const sl_spec_policy *p, int k)
{
    if (k < 1 || k > p->max || p->n_plain == 0 || p->t_plain <= 0) return 0;
    const double t = verify_cost(p, k);
    if (t <= 0) return 0;
    /* expected tokens: an untried position is taken to hold as often as
     * the one before it */
    double e = 1, chain = 1, a = A_PRIOR;
    for (int i = 1; i <= k; i++) {
        if (p->n_acc[i]) a = p->acc[i];
        chain *= a;
        e += chain;
    }
    return e * p->t_plain / t;
}

int sl_spec_policy_len(sl_spec_policy *p)
{
    const int lim = p->cap < p->max ? p->cap : p->max;
    if (p->always) return lim;
    if (p->n_plain < PLAIN_FIRST || p->since_plain >= PLAIN_EVERY) return 0;
    if (p->off_left > 0) {
        p->off_left--;
        return 0;
    }
    if (p->probing) return 1;
    int best = 0;
    double g_best = 0;
    for (int k = 1; k <= lim; k++) {
        const double g = sl_spec_policy_gain(p, k);
        if (g > g_best) {
            g_best = g;
            best = k;
        }
    }
    if (best == 0) return 1; /* no verify step measured yet: the cheapest probe */
    if (g_best < MARGIN) {
        p->switches_off++;
        p->off_left = p->backoff - 1; /* this step is the first plain one */
        p->backoff = 2 * p->backoff < LAST_BACKOFF ? 2 * p->backoff : LAST_BACKOFF;
        p->probing = true;
        return 0;
    }
    p->backoff = FIRST_BACKOFF;
    return best;
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
    if (c > k) c = k;
    if (seconds >= 0) {
        p->t_verify[k] = p->n_verify[k]
                             ? p->t_verify[k] + T_RATE_VERIFY * (seconds - p->t_verify[k])
                             : seconds;
        p->n_verify[k]++;
    }
    p->since_plain++;
    /* positions 1..c held; c + 1 (if drafted) did not; later ones were not tried */
    for (int i = 1; i <= c + 1 && i <= k; i++) {
        const double x = i <= c ? 1.0 : 0.0;
        p->acc[i] += A_RATE * (x - p->acc[i]);
        p->n_acc[i]++;
    }
    const int cap = c == k ? 2 * k : c + 1;
    p->cap = cap < p->max ? cap : p->max;
    p->probing = false;
}
