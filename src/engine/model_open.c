/* model_open.c - a model ready to run: the file read and bound
 * (src/model), then the runtime the engine makes beside it at load
 * (model_runtime.h): the lossy routing knobs, the memory plan
 * (model_plan.c), the resident weights placed, the expert streamer and its
 * lock, and the compute pool. */
#include <stdio.h>
#include <stdlib.h>

#include "engine/model_runtime.h"
#include "engine/route_knobs.h"
#include "experts/route_trace.h"
#include "experts/streamer.h"
#include "experts/usage_history.h"
#include "util/pool.h"

int sl_model_load(sl_model **out, const char *path, const sl_model_params *params,
                  sl_err *err)
{
    return sl_model_load_hooked(out, path, params, NULL, err);
}

int sl_model_load_hooked(sl_model **out, const char *path, const sl_model_params *params,
                         const sl_model_test_hooks *hooks, sl_err *err)
{
    sl_model *m;
    int rc = sl_model_read(&m, path, params, err);
    if (rc) return rc;
    sl_runtime *rt = m->rt = calloc(1, sizeof *m->rt);
    if (!rt) {
        rc = sl_err_set(err, SL_ENOMEM, "out of memory");
        goto fail;
    }
    rt->n_threads = params && params->n_threads > 0 ? params->n_threads : 0;
    if (m->described_only) {
        *out = m;
        return SL_OK;
    }
    /* --n-expert-used lowers the layers' top-k: before the plan counts it */
    if ((rc = sl_route_knobs_create(&rt->routing.knobs, m->layers, m->hp.n_layer, params, err)))
        goto fail;
    if ((rc = sl_model_plan(m, params, err))) goto fail;
    if ((rc = sl_model_place_weights(m, params, rt->streaming, err))) goto fail;
    if (rt->streaming &&
        (rc = sl_model_start_streamer(m, params, hooks ? hooks->io_fault : NULL, err)))
        goto fail;
    if (rt->streamer) pthread_mutex_init(&rt->mu, NULL);
    if ((rc = sl_pool_create(&rt->pool, rt->n_threads > 0 ? rt->n_threads : sl_cpu_core_count(),
                             err)))
        goto fail;
    *out = m;
    return SL_OK;
fail:
    sl_model_free(m);
    return rc;
}

void sl_model_free(sl_model *m)
{
    if (!m) return;
    sl_runtime *rt = m->rt;
    if (rt) {
        sl_pool_free(rt->pool);
        if (rt->streamer) pthread_mutex_destroy(&rt->mu);
        sl_streamer_free(rt->streamer);
        sl_route_knobs_free(rt->routing.knobs);
        sl_route_trace_free(rt->routing.trace);
        sl_usage_free(rt->routing.usage);
        if (rt->trace) fclose(rt->trace);
        free(rt);
    }
    sl_model_release(m);
}
