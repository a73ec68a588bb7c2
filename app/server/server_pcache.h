/* server_pcache.h - `sluice serve --prompt-cache DIR`: evaluated prompt
 * prefixes kept on disk, so that a later request, or the server after a
 * restart, starts from them instead of evaluating them again.
 *
 * A saved prefix is a session state file (sl_session_save) named
 * DIR/<model key>-<token hash>-<tokens>.state: the model key hashes the
 * model file's name and size, the token hash the prefix's token ids. The
 * names are the index: the directory is scanned at start-up, and a lookup
 * hashes the request's own prefixes of the lengths saved; the file's
 * header (the model's full identity, checksums) and its tokens are checked
 * again by sl_session_load, so a foreign, stale or corrupt file is refused
 * with one log line and deleted (the next save writes it anew). An entry
 * whose restored state gives non-finite values (its saved logits, or the
 * evaluation that follows: srv_pcache_drop) is deleted too: it is never
 * served again, also after a restart.
 * Thread-safe: the slots share one cache. */
#ifndef SL_APP_SERVER_PCACHE_H
#define SL_APP_SERVER_PCACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "sluice.h"

#define SRV_PCACHE_MAX_ENTRIES 1024

typedef struct srv_pcache_entry {
    uint64_t hash; /* of the prefix's token ids */
    int n;         /* its length */
} srv_pcache_entry;

typedef struct srv_pcache {
    char *dir;     /* NULL: no cache */
    uint64_t model_key;
    pthread_mutex_t mu;
    srv_pcache_entry *e;
    int n_e;
    bool full_said; /* the entry limit was logged */
} srv_pcache;

/* Opens DIR (which must exist and be a directory) for the model file at
 * model_path and indexes the files saved there for that model. Prints why
 * and returns non-zero on failure. */
int srv_pcache_open(srv_pcache *c, const char *dir, const char *model_path);
void srv_pcache_close(srv_pcache *c);

/* Restores into s the longest saved prefix of ids[0..n) longer than have
 * tokens (what the session already holds of ids); the restored prefix is
 * at most n tokens, and n only when the file kept the last logits.
 * Returns the tokens s now holds of ids: the prefix's length (or one less,
 * when the file kept no logits), or have when nothing better was found or
 * a file was refused (s then unchanged, or emptied when a file that
 * turned out unusable was loaded: then 0; the refusal is logged).
 * *entry_n receives the restored entry's length (0: none), for
 * srv_pcache_drop. */
int srv_pcache_restore(srv_pcache *c, sl_session *s, const int32_t *ids, int n, int have,
                       int *entry_n);

/* Deletes the entry of ids[0..n) (restored by srv_pcache_restore) whose
 * state gave non-finite values in an evaluation after it, why being the
 * error; logs one line, which says the prompt was evaluated from the start
 * when redone. */
void srv_pcache_drop(srv_pcache *c, const int32_t *ids, int n, const char *why, bool redone);

/* Saves the first n tokens of s (which hold ids[0..n)) unless a file for
 * that prefix is known; a failure is logged and ignored. */
void srv_pcache_save(srv_pcache *c, sl_session *s, const int32_t *ids, int n);

/* The 64-bit hash of ids[0..n) used in the file names. */
uint64_t srv_tokens_hash(const int32_t *ids, int n);

#endif
