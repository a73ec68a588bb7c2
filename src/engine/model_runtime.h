/* model_runtime.h - what the engine adds to a model read from its file:
 * the memory plan and the expert streamer (model_plan.c), and the load
 * that assembles them (model_open.c). */
#ifndef SL_ENGINE_MODEL_RUNTIME_H
#define SL_ENGINE_MODEL_RUNTIME_H

#include "model/model.h"

/* Decides residency from params and the measured sizes (dense_bytes,
 * expert_bytes): fills streaming, n_slots, budget_bytes and warning. Fails
 * when the budget cannot hold the dense weights or one layer's top-k
 * experts. (model_plan.c) */
int sl_model_plan(sl_model *m, const sl_model_params *p, sl_err *err);

struct sl_io_fault; /* io/io.h */

/* Starts the expert streamer for a planned, streaming model; fault (NULL:
 * none) is injected into its reads (sl_model_load_hooked). */
int sl_model_start_streamer(sl_model *m, const sl_model_params *p,
                            const struct sl_io_fault *fault, sl_err *err);

/* What a test may add to a load beyond the public sl_model_params: the
 * seam that keeps test hooks out of include/sluice.h. */
typedef struct sl_model_test_hooks {
    const struct sl_io_fault *io_fault; /* faults injected into the streamed
                                           expert reads (src/io/io.h; copied
                                           at open); NULL: none */
} sl_model_test_hooks;

/* sl_model_load with test hooks (NULL: none, exactly sl_model_load). The
 * caller owns hooks; the model keeps no pointer into it. */
int sl_model_load_hooked(sl_model **out, const char *path, const sl_model_params *params,
                         const sl_model_test_hooks *hooks, sl_err *err);

#endif
