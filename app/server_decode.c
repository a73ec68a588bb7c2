/* server_decode.c - see server_decode.h. */
#include "server_decode.h"

#include <errno.h>
#include <string.h>

#include "util/status.h"
#include "util/timer.h"

int srv_eval_prompt(srv_batcher *b, gen_ctx *g, const int32_t *ids, int n, sl_err *err)
{
    for (int i = 0; i < n;) {
        const int want = n - i < g->n_batch ? n - i : g->n_batch;
        const int got = srv_batch_eval(b, g->s, ids + i, want, err);
        if (got < 0) return got;
        for (int j = 0; j < got; j++) {
            int rc = sl_sampling_accept(g->smp, ids[i + j], err);
            if (rc) return rc;
        }
        i += got;
    }
    return SL_OK;
}

/* The reply's tail that may still turn into a stop text. */
typedef struct holdback {
    const char *const *stops;  /* NULL-terminated, or NULL */
    char buf[2 * 64 + 8];      /* stops are at most 64 bytes (server_slots.h) or the
                                  template's own short markers */
    size_t len;
} holdback;

/* Writes the first k held bytes and keeps the rest. */
static void release(holdback *h, size_t k, FILE *out)
{
    if (k) fwrite(h->buf, 1, k, out);
    memmove(h->buf, h->buf + k, h->len - k);
    h->len -= k;
}

/* Whether some stop text begins with the held bytes from k on. */
static bool held_could_stop(const holdback *h, size_t k)
{
    for (const char *const *s = h->stops; *s; s++) {
        const size_t ls = strlen(*s), rest = h->len - k;
        if (rest < ls && memcmp(h->buf + k, *s, rest) == 0) return true;
    }
    return false;
}

/* Adds text; true when a stop text is complete (what preceded it written,
 * the stop text dropped). Otherwise writes every byte that cannot begin
 * one. */
static bool hold_feed(holdback *h, const char *text, size_t n, FILE *out)
{
    if (!h->stops || !h->stops[0]) {
        if (n) fwrite(text, 1, n, out);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (h->len == sizeof h->buf) release(h, 1, out);
        h->buf[h->len++] = text[i];
        for (const char *const *s = h->stops; *s; s++) {
            const size_t ls = strlen(*s);
            if (ls && ls <= h->len && memcmp(h->buf + h->len - ls, *s, ls) == 0) {
                release(h, h->len - ls, out);
                h->len = 0;
                return true;
            }
        }
    }
    size_t k = 0;
    while (k < h->len && !held_could_stop(h, k)) k++;
    release(h, k, out);
    return false;
}

static int write_failed(FILE *out, sl_err *err)
{
    errno = 0;
    if (fflush(out) == 0 && !ferror(out)) return SL_OK;
    return sl_err_set(err, SL_EIO, "cannot write the reply: %s",
                      errno ? strerror(errno) : "an earlier write failed");
}

int srv_reply(srv_batcher *b, gen_ctx *g, int max, bool (*is_stop)(void *ud, int32_t id),
              void *ud, const char *const *stop_texts, volatile sig_atomic_t *interrupt,
              FILE *out, gen_reply_stats *st, sl_err *err)
{
    holdback h = {.stops = stop_texts};
    const char *text;
    size_t len;
    bool text_stop = false;
    int rc = SL_OK;
    const uint64_t t0 = sl_now_ns();
    st->n_gen = 0;
    st->stop = GEN_STOP_EOG;
    for (;;) {
        if (interrupt && *interrupt) {
            st->stop = GEN_STOP_INTERRUPT;
            break;
        }
        if (max >= 0 && st->n_gen >= max) {
            st->stop = GEN_STOP_LIMIT;
            break;
        }
        const int id = sl_sampling_sample(g->smp, sl_session_logits(g->s), err);
        if (id < 0) {
            rc = id;
            break;
        }
        if (is_stop(ud, id)) {
            st->stop = GEN_STOP_EOG;
            break;
        }
        if ((rc = sl_sampling_accept(g->smp, id, err))) break;
        if ((rc = sl_detok_push(g->dt, id, &text, &len, err))) break;
        text_stop = hold_feed(&h, text, len, out);
        if ((rc = write_failed(out, err))) break;
        st->n_gen++;
        if (text_stop) {
            st->stop = GEN_STOP_EOG;
            break;
        }
        if (sl_session_n_past(g->s) >= sl_session_n_ctx(g->s)) {
            st->stop = GEN_STOP_CTX;
            break;
        }
        const int32_t tok = id;
        const int got = srv_batch_eval(b, g->s, &tok, 1, err);
        if (got < 0) {
            rc = got;
            break;
        }
    }
    sl_detok_flush(g->dt, &text, &len);
    if (!text_stop) {
        if (hold_feed(&h, text, len, out)) st->stop = GEN_STOP_EOG;
        else release(&h, h.len, out);
    }
    const int wrc = write_failed(out, err);
    if (rc == SL_OK) rc = wrc;
    st->seconds = (double)(sl_now_ns() - t0) / 1e9;
    return rc;
}
