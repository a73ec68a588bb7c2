/* server_ramcache.h - `sluice serve --cache-ram MB`: evaluated prompt
 * states kept in host memory, shared by every slot, so that a request
 * starts from the longest prefix any earlier request evaluated, whichever
 * slot it lands on.
 *
 * An entry is a prefix's tokens and the session state after them
 * (sl_state_capture). It serves a request whose tokens begin with its
 * first k tokens, for every k it can be restored at (sl_state_restorable:
 * any prefix of an attention model, only the end or the snapshot of a
 * recurrent state, a sliding window's kept positions). The slots store
 * the end of each prompt's first turn (the system prompt) once evaluated,
 * and a slot's whole state (the last prompt and its reply) before another
 * request replaces it; an entry that another serves at its own length is
 * dropped. Entries are evicted least recently used first to stay within
 * the budget. Thread-safe. */
#ifndef SL_APP_SERVER_RAMCACHE_H
#define SL_APP_SERVER_RAMCACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "sluice.h"

typedef struct srv_ram_entry {
    int32_t *ids;    /* the prefix's tokens (owned) */
    int n;
    sl_state *st;    /* the state after them (owned) */
    uint64_t bytes;  /* st's and ids' */
    uint64_t used;   /* the cache's clock at the last store or hit */
} srv_ram_entry;

typedef struct srv_ramcache {
    uint64_t budget;          /* bytes; 0: off */
    pthread_mutex_t mu;
    srv_ram_entry *e;
    int n_e, cap_e;
    uint64_t bytes, clock;
    /* for /metrics (under mu) */
    uint64_t hits, stores, evictions;
    bool big_said;            /* an entry above the budget was logged */
} srv_ramcache;

/* Prepares c with budget bytes (0: a cache that keeps nothing). Returns
 * non-zero after printing why (out of memory). */
int srv_ramcache_init(srv_ramcache *c, uint64_t budget);
void srv_ramcache_free(srv_ramcache *c);

/* Restores into s the longest prefix of ids[0..n) the cache can give that
 * is longer than have (what s already holds of ids): at most n tokens,
 * and n only with the logits of its last token (otherwise n - 1, so that
 * one is evaluated again). Returns the tokens s now holds of ids: have
 * when nothing better was found (s unchanged). */
int srv_ramcache_restore(srv_ramcache *c, sl_session *s, const int32_t *ids, int n, int have);

/* Keeps the state of the first n positions of s, which hold ids[0..n),
 * unless an entry already gives them; drops the entries the new one
 * gives. A state that cannot be captured there or does not fit the budget
 * is not kept (the latter logged once). */
void srv_ramcache_store(srv_ramcache *c, sl_session *s, const int32_t *ids, int n);

/* Prints one line saying which prefixes the cache can restore on m when
 * not every one: a recurrent state only where a kept state ends, a
 * sliding window (sessions of micro-batches n_batch) only near it. */
void srv_ramcache_describe(const sl_model *m, int n_batch);

/* What /metrics shows, read under the lock. */
typedef struct srv_ramcache_stats {
    uint64_t budget, bytes, hits, stores, evictions;
    int entries;
} srv_ramcache_stats;
void srv_ramcache_get_stats(srv_ramcache *c, srv_ramcache_stats *out);

#endif
