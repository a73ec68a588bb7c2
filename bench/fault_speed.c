/* bench/fault_speed.c - how fast this machine commits fresh memory: maps N
 * MiB, asks for transparent huge pages (madvise) or not, and writes one
 * byte per 4 KiB page, timing the first touch (the page-fault share of a
 * cold `--no-stream` load, whose reads land in fresh huge pages), then the
 * second (no faults). Usage: fault_speed MIB [small]. Linux only; a
 * measurement tool, not part of sluice (`make bench` builds it as
 * build/rel/bench/fault_speed). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: fault_speed MIB [small]\n");
        return 2;
    }
    const size_t len = (size_t)atol(argv[1]) << 20;
    const int small = argc > 2 && !strcmp(argv[2], "small");
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    madvise(p, len, small ? MADV_NOHUGEPAGE : MADV_HUGEPAGE);
    for (int pass = 0; pass < 2; pass++) {
        const double t0 = now();
        for (size_t i = 0; i < len; i += 4096) p[i] = (char)i;
        const double s = now() - t0;
        printf("%s touch of %zu MiB (%s pages): %.3f s, %.0f MiB/s\n", pass ? "second" : "first",
               len >> 20, small ? "small" : "huge", s, (double)(len >> 20) / s);
    }
    munmap(p, len);
    return 0;
}
