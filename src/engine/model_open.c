/* model_open.c - a model ready to run: the file read and bound
 * (src/model), then what the engine adds at load: the lossy routing knobs,
 * the memory plan (model_plan.c), the resident weights placed, the expert
 * streamer and its lock, and the compute pool. */
#include <stdio.h>

#include "engine/model_runtime.h"
#include "engine/route_knobs.h"
#include "experts/streamer.h"
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
    if (m->described_only) {
        *out = m;
        return SL_OK;
    }
    /* --n-expert-used lowers the layers' top-k: before the plan counts it */
    if ((rc = sl_route_knobs_create(&m->knobs, m->layers, m->hp.n_layer, params, err)))
        goto fail;
    if ((rc = sl_model_plan(m, params, err))) goto fail;
    if ((rc = sl_model_place_weights(m, params, err))) goto fail;
    if (m->streaming &&
        (rc = sl_model_start_streamer(m, params, hooks ? hooks->io_fault : NULL, err)))
        goto fail;
    if (m->streamer) pthread_mutex_init(&m->stream_mu, NULL);
    if ((rc = sl_pool_create(&m->pool, m->n_threads > 0 ? m->n_threads : sl_cpu_core_count(),
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
    sl_pool_free(m->pool);
    if (m->streamer) pthread_mutex_destroy(&m->stream_mu);
    sl_streamer_free(m->streamer);
    sl_route_knobs_free(m->knobs);
    if (m->trace) fclose(m->trace);
    sl_model_release(m);
}
