/* tok_map.h - byte-string -> int32 hash map for the tokenizer.
 *
 * Owns: an open-addressing table whose keys are byte ranges inside one pool
 * that the caller owns (the map stores offsets, never copies keys). A key may
 * carry an `aux` number that is part of its identity: the BPE merge table
 * keys "left||right" by the concatenated bytes plus the left length, so a
 * lookup needs no concatenation. Must not know: tokens, merges, GGUF. */
#ifndef SL_TOK_MAP_H
#define SL_TOK_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sl_tok_slot {
    uint32_t hash;  /* 0 marks an empty slot (real hashes are forced odd) */
    uint32_t off;   /* key bytes: pool[off .. off+len) */
    uint32_t len;
    uint32_t aux;
    int32_t value;
} sl_tok_slot;

typedef struct sl_tok_map {
    sl_tok_slot *slots;
    uint32_t cap;       /* power of two, >= 2 * count */
    uint32_t count;
    const char *pool;   /* key storage; must not move after init */
} sl_tok_map;

/* Sizes the table for `expected` keys stored in `pool`. Returns false if the
 * allocation fails. */
bool sl_tok_map_init(sl_tok_map *m, const char *pool, uint32_t expected);

/* Frees the table; safe on a zeroed map. */
void sl_tok_map_free(sl_tok_map *m);

/* Hash of a key; exposed so callers can hash once and probe twice. */
uint32_t sl_tok_map_hash(const char *key, size_t len, uint32_t aux);

/* Inserts pool[off..off+len) with aux -> value unless the key is present
 * (the first insertion wins). Returns true if inserted. The table never
 * grows: init must have been given the final count. */
bool sl_tok_map_put(sl_tok_map *m, uint32_t off, uint32_t len, uint32_t aux, int32_t value);

/* Value of key (bytes anywhere, compared with pool keys), or -1 if absent. */
int32_t sl_tok_map_get(const sl_tok_map *m, const char *key, size_t len, uint32_t aux);

#endif
