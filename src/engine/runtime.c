/* runtime.c - what a caller sets on a loaded model's runtime
 * (model_runtime.h) after load, public in include/sluice.h: the expert
 * cache's policy, a route trace to replay, the drive rate, the usage
 * history behind the warm start. Each setter takes the runtime's lock (the
 * one boundary model_runtime.h states). */
#include <errno.h>
#include <string.h>

#include "engine/model_runtime.h"
#include "engine/route_knobs.h"
#include "experts/route_trace.h"
#include "experts/streamer.h"
#include "experts/usage_history.h"

/* The runtime's streamer, or NULL after setting err: the experts are all
 * resident. */
static sl_streamer *streamer_of(const sl_model *m, const char *what, sl_err *err)
{
    if (m && m->rt && m->rt->streamer) return m->rt->streamer;
    sl_err_set(err, SL_EUNSUPPORTED, "%s works on streamed experts, and this model's experts "
               "are all resident", what);
    return NULL;
}

int sl_model_set_cache_policy(sl_model *m, const char *name, sl_err *err)
{
    sl_streamer *st = streamer_of(m, "a cache policy", err);
    if (!st) return err->code;
    pthread_mutex_lock(&m->rt->mu);
    const int rc = sl_streamer_set_policy(st, name, err);
    pthread_mutex_unlock(&m->rt->mu);
    return rc;
}

/* Whether t fits m: its layers, experts and every routed layer's file
 * top-k, and room for the cache-route candidates (M) when they are set. */
static int trace_fits(const sl_model *m, const sl_route_trace *t, const char *path, sl_err *err)
{
    for (int il = 0; il < m->hp.n_layer; il++) {
        const sl_layer_desc *d = &m->layers[il].d;
        if (d->ffn.kind != SL_FFN_ROUTED) continue;
        if (sl_route_trace_check(t, m->hp.n_layer, d->ffn.router.n_expert,
                                 sl_model_file_top_k(m, il), err))
            return sl_err_prefix(err, "'%s' does not fit the model", path);
    }
    sl_knob_stats ks;
    sl_model_knob_stats(m, &ks);
    if (ks.cache_route_from > sl_route_trace_top_k(t))
        return sl_err_set(err, SL_EINVAL, "--cache-route %d,%d: the trace records only %d "
                          "experts per token and layer, so M can be at most %d under "
                          "--route-trace (lower the experts used with --n-expert-used to leave "
                          "room to choose)", ks.cache_route_keep, ks.cache_route_from,
                          sl_route_trace_top_k(t), sl_route_trace_top_k(t));
    return SL_OK;
}

void sl_runtime_replay(sl_runtime *rt, sl_route_trace *t)
{
    sl_route_trace_free(rt->routing.trace);
    rt->routing.trace = t;
    if (rt->streamer) sl_streamer_replaying(rt->streamer, t != NULL);
}

int sl_model_set_route_trace(sl_model *m, const char *path, sl_err *err)
{
    sl_streamer *st = streamer_of(m, "a route trace", err);
    if (!st) return err->code;
    sl_route_trace *t;
    int rc = sl_route_trace_load(&t, path, err);
    if (rc) return rc;
    if ((rc = trace_fits(m, t, path, err))) {
        sl_route_trace_free(t);
        return rc;
    }
    pthread_mutex_lock(&m->rt->mu);
    sl_runtime_replay(m->rt, t);
    pthread_mutex_unlock(&m->rt->mu);
    return SL_OK;
}

int sl_model_set_drive_rate(sl_model *m, double bytes_per_s, sl_err *err)
{
    sl_streamer *st = streamer_of(m, "a drive rate", err);
    if (!st) return err->code;
    if (!(bytes_per_s > 0))
        return sl_err_set(err, SL_EINVAL, "a drive rate must be above 0 bytes a second");
    pthread_mutex_lock(&m->rt->mu);
    sl_streamer_set_drive_rate(st, bytes_per_s);
    pthread_mutex_unlock(&m->rt->mu);
    return SL_OK;
}

int sl_model_calibrate_drive(sl_model *m, uint64_t min_bytes, double max_s, double *bytes_per_s,
                             sl_err *err)
{
    sl_streamer *st = streamer_of(m, "a drive calibration", err);
    if (!st) return err->code;
    pthread_mutex_lock(&m->rt->mu);
    const int rc = sl_streamer_calibrate(st, min_bytes, max_s, bytes_per_s, err);
    pthread_mutex_unlock(&m->rt->mu);
    return rc;
}

int sl_model_usage_start(sl_model *m, const char *path, const char *model_id, double decay,
                         bool preload, bool *found, sl_err *err)
{
    *found = false;
    sl_streamer *st = streamer_of(m, "an expert usage history", err);
    if (!st) return err->code;
    sl_usage *u = NULL;
    int rc = sl_usage_load(&u, found, path, model_id, m->hp.n_layer, m->hp.n_expert, decay, err);
    if (rc) {
        /* a damaged or foreign file: start afresh, keeping load's message */
        sl_err fresh;
        *found = false;
        if (sl_usage_create(&u, model_id, m->hp.n_layer, m->hp.n_expert, &fresh)) return rc;
    }
    pthread_mutex_lock(&m->rt->mu);
    sl_usage_free(m->rt->routing.usage);
    m->rt->routing.usage = u;
    if (preload && *found) sl_streamer_warm_start(st, u, 0);
    pthread_mutex_unlock(&m->rt->mu);
    return rc;
}

int sl_model_usage_save(sl_model *m, const char *path, sl_err *err)
{
    sl_streamer *st = streamer_of(m, "an expert usage history", err);
    if (!st) return err->code;
    pthread_mutex_lock(&m->rt->mu);
    const sl_usage *u = m->rt->routing.usage;
    const int rc = u ? sl_usage_save(u, path, 0, err) : SL_OK;
    pthread_mutex_unlock(&m->rt->mu);
    return rc;
}

void sl_model_stream_mark(const sl_model *m)
{
    if (!m || !m->rt || !m->rt->streamer) return;
    pthread_mutex_lock(&m->rt->mu);
    sl_streamer_mark(m->rt->streamer);
    pthread_mutex_unlock(&m->rt->mu);
}

int sl_model_io_trace_flush(const sl_model *m, sl_err *err)
{
    FILE *f = m && m->rt ? m->rt->trace : NULL;
    if (!f) return SL_OK;
    pthread_mutex_lock(&m->rt->mu);
    errno = 0;
    const bool ok = fflush(f) == 0 && !ferror(f);
    const int e = errno;
    pthread_mutex_unlock(&m->rt->mu);
    return ok ? SL_OK : sl_err_set(err, SL_EIO, "%s", e ? strerror(e) : "an earlier write failed");
}
