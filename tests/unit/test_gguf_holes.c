/* test_gguf_holes.c - sl_gguf_writer_write_holes: the tensor data left as
 * a hole.
 *
 * The same declarations written with real data and with holes must give
 * files of the same size whose bytes agree everywhere before the data
 * section, and whose data bytes are all zero; the reader must accept the
 * holes file and find each tensor at the offset and size of the real one.
 * Asking for holes after data began, or writing data after the holes, is an
 * error. Expected values: the real file (whose layout test_gguf checks
 * against the spec) and zero. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "test.h"

static const uint64_t NE[3] = {1000, 33, 70000};

/* Declares the three I8 tensors; holes: write_holes, else a pattern. */
static int write_file(const char *path, bool holes)
{
    sl_gguf_writer *w = NULL;
    sl_err e = {0};
    if (sl_gguf_writer_open(&w, path, &e)) return -1;
    int rc = sl_gguf_writer_set_str(w, "general.name", "holes");
    for (int i = 0; i < 3 && !rc; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "t%d", i);
        rc = sl_gguf_writer_add_tensor(w, nm, SL_TYPE_I8, 1, &NE[i], &e);
    }
    if (!rc && holes) {
        rc = sl_gguf_writer_write_holes(w, &e);
    } else if (!rc) {
        for (int i = 0; i < 3 && !rc; i++) {
            uint8_t *b = malloc(NE[i]);
            if (!b) return -1;
            for (uint64_t k = 0; k < NE[i]; k++) b[k] = (uint8_t)(1 + (k * 7 + (uint64_t)i) % 250);
            rc = sl_gguf_writer_write(w, b, NE[i], &e);
            free(b);
        }
    }
    if (rc) {
        fprintf(stderr, "  write: %s\n", e.msg);
        sl_gguf_writer_abort(w);
        return -1;
    }
    return sl_gguf_writer_close(w, &e) ? -1 : 0;
}

TEST(holes_file_matches_real_layout)
{
    char pr[512], ph[512];
    t_path(pr, sizeof pr, "real.gguf");
    t_path(ph, sizeof ph, "holes.gguf");
    CHECK(write_file(pr, false) == 0);
    CHECK(write_file(ph, true) == 0);
    size_t lr = 0, lh = 0;
    uint8_t *r = (uint8_t *)t_read_all(pr, &lr), *h = (uint8_t *)t_read_all(ph, &lh);
    CHECK(r && h);
    CHECK_MSG(lr == lh, "real %zu bytes, holes %zu bytes", lr, lh);
    sl_gguf *gr = NULL, *gh = NULL;
    sl_err e = {0};
    CHECK_MSG(sl_gguf_open(&gr, pr, &e) == SL_OK, "%s", e.msg);
    CHECK_MSG(sl_gguf_open(&gh, ph, &e) == SL_OK, "%s", e.msg);
    if (r && h && gr && gh && lr == lh) {
        /* the data section starts where the real file's t0 begins: its
         * pattern opens 1, 8, 15, 22 (and no data byte is zero) */
        static const uint8_t t0[4] = {1, 8, 15, 22};
        size_t first = 0; /* none: the search starts past the header's start */
        for (size_t i = 24; i + 4 <= lr && !first; i++)
            if (!memcmp(r + i, t0, 4)) first = i;
        CHECK(first > 0);
        if (first > 0) {
            CHECK(memcmp(r, h, first) == 0);
            long nonzero = 0;
            for (size_t i = first; i < lh; i++) nonzero += h[i] != 0;
            CHECK_EQ_INT(nonzero, 0);
        }
        for (int k = 0; k < 3; k++) {
            char nm[16];
            snprintf(nm, sizeof nm, "t%d", k);
            const sl_gguf_tensor *a = sl_gguf_find_tensor(gr, nm), *b = sl_gguf_find_tensor(gh, nm);
            CHECK(a && b);
            if (a && b) {
                CHECK(a->offset == b->offset);
                CHECK(a->nbytes == b->nbytes && b->nbytes == NE[k]);
            }
        }
    }
    if (gr) sl_gguf_close(gr);
    if (gh) sl_gguf_close(gh);
    free(r);
    free(h);
    remove(pr);
    remove(ph);
}

TEST(holes_refused_after_data_and_data_after_holes)
{
    char p[512];
    t_path(p, sizeof p, "late.gguf");
    sl_gguf_writer *w = NULL;
    sl_err e = {0};
    CHECK(sl_gguf_writer_open(&w, p, &e) == SL_OK);
    if (!w) return;
    CHECK(sl_gguf_writer_add_tensor(w, "t", SL_TYPE_I8, 1, &NE[0], &e) == SL_OK);
    uint8_t b[10] = {0};
    CHECK(sl_gguf_writer_write(w, b, sizeof b, &e) == SL_OK);
    CHECK(sl_gguf_writer_write_holes(w, &e) == SL_EINVAL);
    CHECK(strstr(e.msg, "after data writing began") != NULL);
    sl_gguf_writer_abort(w);

    CHECK(sl_gguf_writer_open(&w, p, &e) == SL_OK);
    if (!w) return;
    CHECK(sl_gguf_writer_add_tensor(w, "t", SL_TYPE_I8, 1, &NE[0], &e) == SL_OK);
    CHECK(sl_gguf_writer_write_holes(w, &e) == SL_OK);
    CHECK(sl_gguf_writer_write(w, b, sizeof b, &e) == SL_EINVAL);
    CHECK(strstr(e.msg, "beyond the 1 declared tensors") != NULL);
    sl_gguf_writer_abort(w);
    remove(p);
}

int main(void)
{
    RUN(holes_file_matches_real_layout);
    RUN(holes_refused_after_data_and_data_after_holes);
    return TEST_REPORT();
}
