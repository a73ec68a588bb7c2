/* test_gguf_direct.c - the GGUF writer with direct I/O (O_DIRECT).
 *
 * The same declarations and data written with and without direct I/O must
 * give byte-identical files that the reader accepts: whole files smaller
 * than one 4 KiB block, data ending exactly on the 8 MiB buffer boundary
 * and one byte past it, and chunks larger than the buffer (which the
 * buffered writer hands to the OS without copying, and the direct one must
 * not). Expected bytes: the buffered writer's output, whose layout
 * test_gguf checks against the spec; plus the tensor bytes read back here
 * against the pattern written. Where the file system refuses O_DIRECT the
 * direct case degrades to buffered writes (said so), and the checks still
 * hold. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "test.h"

static uint8_t pattern(uint64_t i)
{
    return (uint8_t)(i * 2654435761u >> 13);
}

typedef struct layout {
    const char *name;
    uint64_t ne[3];  /* three 1-D I8 tensors of these lengths (0 = absent) */
    size_t chunk;    /* bytes per sl_gguf_writer_write call */
} layout;

/* Writes the layout; returns 0 and sets *direct_on, or -1. */
static int write_one(const layout *L, const char *path, bool direct, bool *direct_on)
{
    sl_gguf_writer *w = NULL;
    sl_err e = {0};
    if (sl_gguf_writer_open(&w, path, &e)) return -1;
    *direct_on = direct ? sl_gguf_writer_direct_io(w) : false;
    int rc = sl_gguf_writer_set_str(w, "general.name", "direct");
    uint64_t total = 0;
    for (int i = 0; i < 3 && !rc; i++) {
        if (!L->ne[i]) continue;
        char nm[16];
        snprintf(nm, sizeof nm, "t%d", i);
        rc = sl_gguf_writer_add_tensor(w, nm, SL_TYPE_I8, 1, &L->ne[i], &e);
        total += L->ne[i];
    }
    uint8_t *buf = malloc(L->chunk);
    if (!buf) rc = -1;
    for (uint64_t off = 0; off < total && !rc; off += L->chunk) {
        size_t n = total - off < L->chunk ? (size_t)(total - off) : L->chunk;
        for (size_t k = 0; k < n; k++) buf[k] = pattern(off + k);
        rc = sl_gguf_writer_write(w, buf, n, &e);
        /* too late once data flows: the answer is the current state */
        if (!rc && off == 0) CHECK(sl_gguf_writer_direct_io(w) == *direct_on);
    }
    free(buf);
    if (rc) {
        fprintf(stderr, "  %s: %s\n", L->name, e.msg);
        sl_gguf_writer_abort(w);
        return -1;
    }
    if (sl_gguf_writer_close(w, &e)) {
        fprintf(stderr, "  %s: close: %s\n", L->name, e.msg);
        return -1;
    }
    return 0;
}

TEST(direct_and_buffered_files_identical)
{
    const uint64_t MB8 = 8u << 20;
    const layout Ls[] = {
        {"tiny", {10, 0, 0}, 7},
        {"sub-block", {3000, 5, 0}, 1000},
        /* header + data end near the 8 MiB buffer edge; the header is a
         * few hundred bytes, so these straddle it */
        {"edge", {MB8 - 4096, 4000, 1}, 65536},
        {"big chunks", {MB8 + 77, 100, MB8 / 2}, (size_t)MB8 + 12345},
    };
    bool said = false;
    for (size_t i = 0; i < sizeof Ls / sizeof Ls[0]; i++) {
        char pa[512], pb[512];
        t_path(pa, sizeof pa, "buffered.gguf");
        t_path(pb, sizeof pb, "direct.gguf");
        bool on_a = false, on_b = false;
        CHECK(write_one(&Ls[i], pa, false, &on_a) == 0);
        CHECK(write_one(&Ls[i], pb, true, &on_b) == 0);
        CHECK(!on_a);
        if (!on_b && !said) {
            printf("     (this file system refused O_DIRECT: buffered both times)\n");
            said = true;
        }
        size_t la = 0, lb = 0;
        uint8_t *a = (uint8_t *)t_read_all(pa, &la), *b = (uint8_t *)t_read_all(pb, &lb);
        CHECK(a && b);
        CHECK_MSG(la == lb && a && b && memcmp(a, b, la) == 0,
                  "%s: direct (%zu bytes) and buffered (%zu bytes) files differ", Ls[i].name, lb,
                  la);
        free(a);
        free(b);
        /* the reader accepts the direct file and its bytes are the pattern */
        sl_gguf *g = NULL;
        sl_err e = {0};
        CHECK_MSG(sl_gguf_open(&g, pb, &e) == SL_OK, "%s: %s", Ls[i].name, e.msg);
        if (g) {
            uint64_t base = 0;
            int bad = 0;
            for (int k = 0; k < 3; k++) {
                if (!Ls[i].ne[k]) continue;
                char nm[16];
                snprintf(nm, sizeof nm, "t%d", k);
                const sl_gguf_tensor *t = sl_gguf_find_tensor(g, nm);
                CHECK(t != NULL);
                if (!t) continue;
                uint8_t *d = malloc(t->nbytes);
                if (d && sl_gguf_read_tensor(g, t, 0, d, t->nbytes, &e) == SL_OK) {
                    for (uint64_t j = 0; j < t->nbytes; j++) bad += d[j] != pattern(base + j);
                } else {
                    bad++;
                }
                free(d);
                base += Ls[i].ne[k];
            }
            CHECK_EQ_INT(bad, 0);
            sl_gguf_close(g);
        }
        remove(pa);
        remove(pb);
    }
}

int main(void)
{
    RUN(direct_and_buffered_files_identical);
    return TEST_REPORT();
}
