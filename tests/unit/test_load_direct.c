/* test_load_direct.c - reading the resident weights at load with direct,
 * multi-lane reads laid out as the file is (io_bulk.c, model_load.c):
 * the plan's placement on hand-computed cases; bulk reads of unaligned
 * ranges from two files (one ending unaligned at end of file) bring exactly
 * the files' bytes; a model loaded this way holds every tensor byte for byte
 * as the old tensor-by-tensor path does (resident and streamed) and computes
 * the same logits; a read failure fails the load with the file named. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/testutil.h"
#include "io/io.h"
#include "model/model.h"
#include "synth/synth.h"
#include "sluice.h"
#include "test.h"
#include "util/mem.h"

static char model_path[512];

TEST(plan_places_runs_aligned)
{
    /* file 0: ranges at 100 (+50) and 5000 (+10) share one run (gap < 64 KiB);
     * 200000 (+8) starts a new run; file 1: 10 (+4) */
    sl_io_range r[4] = {
        {0, 5000, 10, 0}, {1, 10, 4, 0}, {0, 200000, 8, 0}, {0, 100, 50, 0}};
    uint64_t bytes;
    sl_err err;
    CHECK(sl_io_bulk_plan(r, 4, 4096, &bytes, &err) == SL_OK);
    /* run 1: file [0, 8192) at buffer 0 */
    CHECK_EQ_INT(r[3].at, 100);
    CHECK_EQ_INT(r[0].at, 5000);
    /* run 2: file [196608, 200704) at buffer 8192 */
    CHECK_EQ_INT(r[2].at, 8192 + (200000 - 196608));
    /* run 3: file 1 [0, 4096) at buffer 12288 */
    CHECK_EQ_INT(r[1].at, 12288 + 10);
    CHECK_EQ_INT(bytes, 16384);
}

/* A file of n bytes, byte i = (i * 7 + seed) & 255. */
static int write_pattern(const char *path, size_t n, int seed)
{
    uint8_t *b = malloc(n);
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)((i * 7 + (size_t)seed) & 255);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int ok = fd >= 0 && write(fd, b, n) == (ssize_t)n;
    if (fd >= 0) close(fd);
    free(b);
    return ok ? 0 : -1;
}

TEST(bulk_read_brings_the_files_bytes)
{
    char p0[512], p1[512];
    t_path(p0, sizeof p0, "bulk0.bin");
    t_path(p1, sizeof p1, "bulk1.bin");
    const size_t n0 = 5u << 20, n1 = 300001; /* file 1 ends unaligned */
    CHECK(write_pattern(p0, n0, 1) == 0 && write_pattern(p1, n1, 2) == 0);
    const char *paths[2] = {p0, p1};
    sl_io_config cfg = {.backend = SL_IO_PREAD, .lanes = 3};
    sl_io *io;
    sl_err err;
    CHECK_MSG(sl_io_open(&io, &cfg, paths, 2, &err) == SL_OK, "%s", err.msg);
    sl_io_range r[5] = {{0, 33, 4000000, 0},   /* crosses 2 MiB boundaries */
                        {0, 4000100, 77, 0},   /* same run */
                        {0, 5000000, 242880, 0}, /* to the end of file 0 */
                        {1, 1, 100, 0},
                        {1, 299000, 1001, 0}}; /* to the unaligned end of file 1 */
    uint64_t bytes, got = 0;
    const sl_io_info *info = sl_io_get_info(io);
    CHECK(sl_io_bulk_plan(r, 5, info->align, &bytes, &err) == SL_OK);
    uint8_t *buf = sl_mem_alloc_huge(bytes);
    CHECK(buf != NULL);
    CHECK_MSG(sl_io_bulk_read(io, r, 5, buf, bytes, NULL, NULL, &got, &err) == SL_OK, "%s",
              err.msg);
    CHECK(got >= 4000000 + 77 + 242880 + 100 + 1001);
    for (int i = 0; i < 5; i++) {
        const int seed = r[i].file == 0 ? 1 : 2;
        size_t bad = 0;
        for (uint64_t k = 0; k < r[i].len; k++)
            if (buf[r[i].at + k] != (uint8_t)(((r[i].offset + k) * 7 + (uint64_t)seed) & 255))
                bad++;
        CHECK_MSG(bad == 0, "range %d: %zu wrong bytes", i, bad);
    }
    /* a range past the end of its file is refused */
    sl_io_range past = {1, 300000, 10, 0};
    CHECK(sl_io_bulk_plan(&past, 1, info->align, &bytes, &err) == SL_OK);
    CHECK(sl_io_bulk_read(io, &past, 1, buf, bytes, NULL, NULL, NULL, &err) != SL_OK);
    sl_mem_free_huge(buf, bytes);
    sl_io_close(io);
    unlink(p0);
    unlink(p1);
}

static int make_model(void)
{
    sl_synth_config c;
    sl_err err;
    if (sl_synth_config_init(&c, "qwen3moe", "tiny", &err)) return -1;
    c.type = SL_SYNTH_Q4_K;
    c.n_layer = 3;
    c.n_expert = 8;
    c.n_expert_used = 2;
    c.seed = 21;
    t_path(model_path, sizeof model_path, "load-direct.gguf");
    if (sl_synth_config_validate(&c, &err) || sl_synth_write(&c, model_path, NULL, NULL, NULL, &err)) {
        fprintf(stderr, "  mkmodel: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* Every resident tensor of a and b has the same bytes. */
static int same_tensors(const sl_model *a, const sl_model *b)
{
    int diff = 0;
    const sl_tensor *ta[3] = {&a->tok_embd, &a->output_norm, &a->output};
    const sl_tensor *tb[3] = {&b->tok_embd, &b->output_norm, &b->output};
    for (int i = 0; i < 3; i++)
        if (memcmp(ta[i]->data, tb[i]->data, ta[i]->nbytes)) diff++;
    for (int il = 0; il < a->hp.n_layer; il++)
        for (int r = 0; r < SL_LT_COUNT; r++) {
            const sl_tensor *x = &a->layers[il].t[r], *y = &b->layers[il].t[r];
            if (!x->data && !y->data) continue;
            if (!x->data || !y->data || memcmp(x->data, y->data, x->nbytes)) diff++;
        }
    return diff;
}

static const float *eval_once(sl_model *m, sl_session **s)
{
    sl_err err;
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 16;
    if (sl_session_create(s, m, &sp, &err)) return NULL;
    int32_t toks[5] = {1, 5, 9, 13, 17};
    if (sl_session_eval(*s, toks, 5, &err)) return NULL;
    return sl_session_logits(*s);
}

static void progress_count(void *ud, uint64_t done, uint64_t total)
{
    uint64_t *c = ud;
    c[0]++;
    c[1] = done;
    c[2] = total;
}

TEST(model_loads_the_same_bytes)
{
    for (int streamed = 0; streamed < 2; streamed++) {
        sl_err err;
        sl_model *plain = NULL, *direct = NULL;
        sl_model_params mp = sl_model_default_params();
        mp.stream = streamed ? SL_STREAM_ON : SL_STREAM_OFF;
        mp.load_plain = true;
        CHECK_MSG(sl_model_load(&plain, model_path, &mp, &err) == SL_OK, "%s", err.msg);
        mp.load_plain = false;
        uint64_t prog[3] = {0, 0, 0};
        mp.load_progress = progress_count;
        mp.load_progress_ud = prog;
        CHECK_MSG(sl_model_load(&direct, model_path, &mp, &err) == SL_OK, "%s", err.msg);
        if (!plain || !direct) {
            sl_model_free(plain);
            sl_model_free(direct);
            continue;
        }
        CHECK_EQ_INT(same_tensors(plain, direct), 0);
        sl_load_stats ls;
        sl_model_load_stats(direct, &ls);
        /* at least every resident tensor's bytes (dense_bytes rounds each up to 64) */
        CHECK(ls.bytes + 64u * (3u + 3u * SL_LT_COUNT) >= direct->dense_bytes +
                                                           (streamed ? 0 : direct->expert_bytes));
        CHECK_STR_CONTAINS(ls.mode, "huge pages");
        CHECK(prog[0] > 0 && prog[1] == prog[2] && prog[2] == ls.bytes);
        sl_model_load_stats(plain, &ls);
        CHECK_STR_CONTAINS(ls.mode, "one read per tensor");
        sl_session *sa = NULL, *sb = NULL;
        const float *la = eval_once(plain, &sa), *lb = eval_once(direct, &sb);
        CHECK(la && lb);
        if (la && lb)
            CHECK(memcmp(la, lb, sizeof(float) * (size_t)sl_model_n_vocab(plain)) == 0);
        sl_session_free(sa);
        sl_session_free(sb);
        sl_model_free(plain);
        sl_model_free(direct);
    }
}

TEST(truncated_file_fails_the_load)
{
    char cut[512];
    t_path(cut, sizeof cut, "load-direct-cut.gguf");
    FILE *in = fopen(model_path, "rb"), *out = fopen(cut, "wb");
    CHECK(in && out);
    if (!in || !out) return;
    fseek(in, 0, SEEK_END);
    const long n = ftell(in);
    fseek(in, 0, SEEK_SET);
    char *b = malloc((size_t)n);
    CHECK(fread(b, 1, (size_t)n, in) == (size_t)n);
    fwrite(b, 1, (size_t)(n - 3000), out); /* the last tensor's end is gone */
    fclose(in);
    fclose(out);
    free(b);
    sl_model *m = NULL;
    sl_err err;
    sl_model_params mp = sl_model_default_params();
    mp.stream = SL_STREAM_OFF;
    CHECK(sl_model_load(&m, cut, &mp, &err) != SL_OK);
    CHECK(m == NULL);
    unlink(cut);
}

int main(void)
{
    if (make_model()) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    RUN(plan_places_runs_aligned);
    RUN(bulk_read_brings_the_files_bytes);
    RUN(model_loads_the_same_bytes);
    RUN(truncated_file_fails_the_load);
    return TEST_REPORT();
}
