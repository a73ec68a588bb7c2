/* io_fault.c - deterministic fault decisions for the fault-injecting mode.
 *
 * Owns: whether a given request fails with EIO, is delayed, or sees a short
 * raw read. Each answer is a hash of (seed, sequence number, attempt, what is
 * being decided), never a shared random state, so decisions do not depend on
 * which lane runs a request or in what order lanes run. Must not know about
 * descriptors, queues or backends. */
#include "io/io_internal.h"

#include <string.h>

enum { SALT_EIO = 1, SALT_DELAY_P, SALT_DELAY, SALT_SHORT_P, SALT_SHORT };

static uint64_t mix64(uint64_t x)
{
    /* splitmix64 finaliser */
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t decide(const sl_io_fault *f, uint64_t seq, uint32_t attempt, uint32_t salt)
{
    return mix64(f->seed ^ mix64(seq ^ mix64(((uint64_t)attempt << 8) | salt)));
}

static double unit(uint64_t h) { return (double)(h >> 11) * (1.0 / 9007199254740992.0); }

bool sl_io_fault_eio(const sl_io_fault *f, uint64_t seq)
{
    if (f->eio_nth && seq == f->eio_nth) return true;
    return f->eio_p > 0 && unit(decide(f, seq, 0, SALT_EIO)) < f->eio_p;
}

uint64_t sl_io_fault_delay_ns(const sl_io_fault *f, uint64_t seq)
{
    if (f->delay_p <= 0 || unit(decide(f, seq, 0, SALT_DELAY_P)) >= f->delay_p) return 0;
    uint64_t us = decide(f, seq, 0, SALT_DELAY) % ((uint64_t)f->delay_us_max + 1);
    return us * 1000;
}

int64_t sl_io_fault_short(const sl_io_fault *f, uint64_t seq, uint32_t attempt, void *buf,
                          int64_t res)
{
    if (res < 2 || f->short_p <= 0) return res;
    if (unit(decide(f, seq, attempt, SALT_SHORT_P)) >= f->short_p) return res;
    int64_t cut = 1 + (int64_t)(decide(f, seq, attempt, SALT_SHORT) % (uint64_t)(res - 1));
    /* The kernel would not have written past a short count: make sure data
     * there is wrong, so a lane that skips the retry is caught. */
    memset((unsigned char *)buf + cut, 0xEE, (size_t)(res - cut));
    return cut;
}

void sl_io_fault_direct_check(const sl_io_fault *f, void *buf, int64_t n)
{
    if (!f->corrupt_direct || n <= 0) return;
    /* one byte in every 512 inverted: what a stale or misplaced page gives */
    unsigned char *b = buf;
    for (int64_t i = 0; i < n; i += 512) b[i] = (unsigned char)~b[i];
}
