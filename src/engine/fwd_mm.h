/* fwd_mm.h - the forward pass's matrix products, spread over the session's
 * compute pool.
 *
 * Owns: quantising activation rows once for the matrices that read them,
 * and running several matrix products as one pool job, so a decode step
 * costs a handful of fork-joins per layer instead of one per matrix (a
 * token through 8 experts is 24 products; each fork-join costs a wake-up
 * and a tail where one thread waits for the other). Each output value is
 * still one vec_dot computed by one thread, so results do not depend on
 * how products are grouped, on the thread count or on the batch split.
 * Must not know: layers, experts, routing (forward.c decides what to
 * multiply). */
#ifndef SL_ENGINE_FWD_MM_H
#define SL_ENGINE_FWD_MM_H

#include "engine/session.h"

/* One product of a job: y[t * ldy + r] = dot(row r of mat, acts[t]) for
 * t < n and every row r. acts[t] are rows prepared for mat's activation
 * type (sl_matvec_act_type); form[t] the row's product form (ops.h
 * SL_MM_FORM_*), or NULL: the batched forms (sl_fwd_form gives a
 * session's). Nothing is owned. */
typedef struct sl_mm_item {
    const sl_mat *mat;
    const void *const *acts;
    int n;
    float *y;
    size_t ldy;
    const uint8_t *form;
} sl_mm_item;

/* The product forms of s's next n activation rows (session.h mm_form):
 * when n is the count they were set for, else NULL (rows that are not the
 * batch's, e.g. a guess of the next layer's experts: the batched forms). */
const uint8_t *sl_fwd_form(const sl_session *s, int n);

/* A routed expert ready to compute: its id and its three matrices. */
typedef struct sl_expert_w {
    int e;
    sl_mat g, u, d;
} sl_expert_w;

/* Runs the n_items products as one pool job (n_items <= the session's
 * mm_cap; the caller owns items, and may keep them in s->mm_items). Items
 * with n == 0 are skipped. */
void sl_fwd_mm_run(sl_session *s, const sl_mm_item *items, int n_items);

/* Rows to prepare for a matrix: row i (i = idx[t], or t when idx is NULL,
 * for t < n) of x, with stride ldx, is quantised for mat into
 * act + i * stride and acts[i] points there. When gate is non-NULL the row
 * is first replaced by silu(row) * gate row (SwiGLU's combine, in place in
 * x). stride must hold sl_matvec_act_bytes(mat->type, mat->cols), and
 * act has cap bytes: every row written must fit (asserted). */
typedef struct sl_prep {
    const sl_mat *mat;
    float *x;
    size_t ldx;
    const float *gate;
    const int *idx;
    int n;
    uint8_t *act;
    size_t stride;
    size_t cap;
    const void **acts;
    bool oai;           /* with gate: gpt-oss's clamped SwiGLU instead of SwiGLU */
} sl_prep;

/* Prepares the rows of p over the pool. */
void sl_fwd_prepare(sl_session *s, const sl_prep *p);

/* ys[i](n, mats[i]->rows) = x(n, cols) * mats[i]^T for n_mats <= 4
 * matrices reading the same input rows: x is quantised once per distinct
 * activation type (usually once), and the products of one type run as one
 * job. Uses the session's first activation set. */
void sl_fwd_mm_shared(sl_session *s, const sl_mat *const *mats, float *const *ys, int n_mats,
                      const float *x, int n);

/* The matrix view of a bound 2-D (or stacked, first slice) tensor. */
sl_mat sl_fwd_mat(const sl_tensor *t);

/* y(n, rows) = x(n, cols) * t^T for a bound tensor t: sl_fwd_mm_shared of
 * one matrix. */
void sl_fwd_mm_tensor(sl_session *s, const sl_tensor *t, const float *x, int n, float *y);

/* ---- products shared across the members of a multi-session step -------
 *
 * forward_multi.c runs each member's mixer on that member's own session, and
 * the mixer multiplies its own rows by its projections (mix_attn.c: q, k, v
 * of s->xb, then o of s->attn_out), one member at a time. A hook lets the
 * step do those products once over the rows of every member instead:
 *
 *   pre: the next sl_fwd_mm_shared on session s whose matrices are exactly
 *        pre_data[0..n_pre) (by data pointer, in that order) over n rows
 *        takes its outputs from pre_src[i] (n rows of mats[i]->rows values,
 *        computed by the step beforehand from the same input rows) instead
 *        of computing them;
 *   def: the next sl_fwd_mm_tensor on s of the tensor with data def_data
 *        over n rows copies its input rows (n x def_cols) to def_x and
 *        leaves y unwritten: the step computes y for every member afterwards
 *        (only when nothing in the mixer reads or changes y after that
 *        call: the step checks what it can, e.g. no output bias).
 *
 * Each output row is computed from its own input row by the kernel of the
 * same matrix whatever the number of rows (matmul_order.h), so values are
 * bit-identical either way; a call that does not match is computed as
 * usual (the *_used flags say what was taken). One hook per thread
 * (thread-local): set it around one member's mixer, clear it after. */
typedef struct sl_fwd_hook {
    const sl_session *s;
    int n;                    /* the member's rows */
    int n_pre;                /* 0: no pre */
    const void *pre_data[4];
    const float *pre_src[4];
    bool pre_used;
    const void *def_data;     /* NULL: no def */
    float *def_x;
    int64_t def_cols;
    bool def_used;
} sl_fwd_hook;

/* Installs h on the calling thread (NULL: none); the caller owns h. */
void sl_fwd_hook_set(sl_fwd_hook *h);

/* ---- timing of a multi-session step (bench only) ----------------------
 *
 * bench/bench_multi.c measures where a step of sl_session_eval_multi
 * spends its time. While a profile is installed (sl_fwd_prof_set), every
 * matrix-product job adds its wall time to the bucket of the step's
 * current phase (set by forward_multi.c) and of its kind (routed expert
 * matrices, n_experts > 1, or dense ones), activation preparing likewise;
 * forward_multi.c adds each phase's whole time and the number of distinct
 * experts each layer's step computes. One process-wide pointer, not
 * synchronised: install it only while one thread evaluates (the bench);
 * nothing else installs one, and a NULL profile costs one load per job. */
enum { SL_PROF_MIXER, SL_PROF_FFN, SL_PROF_HEAD, SL_PROF_OTHER, SL_PROF_N };
typedef struct sl_fwd_prof {
    bool cpu;                      /* time on the calling thread's CPU clock (for
                                      one compute thread on a busy machine), else
                                      a monotonic wall clock */
    int phase;                     /* SL_PROF_*: set by forward_multi.c */
    double total[SL_PROF_N];       /* seconds of each phase */
    double mm_dense[SL_PROF_N];    /* of which products of dense matrices */
    double mm_expert[SL_PROF_N];   /* of which products of routed experts */
    double prepare[SL_PROF_N];     /* of which quantising activations */
    long long steps, layer_steps;  /* steps, and (step, routed layer) pairs */
    long long experts, choices;    /* distinct experts and (token, rank) choices
                                      summed over the layer steps */
    long long hook_calls, hook_pre, hook_def; /* members' mixers run with the shared-
                                      projection hook, and how many took pre / def */
} sl_fwd_prof;

/* Installs p (NULL: none) for the calls that follow; the caller owns p. */
void sl_fwd_prof_set(sl_fwd_prof *p);

/* The installed profile, or NULL. */
sl_fwd_prof *sl_fwd_prof_get(void);

/* Seconds on p's clock (p->cpu). */
double sl_fwd_prof_now(const sl_fwd_prof *p);

/* Row stride for activations of `cols` values prepared for matrices of
 * type t: the prepared size rounded up to a cache line. */
size_t sl_fwd_act_stride(sl_type t, int64_t cols);

#endif
