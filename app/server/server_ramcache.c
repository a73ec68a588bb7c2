/* server_ramcache.c - the server's host-RAM prompt cache
 * (server_ramcache.h). A few dozen entries at most in practice: lookups
 * scan them all. */
#include "server_ramcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)

int srv_ramcache_init(srv_ramcache *c, uint64_t budget)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    c->budget = budget;
    return 0;
}

static void entry_free(srv_ram_entry *e)
{
    free(e->ids);
    sl_state_free(e->st);
}

void srv_ramcache_free(srv_ramcache *c)
{
    for (int i = 0; i < c->n_e; i++) entry_free(&c->e[i]);
    free(c->e);
    pthread_mutex_destroy(&c->mu);
    memset(c, 0, sizeof *c);
}

static int common_prefix(const int32_t *a, int na, const int32_t *b, int nb)
{
    int p = 0;
    while (p < na && p < nb && a[p] == b[p]) p++;
    return p;
}

/* Under mu: removes entry i (its memory freed). */
static void drop(srv_ramcache *c, int i)
{
    c->bytes -= c->e[i].bytes;
    entry_free(&c->e[i]);
    c->e[i] = c->e[--c->n_e];
}

/* The position entry e can be restored at for a request of ids[0..n):
 * the longest restorable prefix they share, below n unless e's state
 * ends exactly at n with its logits; 0 when none. */
static int usable(const srv_ram_entry *e, const int32_t *ids, int n)
{
    int k = common_prefix(e->ids, e->n, ids, n);
    if (k == n && !(k == e->n && sl_state_has_logits(e->st))) k = n - 1;
    return k > 0 ? sl_state_restorable_below(e->st, k) : 0;
}

int srv_ramcache_restore(srv_ramcache *c, sl_session *s, const int32_t *ids, int n, int have)
{
    if (!c || !c->budget || n <= 0) return have;
    pthread_mutex_lock(&c->mu);
    int best = -1, best_k = have;
    for (int i = 0; i < c->n_e; i++) {
        const int k = usable(&c->e[i], ids, n);
        if (k > best_k || (k == best_k && best >= 0 && c->e[i].used > c->e[best].used)) {
            best = i;
            best_k = k;
        }
    }
    int got = have;
    if (best >= 0) {
        sl_err err = {0};
        /* under the lock: no other slot evicts the entry while it is copied */
        if (sl_state_restore(s, c->e[best].st, best_k, &err) == SL_OK) {
            got = best_k;
            c->e[best].used = ++c->clock;
            c->hits++;
        } else {
            fprintf(stderr, "sluice serve: prompt cache in memory: %s; evaluating the prompt\n",
                    err.msg);
            drop(c, best);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return got;
}

/* Under mu: whether an entry gives ids[0..n) at n (touching it). */
static bool known(srv_ramcache *c, const int32_t *ids, int n)
{
    for (int i = 0; i < c->n_e; i++) {
        srv_ram_entry *e = &c->e[i];
        if (e->n >= n && common_prefix(e->ids, e->n, ids, n) == n &&
            sl_state_restorable(e->st, n)) {
            e->used = ++c->clock;
            return true;
        }
    }
    return false;
}

void srv_ramcache_store(srv_ramcache *c, sl_session *s, const int32_t *ids, int n)
{
    if (!c || !c->budget || n <= 0) return;
    pthread_mutex_lock(&c->mu);
    const bool have = known(c, ids, n);
    pthread_mutex_unlock(&c->mu);
    if (have) return;
    sl_state *st = NULL;
    sl_err err = {0};
    if (sl_state_capture(s, n, &st, &err)) {
        if (err.code != SL_EINVAL) /* a position the state is not kept at is expected */
            fprintf(stderr, "sluice serve: prompt cache in memory: %s\n", err.msg);
        return;
    }
    int32_t *copy = malloc((size_t)n * sizeof *copy);
    const uint64_t bytes = sl_state_bytes(st) + (uint64_t)n * sizeof *copy;
    pthread_mutex_lock(&c->mu);
    bool keep = copy != NULL;
    if (keep && bytes > c->budget) {
        if (!c->big_said)
            fprintf(stderr, "sluice serve: prompt cache in memory: a prompt of %d tokens takes "
                    "%.0f MiB, more than --cache-ram %.0f MiB: not kept\n", n, bytes / MIB,
                    c->budget / MIB);
        c->big_said = true;
        keep = false;
    }
    if (keep && c->n_e == c->cap_e) {
        const int nc = c->cap_e ? 2 * c->cap_e : 16;
        srv_ram_entry *ne = realloc(c->e, (size_t)nc * sizeof *ne);
        if (ne) {
            c->e = ne;
            c->cap_e = nc;
        } else {
            keep = false;
        }
    }
    if (keep && known(c, ids, n)) keep = false; /* another slot stored it meanwhile */
    if (keep) {
        memcpy(copy, ids, (size_t)n * sizeof *copy);
        /* the entries this one gives at their own length */
        for (int i = c->n_e - 1; i >= 0; i--) {
            const srv_ram_entry *e = &c->e[i];
            if (e->n <= n && common_prefix(e->ids, e->n, ids, n) == e->n &&
                sl_state_restorable(st, e->n) && (e->n < n || !sl_state_has_logits(e->st) ||
                                                   sl_state_has_logits(st)))
                drop(c, i);
        }
        while (c->bytes + bytes > c->budget && c->n_e > 0) {
            int lru = 0;
            for (int i = 1; i < c->n_e; i++)
                if (c->e[i].used < c->e[lru].used) lru = i;
            drop(c, lru);
            c->evictions++;
        }
        c->e[c->n_e++] = (srv_ram_entry){copy, n, st, bytes, ++c->clock};
        c->bytes += bytes;
        c->stores++;
        copy = NULL;
        st = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    free(copy);
    sl_state_free(st);
}

void srv_ramcache_get_stats(srv_ramcache *c, srv_ramcache_stats *out)
{
    pthread_mutex_lock(&c->mu);
    *out = (srv_ramcache_stats){c->budget, c->bytes, c->hits, c->stores, c->evictions, c->n_e};
    pthread_mutex_unlock(&c->mu);
}

void srv_ramcache_describe(const sl_model *m, int n_batch)
{
    uint64_t per_token = 0, per_seq = 0;
    sl_model_state_bytes(m, &per_token, &per_seq);
    const int ctx = 1 << 16;
    const bool rings = sl_model_kv_bytes_at(m, SL_KV_F16, SL_KV_F16, ctx, n_batch, false) !=
                       sl_model_kv_bytes_at(m, SL_KV_F16, SL_KV_F16, ctx, n_batch, true);
    if (per_seq > 0)
        fprintf(stderr, "sluice serve: prompt cache: %s's recurrent layers keep their state only "
                "where a kept prefix ends (a first turn, a whole prompt and reply), so a request "
                "reuses such a prefix whole or not at all\n", sl_model_arch_name(m));
    else if (rings)
        fprintf(stderr, "sluice serve: prompt cache: %s's sliding-window layers keep only their "
                "window, so a request reuses a kept prefix only from a window's length before "
                "its end (--swa-full keeps every position)\n", sl_model_arch_name(m));
}
