/* tok_map.c - the tokenizer's open-addressing hash map (see tok_map.h). */
#include "tok/tok_map.h"

#include "util/status.h"

#include <stdlib.h>
#include <string.h>

uint32_t sl_tok_map_hash(const char *key, size_t len, uint32_t aux)
{
    /* 64-bit multiply-xorshift over 8-byte words: keys are short token
     * texts, so per-byte loops (FNV) would dominate BPE lookups. */
    uint64_t h = 0x9E3779B97F4A7C15ull ^ ((uint64_t)len << 32) ^ aux;
    const unsigned char *p = (const unsigned char *)key;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 29;
        p += 8;
        len -= 8;
    }
    uint64_t w = 0;
    for (size_t i = 0; i < len; i++) w |= (uint64_t)p[i] << (8 * i);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 32;
    return (uint32_t)h | 1u;
}

bool sl_tok_map_init(sl_tok_map *m, const char *pool, uint32_t expected)
{
    memset(m, 0, sizeof *m);
    uint32_t cap = 16;
    while (cap < 2u * expected + 2u) {
        if (cap >= (1u << 30)) return false;
        cap <<= 1;
    }
    m->slots = calloc(cap, sizeof *m->slots);
    if (!m->slots) return false;
    m->cap = cap;
    m->pool = pool;
    return true;
}

void sl_tok_map_free(sl_tok_map *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static bool slot_eq(const sl_tok_map *m, const sl_tok_slot *s, uint32_t h, const char *key,
                    size_t len, uint32_t aux)
{
    return s->hash == h && s->len == len && s->aux == aux &&
           memcmp(m->pool + s->off, key, len) == 0;
}

bool sl_tok_map_put(sl_tok_map *m, uint32_t off, uint32_t len, uint32_t aux, int32_t value)
{
    const char *key = m->pool + off;
    uint32_t h = sl_tok_map_hash(key, len, aux);
    uint32_t mask = m->cap - 1;
    /* The table is sized at init for the final count. */
    SL_ASSERT(m->count + 1 <= m->cap / 2);
    for (uint32_t i = h & mask;; i = (i + 1) & mask) {
        sl_tok_slot *s = &m->slots[i];
        if (s->hash == 0) {
            s->hash = h;
            s->off = off;
            s->len = len;
            s->aux = aux;
            s->value = value;
            m->count++;
            return true;
        }
        if (slot_eq(m, s, h, key, len, aux)) return false;
    }
}

int32_t sl_tok_map_get(const sl_tok_map *m, const char *key, size_t len, uint32_t aux)
{
    if (!m->slots || len > UINT32_MAX) return -1;
    uint32_t h = sl_tok_map_hash(key, len, aux);
    uint32_t mask = m->cap - 1;
    for (uint32_t i = h & mask;; i = (i + 1) & mask) {
        const sl_tok_slot *s = &m->slots[i];
        if (s->hash == 0) return -1;
        if (slot_eq(m, s, h, key, len, aux)) return s->value;
    }
}
