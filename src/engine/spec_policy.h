/* spec_policy.h - when drafting pays: the draft length of each generation
 * step, and when to ask the drafter for guesses that are not verified,
 * from what the session has measured so far.
 *
 * A step that verifies k drafts costs T(k) seconds, the drafter's own
 * work for them included, and yields on average E(k) = 1 + a1 + a1 a2 +
 * ... + a1..ak tokens, where ai is the chance that the draft at position i
 * holds once the ones before it did. Plain decoding yields one token in
 * T(0). The policy drafts the k that maximises E(k) T(0) / T(k) when that
 * beats 1 by a 2 % margin, else nothing. T(k) are the caller's measured
 * step times (moving averages, each time clipped to within twice the
 * average: a preempted step must not swing them); a length not measured
 * is extrapolated
 * linearly from those that were, and before any verify step is taken as
 * T(0) (1 + k / 2) + k d, d the drafter's measured time a guess.
 *
 * ai are moving averages of the outcomes at each position, of real drafts
 * and of probes: while it does not draft, the caller asks the drafter for
 * guesses now and then (sl_spec_policy_probe) and reports whether they
 * would have held, and what asking cost. Probes are spaced so that they
 * cost about 1 % of plain decoding (a drafter that costs nothing, prompt
 * lookup, is asked every step); those that cost something stop while the
 * measured costs say that drafting would not pay even if every guess
 * held. When
 * the measured costs say no but the guesses hold often enough that the
 * optimistic first guess of T would say yes, one draft is verified to
 * measure T again: after 64 steps, then after twice as many each time it
 * still says no. The first two steps are plain, and a plain step is forced
 * after 32 verify steps, to keep T(0) current. The length is also capped
 * by the last outcome (twice its length when all held, else the part that
 * held plus one): a drafter's hits come in runs.
 *
 * One policy can serve every reply of a session (chat turns, a server
 * slot): what it learnt carries over.
 *
 * Pure arithmetic on the figures passed in: no clock, no allocation. The
 * policy only picks lengths; the generator's output never depends on it. */
#ifndef SL_ENGINE_SPEC_POLICY_H
#define SL_ENGINE_SPEC_POLICY_H

#include <stdbool.h>

#define SL_SPEC_MAX 32 /* the longest draft the policy knows (SL_GEN_MAX_DRAFT) */

typedef struct sl_spec_policy {
    int max;                        /* drafts at most a step (1..SL_SPEC_MAX) */
    bool always;                    /* draft whenever there is a guess (no cost test) */
    double t_plain;                 /* moving average of a plain step, seconds */
    int n_plain;                    /* plain steps measured */
    double t_verify[SL_SPEC_MAX + 1]; /* by drafts verified: moving average, seconds */
    int n_verify[SL_SPEC_MAX + 1];
    double acc[SL_SPEC_MAX + 1];    /* acc[i]: position i holds given 1..i-1 held */
    int n_acc[SL_SPEC_MAX + 1];     /* outcomes seen at position i */
    double t_probe;                 /* moving average of a probe's time, seconds */
    double probe_guesses;           /* moving average of the guesses a probe made */
    int n_probe;                    /* probes measured */
    int cap;                        /* the last outcome's cap on the length */
    int since_plain;                /* verify steps since the last plain one measured */
    int since_remeasure;            /* steps since T was last measured or re-measured */
    int remeasure_gap;              /* steps a re-measure waits for */
    int since_probe;                /* plain steps since the last probe */
    bool drafting;                  /* the last decision drafted */
    long switches_off;              /* times drafting was switched off */
    long probes;                    /* probes asked for */
} sl_spec_policy;

/* A policy for drafts of at most max tokens (clamped to 1..SL_SPEC_MAX);
 * always: skip the cost test (every guess is verified, lengths follow the
 * last outcome only), for tests and measurements. */
void sl_spec_policy_init(sl_spec_policy *p, int max, bool always);

/* The longest draft to verify this step: 0 for a plain step. */
int sl_spec_policy_len(sl_spec_policy *p);

/* After sl_spec_policy_len said 0: how many guesses to ask the drafter for
 * without verifying them (0: none this step). */
int sl_spec_policy_probe(sl_spec_policy *p);

/* A probe's cost: guesses made, in seconds (the drafter's time alone). */
void sl_spec_policy_probe_cost(sl_spec_policy *p, int guesses, double seconds);

/* Records guesses that were not verified: of k guessed for the positions
 * after a plain step, the first c matched the tokens then taken. */
void sl_spec_policy_observe(sl_spec_policy *p, int k, int c);

/* Records a step: k drafts verified (0: a plain step), the first c of
 * them held, and the step cost seconds, the drafter's time for the drafts
 * included but not a probe's (< 0: not measured, e.g. the first step
 * after the prompt). */
void sl_spec_policy_record(sl_spec_policy *p, int k, int c, double seconds);

/* The expected speed of verifying k drafts against plain decoding (1: the
 * same), from the figures so far; 0 when T(0) or T(k) cannot be told yet. */
double sl_spec_policy_gain(const sl_spec_policy *p, int k);

#endif
