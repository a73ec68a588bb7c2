/* test_reference_kld.c - sluice against llama.cpp's own outputs on the same
 * files (issue 11): for every fixture in ../shared/fixtures/reference whose
 * architecture sluice runs, the mean KL-divergence and the same-top-token
 * rate against llama.cpp's KL-divergence base (NAME.kld, written by
 * llama-perplexity on x86-64 AVX2; see that folder's README), computed
 * through the library's evaluation procedure (src/eval) as `sluice
 * perplexity --kl-divergence` does. The expected figures come from
 * llama.cpp's files, not from sluice.
 *
 * Two bounds per file: the target, and the ceiling sluice reaches
 * today (measured, with a margin), which guards against regressions. The
 * ceiling and the target are both asserted (SLUICE_KLD_TARGET=0 asserts
 * the ceiling only, to see where a change lands). Only the
 * first CHUNKS chunks are evaluated so that the test stays well inside the
 * CI budget under ASan, and alone, a later chunk known to hold a case the
 * first ones lack (k_extra).
 *
 * The folder's variants/ (shapes and types the first fixtures lack, issue
 * 34) are read too. A fixture marked `exact` must give llama.cpp's bytes:
 * every scored row of sluice's logits encodes to the base file's very row
 * (what llama-perplexity would write; the mean KLD of two equal bases is
 * 0.000000 but their max KLD up to ~7e-6, the uint16 encoding's step, so
 * the KLD bounds alone cannot show it). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/kld_eval.h"
#include "test.h"

enum { CHUNKS = 8 };

typedef struct bound {
    const char *name;
    double target_kld, target_top;   /* the table */
    double ceiling_kld, floor_top;   /* today's level (first CHUNKS chunks) */
    int exact;                       /* every row's bytes as llama.cpp's */
} bound;

/* Architectures not in the table are skipped with a reason. Ceilings:
 * measured on the first 8 chunks after the issue-11 quantiser changes,
 * times ~1.3 (KLD) and minus ~1.5 points (top). */
static const bound k_bounds[] = {
    {"dense1-f32", 1e-6, 0.999, 1e-6, 0.995, 1},
    {"dense1-Q8_0", 1e-6, 0.999, 1e-6, 0.999, 1}, /* llama.cpp's ops: 0.000000 / 100 % */
    {"dense1-Q4_K_M", 1e-6, 0.999, 1e-6, 0.999, 1},
    {"dense1-Q6_K", 1e-6, 0.999, 1e-6, 0.999, 1},
    {"moe-Q4_K_M", 1e-4, 0.99, 1e-6, 0.995, 1},    /* all chunks: 0.000000 / 99.97 % */
    /* issue 12: f32 and (llama.cpp's ops, issue 11) Q8_0 bit-identical */
    {"qwen35moe-f32", 1e-6, 0.999, 1e-6, 0.995, 1},
    {"qwen35moe-Q8_0", 1e-4, 0.99, 1e-6, 0.999, 1},
    /* issue 11, with llama.cpp's repacked MXFP4 expert order (mxfp4_8x8):
     * first 8 chunks 0.000000 / 100 %, all chunks 0.000000 / 99.97 %
     * (before: 3.4e-6 / 99.60 %, all chunks 2.0e-5 / 99.56 %). Issue 34:
     * all 58 chunks byte-identical once the tiled attention's sinks step
     * fuses (sl_attn_sinks_tiled); chunk 25 (0-based) is the first whose
     * rows it changes (position 115 of layer 2: a sink above the
     * window's maximum), so that chunk is evaluated too (k_extra). */
    {"gpt-oss-MXFP4_MOE", 1e-4, 0.99, 1e-6, 0.999, 1},
    /* issue 17: all chunks 0.000000 (max 7e-6) / 100 % (deepseek2, MLA) and
     * 99.97 % (glm4moe) */
    {"deepseek2-Q8_0", 1e-4, 0.99, 1e-6, 0.995, 1},
    {"glm4moe-Q8_0", 1e-4, 0.99, 1e-6, 0.995, 1},
    /* issue 18: first 8 chunks 0.000000 / 100 %; all 58: 0.000000 / 99.97 % */
    {"gemma4-Q8_0", 1e-4, 0.99, 1e-6, 0.999, 1},
    /* glm-dsa (the indexer's top-k of 8 over 128-token chunks, a shared
     * layer): all chunks 0.000000 (max 8e-6), 100 % same top */
    {"glm-dsa-Q8_0", 1e-4, 0.99, 1e-6, 0.995, 1},
    /* deepseek4 (hyper-connections, window + compressed blocks, indexer
     * top-2, hash routing): all 58 chunks 0.000000 (max 7e-6), 100 % */
    {"deepseek4-Q8_0", 1e-4, 0.99, 1e-6, 0.995, 1},
    /* variants/ (issue 34): llama.cpp's bytes */
    {"dense256-Q5_1", 1e-6, 0.999, 1e-6, 0.999, 1},
    {"dense256-IQ4_XS", 1e-6, 0.999, 1e-6, 0.999, 1},
    {"gemma4-l6-f32", 1e-6, 0.999, 1e-6, 0.999, 1},
    /* deepseek4, 6 layers, 16 experts top 4: the fused hyper-connection
     * sums (family_deepseek4.c ds4_hc_fused) with the head's unfused; the
     * Q4_K attn_output_a in the plain order (llama.cpp's is 3-d, never
     * repacked: ops/matmul_order.h SL_MM_BATCHED_3D). All 58 chunks
     * byte-identical (were 2.6e-3 / 9.4e-3) */
    {"deepseek4-l6-Q8_0", 1e-6, 0.999, 1e-6, 0.999, 1},
    {"deepseek4-l6-Q4_K_M", 1e-6, 0.999, 1e-6, 0.999, 1},
};

/* Chunks past the first CHUNKS evaluated alone too (each a fresh cache, as
 * every chunk is), its rows byte-compared: where a later chunk holds a case
 * the first CHUNKS lack, at the cost of that chunk alone. */
static const struct {
    const char *name;
    int chunk;
} k_extra[] = {
    {"gpt-oss-MXFP4_MOE", 25}, /* position 115: a tiled row's sink above its maximum */
};

/* The fixture's extra chunks: every scored row llama.cpp's bytes. */
static void run_extra(const char *dir, const char *name)
{
    for (size_t i = 0; i < sizeof k_extra / sizeof *k_extra; i++) {
        if (strcmp(k_extra[i].name, name)) continue;
        char gguf[512], kld[512], why[512];
        snprintf(gguf, sizeof gguf, "%s/%s.gguf", dir, name);
        snprintf(kld, sizeof kld, "%s/%s.kld", dir, name);
        t_kld_rows rows;
        const int rc = t_kld_rows_chunk(gguf, kld, k_extra[i].chunk, &rows, why, sizeof why);
        CHECK_MSG(rc == 0, "%s chunk %d: %s", name, k_extra[i].chunk, why);
        if (rc) continue;
        printf("  %-20s chunk %d: rows as llama.cpp's %ld/%ld\n", name, k_extra[i].chunk,
               rows.same, rows.total);
        CHECK_MSG(rows.total > 0 && rows.same == rows.total,
                  "%s chunk %d: %ld of %ld rows differ from llama.cpp's bytes", name,
                  k_extra[i].chunk, rows.total - rows.same, rows.total);
    }
}

static const char *k_supported[] = {"llama", "qwen3moe", "qwen35moe", "gpt-oss", "deepseek2",
                                    "glm4moe", "gemma4", "glm-dsa", "deepseek4"};

static const char *fixture_dir(void)
{
    static const char *dirs[] = {"../shared/fixtures/reference", "/work/shared/fixtures/reference"};
    struct stat st;
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        if (stat(dirs[i], &st) == 0 && S_ISDIR(st.st_mode)) return dirs[i];
    return NULL;
}

static int arch_supported(const char *a)
{
    for (size_t i = 0; i < sizeof k_supported / sizeof *k_supported; i++)
        if (!strcmp(a, k_supported[i])) return 1;
    return 0;
}

/* Evaluates one fixture; returns 0 when it ran (stats filled), 1 when it was
 * skipped (reason printed), -1 on failure (recorded). */
static int run_fixture(const char *dir, const char *name, sl_kld_stats *st, t_kld_rows *rows)
{
    char gguf[512], kld[512], why[512];
    snprintf(gguf, sizeof gguf, "%s/%s.gguf", dir, name);
    snprintf(kld, sizeof kld, "%s/%s.kld", dir, name);
    const int rc =
        t_kld_eval_rows(gguf, kld, CHUNKS, -1, -1, arch_supported, st, rows, why, sizeof why);
    if (rc == 1) printf("  %s: skipped: %s\n", name, why);
    if (rc < 0) CHECK_MSG(0, "%s: %s", name, why);
    return rc;
}

static const bound *bound_of(const char *name)
{
    for (size_t i = 0; i < sizeof k_bounds / sizeof *k_bounds; i++)
        if (!strcmp(k_bounds[i].name, name)) return &k_bounds[i];
    return NULL;
}

/* Every .gguf of dir against its base: a new fixture needs a row in
 * k_bounds or is reported as unbounded (and fails if sluice runs it).
 * Returns how many ran. */
static int run_dir(const char *dir, int want_target)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls '%s'", dir);
    FILE *ls = popen(cmd, "r");
    CHECK(ls != NULL);
    if (!ls) return 0;
    char line[256];
    int ran = 0;
    while (fgets(line, sizeof line, ls)) {
        line[strcspn(line, "\n")] = 0;
        size_t len = strlen(line);
        if (len < 6 || strcmp(line + len - 5, ".gguf")) continue;
        line[len - 5] = 0;
        sl_kld_stats st;
        memset(&st, 0, sizeof st);
        t_kld_rows rows;
        const int rc = run_fixture(dir, line, &st, &rows);
        if (rc != 0) continue;
        ran++;
        run_extra(dir, line);
        const bound *bd = bound_of(line);
        const double kld = st.kld.value, top = st.same_top.value;
        printf("  %-20s mean KLD %.6f  same top %.3f %%  rows as llama.cpp's %ld/%ld  (target <= %g, "
               ">= %.1f %%: %s)\n",
               line, kld, 100.0 * top, rows.same, rows.total, bd ? bd->target_kld : 0.0,
               bd ? 100.0 * bd->target_top : 0.0,
               bd && kld <= bd->target_kld && top >= bd->target_top ? "met" : "NOT YET");
        CHECK_MSG(bd != NULL, "%s: no bound in k_bounds", line);
        if (!bd) continue;
        CHECK_MSG(kld <= bd->ceiling_kld, "%s: mean KLD %.6g above today's %.6g", line, kld,
                  bd->ceiling_kld);
        CHECK_MSG(top >= bd->floor_top, "%s: same top %.4f below today's %.4f", line, top,
                  bd->floor_top);
        if (bd->exact)
            CHECK_MSG(rows.total > 0 && rows.same == rows.total,
                      "%s: %ld of %ld rows differ from llama.cpp's bytes", line,
                      rows.total - rows.same, rows.total);
        if (want_target) {
            CHECK_MSG(kld <= bd->target_kld, "%s: mean KLD %.6g above the target %.6g", line,
                      kld, bd->target_kld);
            CHECK_MSG(top >= bd->target_top, "%s: same top %.4f below the target %.4f", line,
                      top, bd->target_top);
        }
    }
    pclose(ls);
    return ran;
}

TEST(reference_fixtures)
{
    const char *dir = fixture_dir();
    if (!dir) {
        printf("  skipped: no ../shared/fixtures/reference (nor /work/shared/fixtures/reference)\n");
        return;
    }
    const char *t = getenv("SLUICE_KLD_TARGET");
    const int want_target = !(t && t[0] == '0');
    CHECK_MSG(run_dir(dir, want_target) > 0, "no fixture in %s could be evaluated", dir);
    char variants[600];
    snprintf(variants, sizeof variants, "%s/variants", dir);
    struct stat sb;
    if (stat(variants, &sb) == 0 && S_ISDIR(sb.st_mode))
        CHECK_MSG(run_dir(variants, want_target) > 0, "no fixture in %s could be evaluated",
                  variants);
}

int main(void)
{
    RUN(reference_fixtures);
    return TEST_REPORT();
}
