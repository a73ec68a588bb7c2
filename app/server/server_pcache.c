/* server_pcache.c - the server's on-disk prompt cache (server_pcache.h). */
#include "server_pcache.h"

#include <dirent.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../gen.h"

#define FNV_OFF 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * FNV_PRIME;
    return h;
}

uint64_t srv_tokens_hash(const int32_t *ids, int n)
{
    uint64_t h = FNV_OFF;
    for (int i = 0; i < n; i++) {
        unsigned char le[4] = {(unsigned char)ids[i], (unsigned char)(ids[i] >> 8),
                               (unsigned char)(ids[i] >> 16), (unsigned char)(ids[i] >> 24)};
        h = fnv(h, le, 4);
    }
    return h;
}

static void entry_path(const srv_pcache *c, uint64_t hash, int n, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%016llx-%016llx-%d.state", c->dir, (unsigned long long)c->model_key,
             (unsigned long long)hash, n);
}

/* Under mu. */
static int find(const srv_pcache *c, uint64_t hash, int n)
{
    for (int i = 0; i < c->n_e; i++)
        if (c->e[i].n == n && c->e[i].hash == hash) return i;
    return -1;
}

static void add(srv_pcache *c, uint64_t hash, int n)
{
    if (find(c, hash, n) >= 0 || c->n_e == SRV_PCACHE_MAX_ENTRIES) return;
    c->e[c->n_e++] = (srv_pcache_entry){hash, n};
}

static void forget(srv_pcache *c, uint64_t hash, int n)
{
    int i = find(c, hash, n);
    if (i >= 0) c->e[i] = c->e[--c->n_e];
}

int srv_pcache_open(srv_pcache *c, const char *dir, const char *model_path)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "sluice serve: --prompt-cache '%s' is not a directory (create it first)\n",
                dir);
        return 1;
    }
    struct stat ms;
    char *copy = strdup(model_path);
    c->dir = strdup(dir);
    c->e = calloc(SRV_PCACHE_MAX_ENTRIES, sizeof *c->e);
    if (!copy || !c->dir || !c->e || stat(model_path, &ms) != 0) {
        free(copy);
        fprintf(stderr, "sluice serve: --prompt-cache: out of memory or cannot stat '%s'\n",
                model_path);
        return 1;
    }
    const char *base = basename(copy);
    uint64_t size = (uint64_t)ms.st_size;
    c->model_key = fnv(fnv(FNV_OFF, base, strlen(base)), &size, sizeof size);
    free(copy);
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "sluice serve: --prompt-cache: cannot read the directory '%s'\n", dir);
        return 1;
    }
    for (struct dirent *e; (e = readdir(d));) {
        unsigned long long mk, h;
        int n, used = 0;
        if (sscanf(e->d_name, "%16llx-%16llx-%d.state%n", &mk, &h, &n, &used) == 3 &&
            used == (int)strlen(e->d_name) && mk == c->model_key && n > 0)
            add(c, h, n);
    }
    closedir(d);
    fprintf(stderr, "sluice serve: prompt cache in '%s': %d saved prefix%s of this model\n", dir,
            c->n_e, c->n_e == 1 ? "" : "es");
    return 0;
}

void srv_pcache_close(srv_pcache *c)
{
    if (!c->dir) return;
    free(c->dir);
    free(c->e);
    pthread_mutex_destroy(&c->mu);
    memset(c, 0, sizeof *c);
}

/* Deletes the entry (hash, n): its file and its place in the index. */
static void drop(srv_pcache *c, uint64_t hash, int n)
{
    char path[4096];
    entry_path(c, hash, n, path, sizeof path);
    sl_file_remove(path);
    pthread_mutex_lock(&c->mu);
    forget(c, hash, n);
    pthread_mutex_unlock(&c->mu);
}

int srv_pcache_restore(srv_pcache *c, sl_session *s, const int32_t *ids, int n, int have,
                       int *entry_n)
{
    *entry_n = 0;
    if (!c || !c->dir) return have;
    for (;;) {
        /* the longest known prefix of ids longer than have */
        int best = -1;
        uint64_t bh = 0;
        pthread_mutex_lock(&c->mu);
        for (int i = 0; i < c->n_e; i++) {
            const int k = c->e[i].n;
            if (k > have && k <= n && k > best && c->e[i].hash == srv_tokens_hash(ids, k)) {
                best = k;
                bh = c->e[i].hash;
            }
        }
        pthread_mutex_unlock(&c->mu);
        if (best < 0) return have;
        char path[4096];
        entry_path(c, bh, best, path, sizeof path);
        int32_t *got = malloc((size_t)best * sizeof *got);
        if (!got) return have;
        sl_err err = {0};
        /* a peek first: the count must be the name's, and a refusal leaves s alone */
        int k = sl_session_load(s, path, NULL, 0, &err);
        if (k == best) k = sl_session_load(s, path, got, best, &err);
        const bool finite = k < 0 || gen_logits_finite(s);
        if (k == best && finite && memcmp(got, ids, (size_t)best * sizeof *got) == 0) {
            free(got);
            *entry_n = best;
            if (best < n) return best;
            /* the whole prompt: its last token is evaluated again (the same
             * logits: batch splits are exact), so that poisoned K/V rows
             * show as non-finite values; a model that cannot go back there
             * (a recurrent layer) samples from the saved logits */
            if (sl_session_truncate(s, best - 1) == SL_OK) return best - 1;
            if (sl_session_logits(s)) return best;
            sl_session_truncate(s, 0);
            *entry_n = 0;
            return 0;
        }
        bool remove = false;
        if (k >= 0 && !finite) {
            fprintf(stderr, "sluice serve: prompt cache: '%s' holds non-finite logits (NaN or "
                    "infinity): deleted\n", path);
            sl_session_truncate(s, 0);
            have = 0;
            remove = true;
        } else if (k >= 0 && k != best) {
            fprintf(stderr, "sluice serve: prompt cache: '%s' holds %d tokens, its name says %d; "
                    "ignored\n", path, k, best);
        } else if (k >= 0) {
            /* restored but not ours after all: back to a clean session */
            fprintf(stderr, "sluice serve: prompt cache: '%s' holds other tokens than its name "
                    "says; ignored\n", path);
            sl_session_truncate(s, 0);
            have = 0;
        } else {
            /* a file in the cache's own name pattern that cannot be loaded
             * (damaged, another version or model) is of no use to anyone */
            remove = k == SL_EFORMAT;
            fprintf(stderr, "sluice serve: prompt cache: %s%s\n", err.msg,
                    remove ? "; deleted" : "");
        }
        free(got);
        if (remove) {
            drop(c, bh, best);
        } else {
            pthread_mutex_lock(&c->mu);
            forget(c, bh, best);
            pthread_mutex_unlock(&c->mu);
        }
    }
}

void srv_pcache_drop(srv_pcache *c, const int32_t *ids, int n, const char *why, bool redone)
{
    if (!c || !c->dir || n <= 0) return;
    const uint64_t h = srv_tokens_hash(ids, n);
    char path[4096];
    entry_path(c, h, n, path, sizeof path);
    fprintf(stderr, "sluice serve: prompt cache: the state restored from '%s' gave non-finite "
            "values (%s): deleted%s\n", path, why,
            redone ? "; the prompt was evaluated from the start" : "");
    drop(c, h, n);
}

void srv_pcache_save(srv_pcache *c, sl_session *s, const int32_t *ids, int n)
{
    if (!c || !c->dir || n <= 0) return;
    const uint64_t h = srv_tokens_hash(ids, n);
    pthread_mutex_lock(&c->mu);
    bool known = find(c, h, n) >= 0, full = c->n_e == SRV_PCACHE_MAX_ENTRIES;
    bool say = full && !c->full_said;
    if (say) c->full_said = true;
    pthread_mutex_unlock(&c->mu);
    if (known) return;
    if (full) {
        if (say)
            fprintf(stderr, "sluice serve: prompt cache: %d prefixes saved, no more are added\n",
                    SRV_PCACHE_MAX_ENTRIES);
        return;
    }
    char path[4096];
    entry_path(c, h, n, path, sizeof path);
    sl_err err = {0};
    if (sl_session_save(s, path, ids, n, &err)) {
        fprintf(stderr, "sluice serve: prompt cache: cannot save %d tokens: %s\n", n, err.msg);
        return;
    }
    pthread_mutex_lock(&c->mu);
    add(c, h, n);
    pthread_mutex_unlock(&c->mu);
}
