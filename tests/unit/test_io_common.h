/* test_io_common.h - helpers shared by the io tests (header-only, static).
 *
 * A test file holds a known pattern: byte i is pat_byte(i), a fixed formula
 * that the code under test never sees, so any misplaced, stale or garbage
 * byte shows up when compared. */
#ifndef SL_TEST_IO_COMMON_H
#define SL_TEST_IO_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/io.h"

static inline uint8_t pat_byte(uint64_t i, uint32_t salt)
{
    uint32_t x = (uint32_t)i * 0x9E3779B1u ^ (uint32_t)(i >> 32) ^ salt;
    return (uint8_t)(x >> 24);
}

/* Writes size pattern bytes to a fresh file in dir; returns a malloc'd path
 * (caller unlinks and frees) or NULL. */
static inline char *make_pattern_file(const char *dir, uint64_t size, uint32_t salt)
{
    char *path = malloc(strlen(dir) + 32);
    if (!path) return NULL;
    sprintf(path, "%s/sl_test_io_XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0) {
        free(path);
        return NULL;
    }
    unsigned char buf[65536];
    uint64_t done = 0;
    while (done < size) {
        size_t n = size - done < sizeof buf ? (size_t)(size - done) : sizeof buf;
        for (size_t k = 0; k < n; k++) buf[k] = pat_byte(done + k, salt);
        if (write(fd, buf, n) != (ssize_t)n) {
            close(fd);
            unlink(path);
            free(path);
            return NULL;
        }
        done += n;
    }
    close(fd);
    return path;
}

/* 1 if len bytes at p equal the pattern from file offset off. */
static inline int pattern_matches(const void *p, uint64_t off, uint64_t len, uint32_t salt)
{
    const unsigned char *b = p;
    for (uint64_t k = 0; k < len; k++)
        if (b[k] != pat_byte(off + k, salt)) return 0;
    return 1;
}

/* Small deterministic generator for request shapes (not the code under test). */
static inline uint64_t t_rng(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 17;
}

#endif
