/* bench_kernels.c - `sluice bench --kernels`: prints matvec GB/s per weight
 * type next to the memory bandwidth measured on the same threads; with a
 * list of types, times those types interleaved in rounds for ratios that
 * hold on a machine whose memory bandwidth moves (ops/kbench.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/kbench.h"
#include "quant/quant.h"
#include "quant/vec_dot_rp.h"
#include "util/pool.h"

int bench_kernels(int threads, int mb);
int bench_kernels_paired(int threads, int mb, const char *types, int rounds);

/* "TYPE", or "TYPE x8" for the eight-row interleaved layout: a table row's
 * name. */
static void kernel_name(char *buf, size_t cap, sl_type t, bool x8)
{
    snprintf(buf, cap, "%s%s", sl_type_name(t), x8 ? " x8" : "");
}

/* A pool of `threads` workers (0: one a core) in *pool, with their count
 * in *nth; false after printing why there is none. */
static bool bench_pool(int threads, sl_pool **pool, int *nth)
{
    sl_err err;
    *nth = threads > 0 ? threads : sl_cpu_core_count();
    if (sl_pool_create(pool, *nth, &err)) {
        fprintf(stderr, "sluice bench: %s\n", err.msg);
        return false;
    }
    return true;
}

/* One row of the default table: type t's matvec (in the x8 layout when x8)
 * timed alone, against the copy and read bandwidths; "n/a" when it cannot
 * run. */
static void default_row(sl_pool *pool, sl_type t, bool x8, size_t bytes, double copy, double read)
{
    char name[24];
    double g;
    sl_err err;
    kernel_name(name, sizeof name, t, x8);
    if (sl_kbench_matvec_layout_gbs(pool, t, x8, bytes, 5, &g, &err))
        printf("| %-7s | %10s | %13s | %13s |\n", name, "n/a", "", "");
    else
        printf("| %-7s | %10.2f | %12.0f%% | %12.0f%% |\n", name, g, 100.0 * g / copy,
               100.0 * g / read);
    fflush(stdout);
}

int bench_kernels(int threads, int mb)
{
    sl_pool *pool;
    int nth;
    if (!bench_pool(threads, &pool, &nth)) return 1;
    const size_t bytes = (size_t)mb << 20;
    const double copy = sl_kbench_copy_gbs(pool, bytes, 5);
    const double read = sl_kbench_read_gbs(pool, bytes, 5);
    printf("threads %d, matrix %d MiB (larger than the caches)\n", nth, mb);
    printf("memory: STREAM copy %.2f GB/s (read+write), read sweep %.2f GB/s\n\n", copy, read);
    printf("| %-7s | %10s | %13s | %13s |\n", "type", "GB/s", "% of copy", "% of read");
    printf("| %-7s | %10s | %13s | %13s |\n", "-------", "---------:", "------------:",
           "------------:");
    static const sl_type types[] = {SL_TYPE_F32,  SL_TYPE_F16,  SL_TYPE_BF16, SL_TYPE_Q4_0,
                                    SL_TYPE_Q4_1, SL_TYPE_Q5_0, SL_TYPE_Q5_1, SL_TYPE_Q8_0,
                                    SL_TYPE_Q2_K, SL_TYPE_Q3_K, SL_TYPE_Q4_K, SL_TYPE_Q5_K,
                                    SL_TYPE_Q6_K, SL_TYPE_IQ4_NL, SL_TYPE_IQ4_XS,
                                    SL_TYPE_MXFP4};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        default_row(pool, types[i], false, bytes, copy, read);
    /* the eight-row interleaved layout resident Q4_0 / IQ4_NL / MXFP4
     * weights are kept in (the rows above are the plain layout, the form
     * of streamed experts) */
    static const sl_type x8_types[] = {SL_TYPE_Q4_0, SL_TYPE_IQ4_NL, SL_TYPE_MXFP4};
    for (size_t i = 0; i < sizeof x8_types / sizeof x8_types[0]; i++)
        default_row(pool, x8_types[i], true, bytes, copy, read);
    sl_pool_free(pool);
    return 0;
}

enum { PAIRED_MAX = 8 };

/* Parses "q4_K,mxfp4:x8,..." into types / x8 flags / display names; false
 * (with the reason on stderr) for an unknown type, an x8 asked of a type
 * without that layout, an empty entry or too many entries. */
static bool parse_types(const char *list, sl_type *t, bool *x8, char (*names)[24], int *n)
{
    *n = 0;
    const char *p = list;
    for (;;) {
        const char *end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[24];
        if (len == 0 || len >= sizeof item) {
            fprintf(stderr, "sluice bench: --kernel-types: bad entry in '%s'\n", list);
            return false;
        }
        if (*n == PAIRED_MAX) {
            fprintf(stderr, "sluice bench: --kernel-types: at most %d types\n", PAIRED_MAX);
            return false;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        char *colon = strchr(item, ':');
        x8[*n] = false;
        if (colon) {
            if (strcmp(colon, ":x8") != 0) {
                fprintf(stderr, "sluice bench: --kernel-types: '%s': the only layout is ':x8'\n",
                        item);
                return false;
            }
            *colon = '\0';
            x8[*n] = true;
        }
        if (!sl_type_from_name(item, &t[*n])) {
            fprintf(stderr, "sluice bench: --kernel-types: unknown type '%s'\n", item);
            return false;
        }
        if (x8[*n] && !sl_rp32_x8_applies(t[*n], 8)) {
            fprintf(stderr, "sluice bench: --kernel-types: %s has no x8 layout (q4_0, iq4_nl, "
                            "mxfp4 have)\n", item);
            return false;
        }
        kernel_name(names[*n], sizeof names[*n], t[*n], x8[*n]);
        (*n)++;
        if (!end) return true;
        p = end + 1;
    }
}

int bench_kernels_paired(int threads, int mb, const char *list, int rounds)
{
    sl_type t[PAIRED_MAX];
    bool x8[PAIRED_MAX];
    char names[PAIRED_MAX + 1][24];
    int n_types;
    if (!parse_types(list, t, x8, names + 1, &n_types)) return 2;
    sl_pool *pool;
    int nth;
    if (!bench_pool(threads, &pool, &nth)) return 1;
    sl_err err;
    const size_t bytes = (size_t)mb << 20;
    /* item 0: the read sweep, timed in the same rounds (the memory's state
     * in each round); items 1..n: the types */
    sl_kbench_item *items[PAIRED_MAX + 1] = {0};
    const int n = n_types + 1;
    int rc = 0;
    snprintf(names[0], sizeof names[0], "read sweep");
    if (sl_kbench_item_read(&items[0], bytes, &err)) rc = 1;
    for (int i = 0; i < n_types && !rc; i++)
        if (sl_kbench_item_matvec(&items[i + 1], t[i], x8[i], bytes, nth, &err)) rc = 1;
    double *g = rc ? NULL : malloc(sizeof(double) * (size_t)rounds * (size_t)n);
    double *ratio = rc ? NULL : malloc(sizeof(double) * (size_t)rounds);
    if (!rc && (!g || !ratio)) {
        sl_err_set(&err, SL_ENOMEM, "out of memory for %d rounds", rounds);
        rc = 1;
    }
    if (rc) {
        fprintf(stderr, "sluice bench: %s\n", err.msg);
    } else {
        sl_kbench_rounds(pool, items, n, rounds, g);
        printf("threads %d, matrix %d MiB, %d rounds: each round times every type once, in turn "
               "(order reversed every other round)\n\n",
               nth, mb, rounds);
        printf("| %-10s | %11s | %6s | %6s | %15s | %21s |\n", "type", "median GB/s", "min",
               "max", "% of read", "/ first (p25-p75)");
        printf("| %-10s | %11s | %6s | %6s | %15s | %21s |\n", "----------", "----------:",
               "-----:", "-----:", "--------------:", "--------------------:");
        for (int i = 0; i < n; i++) {
            /* per-round ratios: to the read sweep, and to the first type */
            for (int r = 0; r < rounds; r++)
                ratio[r] = g[(size_t)r * (size_t)n + (size_t)i] / g[(size_t)r * (size_t)n];
            const double of_read = sl_kbench_median(ratio, rounds, 1);
            char first[40] = "";
            if (i >= 1) {
                for (int r = 0; r < rounds; r++)
                    ratio[r] = g[(size_t)r * (size_t)n + (size_t)i] /
                               g[(size_t)r * (size_t)n + 1];
                snprintf(first, sizeof first, "%.1f%% (%.1f-%.1f)",
                         100.0 * sl_kbench_median(ratio, rounds, 1),
                         100.0 * sl_kbench_quantile(ratio, rounds, 1, 0.25),
                         100.0 * sl_kbench_quantile(ratio, rounds, 1, 0.75));
            }
            printf("| %-10s | %11.2f | %6.2f | %6.2f | %14.0f%% | %21s |\n", names[i],
                   sl_kbench_median(g + i, rounds, n), sl_kbench_quantile(g + i, rounds, n, 0.0),
                   sl_kbench_quantile(g + i, rounds, n, 1.0), 100.0 * of_read, first);
        }
        printf("\nmedians over rounds; '%% of read' and '/ first' are medians of each round's "
               "ratio (to the read sweep, to %s), p25-p75 their quartiles\n",
               names[1]);
    }
    free(g);
    free(ratio);
    for (int i = 0; i < n; i++) sl_kbench_item_free(items[i]);
    sl_pool_free(pool);
    return rc;
}
