/* cmd_iobench.c - `sluice iobench`: the drive's curve through sluice's own read path.
 *
 * Owns: the command line of iobench, the deterministic offset streams, the
 * run loop (keep every lane busy for S seconds per lane count), the CPU
 * burners of --compute-load, and the table / JSON it prints. Reads go through
 * src/io exactly as the expert streamer issues them.
 * Must not know: how a lane reads (src/io), the GGUF format (src/gguf is asked
 * for expert slice sizes and offsets only). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "gguf/gguf.h"
#include "io/io.h"
#include "io/io_rate.h"
#include "model/arch.h"
#include "util/file.h"
#include "util/timer.h"

#include "user_cache.h"
#include "util/out_file.h"

#define MAX_ROWS 32
#define MAX_PARTS 64
#define MIN_SLICES 8 /* refuse regions smaller than this many reads */
#define OFFSET_ALIGN 4096u
#define HUGE_ALIGN ((size_t)2 << 20)

static void usage(FILE *out)
{
    fprintf(out,
            "usage: sluice iobench --model FILE [options]\n"
            "\n"
            "For each lane count, that many lanes issue random aligned reads of the slice\n"
            "size over FILE for S seconds (direct I/O unless the filesystem refuses it),\n"
            "through the same I/O layer as the expert streamer. One row per lane count:\n"
            "MiB/s (of the aligned windows read), reads, latency mean/p50/p99, mode; then\n"
            "the peak.\n"
            "\n"
            "  --model FILE        a GGUF model, or any large file with --slice-kb N\n"
            "  --lanes LIST        lane counts, comma-separated (default 1,2,4,8)\n"
            "  --slice-kb N|auto   read size in KiB; auto = the model's per-projection\n"
            "                      expert slice (gate tensor bytes / experts) (default auto)\n"
            "  --expert            each read is a whole expert: its gate, up and down slices\n"
            "                      as three requests (at their real offsets in a GGUF model)\n"
            "  --seconds S         per lane count (default 5)\n"
            "  --backend B         pread | uring (default pread)\n"
            "  --qd N              io_uring reads in flight per lane (default 1)\n"
            "  --range-mb N        confine offsets to the first N MiB (locality)\n"
            "  --compute-load N    N threads burning CPU during the reads\n"
            "  --fresh             destination pages released before every read, so each\n"
            "                      read lands in freshly committed pages\n"
            "  --buffered          no O_DIRECT: see what the page cache contributes\n"
            "  --small-pages       destination buffers without transparent huge pages\n"
            "                      (default: madvise(MADV_HUGEPAGE), as fewer, larger DMA\n"
            "                      segments can matter a lot on virtual disks)\n"
            "  --mmap              hold a read-only mapping of the file during the run\n"
            "  --reopen-lanes      reopen the lanes' descriptors just before the run (with\n"
            "                      --mmap: after the mapping was made and dropped again)\n"
            "  --scatter N         split each read into N reads at independent offsets\n"
            "  --seed N            offset streams seed (default 1); stream i's k-th read is\n"
            "                      at the same offset in every run with the same settings\n"
            "  --trace FILE        one line per read: lanes stream k part file offset bytes\n"
            "                      lane start_us end_us (k = the stream's k-th read)\n"
            "  --json              machine-readable output on stdout\n");
}

/* ---- options ------------------------------------------------------------------ */

typedef struct opts {
    const char *model;
    unsigned lanes[MAX_ROWS];
    unsigned n_lanes;
    uint64_t slice_bytes; /* 0 = auto */
    bool expert;
    double seconds;
    sl_io_backend backend;
    unsigned qd;
    uint64_t range_bytes; /* 0 = whole file */
    unsigned compute_load;
    bool fresh, buffered, use_mmap, reopen, json, small_pages;
    const char *trace;
    unsigned scatter;
    uint64_t seed;
} opts;

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-') return -1;
    *out = v;
    return 0;
}

static int parse_lanes(const char *s, opts *o)
{
    o->n_lanes = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (errno || end == p || v < 1 || v > SL_IO_MAX_LANES || o->n_lanes == MAX_ROWS) return -1;
        o->lanes[o->n_lanes++] = (unsigned)v;
        if (*end == ',') end++;
        else if (*end) return -1;
        p = end;
    }
    return o->n_lanes ? 0 : -1;
}

/* Returns 0 to run, 1 if help was printed, 2 on a usage error. */
static int parse_args(int argc, char **argv, opts *o)
{
    *o = (opts){.seconds = 5, .backend = SL_IO_PREAD, .qd = 1, .scatter = 1, .seed = 1,
                .lanes = {1, 2, 4, 8}, .n_lanes = 4};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = NULL;
        char name[64];
        const char *eq = strchr(a, '=');
        if (eq && eq - a < (long)sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = '\0';
            a = name;
            v = eq + 1;
        }
#define VALUE()                                                                    \
    do {                                                                           \
        if (!v) {                                                                  \
            if (i + 1 >= argc) {                                                   \
                fprintf(stderr, "sluice iobench: %s needs a value\n", a);          \
                return 2;                                                          \
            }                                                                      \
            v = argv[++i];                                                         \
        }                                                                          \
    } while (0)
#define FLAG()                                                                     \
    do {                                                                           \
        if (v) {                                                                   \
            fprintf(stderr, "sluice iobench: %s takes no value\n", a);             \
            return 2;                                                              \
        }                                                                          \
    } while (0)
        uint64_t n;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(a, "--model")) {
            VALUE();
            o->model = v;
        } else if (!strcmp(a, "--lanes")) {
            VALUE();
            if (parse_lanes(v, o)) {
                fprintf(stderr, "sluice iobench: --lanes wants a list like 1,2,4,8 (each 1..%u)\n",
                        SL_IO_MAX_LANES);
                return 2;
            }
        } else if (!strcmp(a, "--slice-kb")) {
            VALUE();
            if (!strcmp(v, "auto")) o->slice_bytes = 0;
            else if (parse_u64(v, &n) || n == 0 || n > (1u << 20)) {
                fprintf(stderr, "sluice iobench: --slice-kb wants auto or 1..1048576, got '%s'\n", v);
                return 2;
            } else o->slice_bytes = n * 1024;
        } else if (!strcmp(a, "--expert")) {
            FLAG();
            o->expert = true;
        } else if (!strcmp(a, "--seconds")) {
            VALUE();
            char *end;
            o->seconds = strtod(v, &end);
            if (end == v || *end || !(o->seconds > 0) || o->seconds > 3600) {
                fprintf(stderr, "sluice iobench: --seconds wants 0 < S <= 3600, got '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--backend")) {
            VALUE();
            if (!strcmp(v, "pread")) o->backend = SL_IO_PREAD;
            else if (!strcmp(v, "uring") || !strcmp(v, "io_uring")) o->backend = SL_IO_URING;
            else {
                fprintf(stderr, "sluice iobench: --backend wants pread or uring, got '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--qd")) {
            VALUE();
            if (parse_u64(v, &n) || n < 1 || n > SL_IO_MAX_QD) {
                fprintf(stderr, "sluice iobench: --qd wants 1..%u, got '%s'\n", SL_IO_MAX_QD, v);
                return 2;
            }
            o->qd = (unsigned)n;
        } else if (!strcmp(a, "--range-mb")) {
            VALUE();
            if (parse_u64(v, &n) || n == 0 || n > (1ull << 40)) {
                fprintf(stderr, "sluice iobench: --range-mb wants a positive size, got '%s'\n", v);
                return 2;
            }
            o->range_bytes = n << 20;
        } else if (!strcmp(a, "--compute-load")) {
            VALUE();
            if (parse_u64(v, &n) || n > 256) {
                fprintf(stderr, "sluice iobench: --compute-load wants 0..256, got '%s'\n", v);
                return 2;
            }
            o->compute_load = (unsigned)n;
        } else if (!strcmp(a, "--fresh")) {
            FLAG();
            o->fresh = true;
        } else if (!strcmp(a, "--small-pages")) {
            FLAG();
            o->small_pages = true;
        } else if (!strcmp(a, "--buffered")) {
            FLAG();
            o->buffered = true;
        } else if (!strcmp(a, "--mmap")) {
            FLAG();
            o->use_mmap = true;
        } else if (!strcmp(a, "--reopen-lanes")) {
            FLAG();
            o->reopen = true;
        } else if (!strcmp(a, "--scatter")) {
            VALUE();
            if (parse_u64(v, &n) || n < 1 || n > MAX_PARTS) {
                fprintf(stderr, "sluice iobench: --scatter wants 1..%d, got '%s'\n", MAX_PARTS, v);
                return 2;
            }
            o->scatter = (unsigned)n;
        } else if (!strcmp(a, "--seed")) {
            VALUE();
            if (parse_u64(v, &o->seed)) {
                fprintf(stderr, "sluice iobench: --seed wants a number, got '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--trace")) {
            VALUE();
            o->trace = v;
        } else if (!strcmp(a, "--json")) {
            FLAG();
            o->json = true;
        } else {
            fprintf(stderr, "sluice iobench: unknown option '%s' (see --help)\n", argv[i]);
            return 2;
        }
#undef VALUE
#undef FLAG
    }
    if (!o->model) {
        fprintf(stderr, "sluice iobench: --model FILE is required (see --help)\n");
        return 2;
    }
    if (o->expert && o->scatter > 1) {
        fprintf(stderr, "sluice iobench: --expert and --scatter each set the reads per logical "
                        "read; use one of them\n");
        return 2;
    }
    return 0;
}

/* ---- what to read: slices and where they are ---------------------------------- */

typedef struct slice_src {
    uint32_t file;
    uint64_t offset;  /* of expert 0 */
    uint64_t bytes;   /* one expert's slice (q4_k_m mixes types across layers) */
} slice_src;

/* Expert placement in a GGUF model: for each MoE layer, the gate/up/down
 * tensors' positions; expert e's slice p is at offset + e * bytes. */
typedef struct layout {
    bool is_gguf;
    char *paths[64];
    uint32_t n_files;
    uint64_t sizes[64];
    uint64_t total;            /* sum of sizes */
    uint64_t part_bytes[MAX_PARTS]; /* per read; with real experts, the largest */
    unsigned n_parts;          /* reads per logical read */
    char slice_note[160];      /* where the slice size came from */
    /* real expert placement (GGUF + --expert without --range-mb) */
    bool real_experts;
    unsigned n_moe_layers;
    uint64_t n_expert;
    slice_src *layer_src;      /* n_moe_layers * 3 */
} layout;

static bool has_gguf_magic(const char *path)
{
    char m[4] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, m, 4);
    close(fd);
    return n == 4 && !memcmp(m, "GGUF", 4);
}

static void free_layout(layout *L)
{
    for (uint32_t i = 0; i < L->n_files; i++) free(L->paths[i]);
    free(L->layer_src);
}

/* Reads the expert tensors of every layer; fills slices and placement. */
static int read_gguf_layout(const opts *o, layout *L)
{
    sl_gguf *g = NULL;
    sl_err err = {0};
    if (sl_gguf_open(&g, o->model, &err)) {
        fprintf(stderr, "sluice iobench: %s\n", err.msg);
        return 1;
    }
    int rc = 1;
    L->n_files = sl_gguf_file_count(g);
    if (L->n_files > 64) {
        fprintf(stderr, "sluice iobench: %u split parts; at most 64 supported\n", L->n_files);
        goto out;
    }
    for (uint32_t i = 0; i < L->n_files; i++) {
        L->paths[i] = strdup(sl_gguf_file_path(g, i));
        L->sizes[i] = sl_gguf_file_size(g, i);
        if (!L->paths[i]) goto out;
    }
    static const char *const proj[3] = {SL_T_FFN_GATE_EXPS, SL_T_FFN_UP_EXPS, SL_T_FFN_DOWN_EXPS};
    uint32_t n_layers = 0;
    const char *arch = sl_gguf_get_str(g, "general.architecture");
    char key[128];
    if (!arch || !sl_gguf_get_u32(g, sl_arch_key(key, sizeof key, arch, SL_KEY_BLOCK_COUNT),
                                  &n_layers) || n_layers == 0 || n_layers > 100000) {
        fprintf(stderr, "sluice iobench: '%s' has no usable {arch}.block_count\n", o->model);
        goto out;
    }
    L->layer_src = calloc((size_t)n_layers * 3, sizeof *L->layer_src);
    if (!L->layer_src) goto out;
    uint64_t bytes[3] = {0}, maxb[3] = {0};
    const sl_gguf_tensor *first[3] = {0};
    bool mixed = false;
    for (uint32_t l = 0; l < n_layers; l++) {
        const sl_gguf_tensor *t[3];
        char name[96];
        for (int p = 0; p < 3; p++)
            t[p] = sl_gguf_find_tensor(g, sl_tensor_name(name, sizeof name, (int)l, proj[p]));
        if (!t[0] || !t[1] || !t[2]) continue; /* a dense layer */
        for (int p = 0; p < 3; p++) {
            if (t[p]->n_dims != 3 || t[p]->ne[2] == 0 || t[p]->nbytes % t[p]->ne[2]) {
                fprintf(stderr, "sluice iobench: %s has shape %llux%llux%llu (%llu bytes): not "
                        "a stack of equal expert slices\n", t[p]->name.ptr,
                        (unsigned long long)t[p]->ne[0], (unsigned long long)t[p]->ne[1],
                        (unsigned long long)t[p]->ne[2], (unsigned long long)t[p]->nbytes);
                goto out;
            }
            uint64_t b = t[p]->nbytes / t[p]->ne[2];
            if (!first[p]) {
                first[p] = t[p];
                bytes[p] = b;
                if (!L->n_expert) L->n_expert = t[p]->ne[2];
            }
            if (t[p]->ne[2] != L->n_expert) {
                fprintf(stderr, "sluice iobench: %s stacks %llu experts, %s %llu\n",
                        t[p]->name.ptr, (unsigned long long)t[p]->ne[2], first[0]->name.ptr,
                        (unsigned long long)L->n_expert);
                goto out;
            }
            mixed |= b != bytes[p];
            if (b > maxb[p]) maxb[p] = b;
            L->layer_src[L->n_moe_layers * 3 + p] =
                (slice_src){.file = t[p]->file_index, .offset = t[p]->offset, .bytes = b};
        }
        L->n_moe_layers++;
    }
    if (L->n_moe_layers == 0) {
        fprintf(stderr, "sluice iobench: '%s' has no routed expert tensors (blk.N.%s); give "
                "--slice-kb N\n", o->model, SL_T_FFN_GATE_EXPS);
        goto out;
    }
    if (o->expert) {
        L->n_parts = 3;
        for (int p = 0; p < 3; p++) L->part_bytes[p] = maxb[p];
    } else {
        L->n_parts = 1;
        L->part_bytes[0] = bytes[0];
    }
    snprintf(L->slice_note, sizeof L->slice_note,
             "%s: %llux%llux%llu %s, %llu experts in %u MoE layers%s", first[0]->name.ptr,
             (unsigned long long)first[0]->ne[0], (unsigned long long)first[0]->ne[1],
             (unsigned long long)first[0]->ne[2], sl_type_name(first[0]->type),
             (unsigned long long)L->n_expert, L->n_moe_layers,
             mixed && o->expert ? "; slice sizes vary by layer, largest shown" : "");
    rc = 0;
out:
    sl_gguf_close(g);
    return rc;
}

static int build_layout(const opts *o, layout *L)
{
    memset(L, 0, sizeof *L);
    L->is_gguf = has_gguf_magic(o->model);
    if (o->slice_bytes == 0) {
        if (!L->is_gguf) {
            fprintf(stderr, "sluice iobench: --slice-kb auto needs a GGUF model and '%s' is not "
                    "one; give --slice-kb N\n", o->model);
            return 1;
        }
        if (read_gguf_layout(o, L)) return 1;
        /* With --range-mb the slices are read at random offsets in the
         * range instead of where the experts really are. */
        L->real_experts = o->expert && !o->range_bytes;
    } else {
        int fd = open(o->model, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            fprintf(stderr, "sluice iobench: cannot open '%s': %s\n", o->model, strerror(errno));
            return 1;
        }
        off_t end = lseek(fd, 0, SEEK_END);
        close(fd);
        if (end < 0) {
            fprintf(stderr, "sluice iobench: cannot size '%s': %s\n", o->model, strerror(errno));
            return 1;
        }
        L->n_files = 1;
        L->paths[0] = strdup(o->model);
        L->sizes[0] = (uint64_t)end;
        if (!L->paths[0]) return 1;
        L->n_parts = o->expert ? 3 : 1;
        for (unsigned p = 0; p < L->n_parts; p++) L->part_bytes[p] = o->slice_bytes;
        snprintf(L->slice_note, sizeof L->slice_note, "--slice-kb %llu",
                 (unsigned long long)(o->slice_bytes / 1024));
    }
    if (o->scatter > 1) {
        /* Same bytes per logical read, in scatter pieces. */
        uint64_t piece = (L->part_bytes[0] + o->scatter - 1) / o->scatter;
        L->n_parts = o->scatter;
        for (unsigned p = 0; p < L->n_parts; p++) L->part_bytes[p] = piece;
    }
    for (uint32_t i = 0; i < L->n_files; i++) L->total += L->sizes[i];
    return 0;
}

/* ---- offset streams -------------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t next_rand(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ull;
    return mix64(*state);
}

typedef struct part_target { uint32_t file; uint64_t offset, len; } part_target;

/* Chooses the targets of one logical read from a stream's state. */
static void next_targets(const layout *L, const opts *o, uint64_t *state, part_target *t)
{
    if (L->real_experts) {
        uint64_t r = next_rand(state);
        unsigned layer = (unsigned)(r % L->n_moe_layers);
        uint64_t e = next_rand(state) % L->n_expert;
        for (unsigned p = 0; p < 3; p++) {
            const slice_src *s = &L->layer_src[layer * 3 + p];
            t[p] = (part_target){s->file, s->offset + e * s->bytes, s->bytes};
        }
        return;
    }
    for (unsigned p = 0; p < L->n_parts; p++) {
        uint64_t len = L->part_bytes[p];
        /* A file chosen in proportion to its size (one file unless split),
         * then an aligned offset inside the allowed region of it. */
        uint32_t f = 0;
        if (L->n_files > 1) {
            uint64_t at = next_rand(state) % L->total;
            while (f + 1 < L->n_files && at >= L->sizes[f]) at -= L->sizes[f++];
        }
        uint64_t region = L->sizes[f];
        if (o->range_bytes && o->range_bytes < region) region = o->range_bytes;
        uint64_t slots = region >= len ? (region - len) / OFFSET_ALIGN + 1 : 1;
        uint64_t off = (next_rand(state) % slots) * OFFSET_ALIGN;
        t[p] = (part_target){f, off, len};
    }
}

/* ---- compute load ------------------------------------------------------------------ */

static atomic_bool g_burn_stop;

static void *burn_main(void *arg)
{
    (void)arg;
    float acc[64];
    for (int i = 0; i < 64; i++) acc[i] = (float)i * 0.001f;
    while (!atomic_load_explicit(&g_burn_stop, memory_order_relaxed)) {
        for (int k = 0; k < 4096; k++)
            for (int i = 0; i < 64; i++) acc[i] = acc[i] * 0.999f + 0.0001f;
    }
    volatile float sink = acc[7];
    (void)sink;
    return NULL;
}

/* ---- one row ------------------------------------------------------------------------- */

typedef struct row {
    unsigned lanes;
    double mib_s, elapsed_s;
    uint64_t reads, requests, bytes;
    double lat_mean_ms, lat_p50_ms, lat_p99_ms;
    sl_io_info info;
} row;

typedef struct stream {
    uint64_t state;
    uint64_t k;          /* logical reads issued so far */
    unsigned parts_left;
    uint64_t t_first_start, t_last_end;
    bool active;
} stream;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct_ms(const uint64_t *v, size_t n, double p)
{
    if (n == 0) return 0;
    /* nearest rank */
    size_t k = (size_t)ceil(p * (double)n);
    if (k < 1) k = 1;
    if (k > n) k = n;
    return (double)v[k - 1] / 1e6;
}

typedef struct bench {
    const opts *o;
    const layout *L;
    unsigned char *mem;  /* all part buffers, 2 MiB-aligned inside raw */
    size_t mem_len;
    void *raw;           /* the mapping behind mem */
    size_t raw_len;
    size_t buf_stride;
    size_t per_huge;     /* buffers per 2 MiB page (0: a buffer is larger) */
    FILE *trace;
    uint64_t t_base;     /* trace times are relative to this */
} bench;

/* Buffer i. Buffers are packed so that none crosses a 2 MiB boundary when
 * one fits in 2 MiB: with huge pages each read then lands in one physically
 * contiguous page. */
static unsigned char *buf_at(const bench *b, size_t i)
{
    if (b->per_huge == 0) return b->mem + i * b->buf_stride;
    return b->mem + (i / b->per_huge) * HUGE_ALIGN + (i % b->per_huge) * b->buf_stride;
}

static int submit_stream(sl_io *io, bench *b, stream *s, unsigned sid, bool fresh)
{
    const layout *L = b->L;
    part_target t[MAX_PARTS];
    sl_io_req q[MAX_PARTS];
    next_targets(L, b->o, &s->state, t);
    for (unsigned p = 0; p < L->n_parts; p++) {
        unsigned char *dst = buf_at(b, (size_t)sid * L->n_parts + p);
        if (fresh) madvise(dst, b->buf_stride, MADV_DONTNEED);
        q[p] = (sl_io_req){.file = t[p].file, .offset = t[p].offset, .len = t[p].len,
                           .dst = dst, .dst_cap = b->buf_stride,
                           .tag = (uint64_t)sid * MAX_PARTS + p};
    }
    sl_err err = {0};
    if (sl_io_submit_many(io, q, L->n_parts, &err)) {
        fprintf(stderr, "sluice iobench: %s\n", err.msg);
        return 1;
    }
    s->k++;
    s->parts_left = L->n_parts;
    s->t_first_start = UINT64_MAX;
    s->t_last_end = 0;
    s->active = true;
    return 0;
}

static int run_row(bench *b, unsigned lanes, row *r, sl_io_info *info_out)
{
    const opts *o = b->o;
    const layout *L = b->L;
    int rc = 1;
    sl_io *io = NULL;
    stream *st = NULL;
    uint64_t *lat = NULL;
    size_t n_lat = 0, cap_lat = 0;
    unsigned depth = lanes * (o->backend == SL_IO_URING ? o->qd : 1);
    /* One spare logical read per lane keeps a request queued for each lane
     * while the main thread handles a completion; the drive still sees at
     * most `depth` reads, since each lane limits its own. */
    unsigned n_streams = depth + lanes;
    size_t n_reqs = (size_t)n_streams * L->n_parts;

    sl_io_config cfg = {.backend = o->backend, .lanes = lanes, .queue_depth = o->qd,
                        .max_inflight = (unsigned)(n_reqs > 64 ? n_reqs : 64),
                        .buffered = o->buffered};
    /* Test hook (tests/cli/iobench.sh): show the fallback report on a
     * filesystem that accepts O_DIRECT. */
    if (getenv("SLUICE_TEST_REFUSE_DIRECT")) cfg.test_flags |= SL_IO_TEST_REFUSE_DIRECT;
    sl_err err = {0};
    void *maps[64] = {0};
    if (o->use_mmap) {
        /* The mapping must exist before the lanes open their descriptors. */
        for (uint32_t f = 0; f < L->n_files; f++) {
            int fd = open(L->paths[f], O_RDONLY | O_CLOEXEC);
            if (fd < 0) {
                fprintf(stderr, "sluice iobench: cannot open '%s': %s\n", L->paths[f],
                        strerror(errno));
                goto out;
            }
            maps[f] = mmap(NULL, L->sizes[f], PROT_READ, MAP_SHARED, fd, 0);
            close(fd);
            if (maps[f] == MAP_FAILED) {
                maps[f] = NULL;
                fprintf(stderr, "sluice iobench: cannot map '%s': %s\n", L->paths[f],
                        strerror(errno));
                goto out;
            }
        }
    }
    if (sl_io_open(&io, &cfg, (const char *const *)L->paths, L->n_files, &err)) {
        fprintf(stderr, "sluice iobench: %s\n", err.msg);
        goto out;
    }
    *info_out = *sl_io_get_info(io);
    uint64_t maxpart = 0;
    for (unsigned p = 0; p < L->n_parts; p++)
        if (L->part_bytes[p] > maxpart) maxpart = L->part_bytes[p];
    size_t stride = (size_t)sl_io_window_cap(io, maxpart);
    stride = (stride + 4095) & ~(size_t)4095;
    size_t per_huge = HUGE_ALIGN / stride;
    size_t need = per_huge ? (n_reqs + per_huge - 1) / per_huge * HUGE_ALIGN : stride * n_reqs;
    if (!b->mem || b->buf_stride != stride || b->mem_len < need) {
        if (b->raw) munmap(b->raw, b->raw_len);
        b->mem_len = need;
        b->buf_stride = stride;
        b->per_huge = per_huge;
        /* 2 MiB more than needed, so the buffers can start on a huge page. */
        b->raw_len = b->mem_len + HUGE_ALIGN;
        b->raw = mmap(NULL, b->raw_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (b->raw == MAP_FAILED) {
            b->raw = b->mem = NULL;
            fprintf(stderr, "sluice iobench: out of memory for %zu bytes of read buffers\n",
                    b->mem_len);
            goto out;
        }
        b->mem = (unsigned char *)(((uintptr_t)b->raw + HUGE_ALIGN - 1) & ~(uintptr_t)(HUGE_ALIGN - 1));
        /* Huge pages by default: a read into physically contiguous memory
         * is a few large DMA segments instead of one per 4 KiB page, which
         * on some virtual disks is worth up to 2x (docs/perf-log.md). */
#ifdef MADV_HUGEPAGE /* Linux only (not macOS) */
        if (!o->small_pages) madvise(b->mem, b->mem_len, MADV_HUGEPAGE);
#endif
    }
    if (!o->fresh) memset(b->mem, 0, b->mem_len); /* commit the pages once */

    if (o->reopen) {
        for (uint32_t f = 0; f < L->n_files; f++)
            if (maps[f]) {
                munmap(maps[f], L->sizes[f]);
                maps[f] = NULL;
            }
        if (sl_io_reopen(io, &err)) {
            fprintf(stderr, "sluice iobench: %s\n", err.msg);
            goto out;
        }
    }

    st = calloc(n_streams, sizeof *st);
    cap_lat = 1 << 16;
    lat = malloc(cap_lat * sizeof *lat);
    if (!st || !lat) {
        fprintf(stderr, "sluice iobench: out of memory\n");
        goto out;
    }
    for (unsigned s = 0; s < n_streams; s++)
        st[s].state = mix64(o->seed ^ mix64(((uint64_t)lanes << 32) ^ (s + 1)));

    pthread_t burners[256];
    unsigned n_burn = 0;
    atomic_store(&g_burn_stop, false);
    for (unsigned i = 0; i < o->compute_load; i++)
        if (pthread_create(&burners[n_burn], NULL, burn_main, NULL) == 0) n_burn++;

    uint64_t t0 = sl_now_ns();
    uint64_t deadline = t0 + (uint64_t)(o->seconds * 1e9);
    uint64_t t_last = t0;
    int fail = 0;
    for (unsigned s = 0; s < n_streams && !fail; s++) fail = submit_stream(io, b, &st[s], s, o->fresh);
    while (sl_io_outstanding(io) > 0) {
        sl_io_done d;
        if (sl_io_wait(io, &d, &err)) break;
        if (d.status != SL_OK) {
            if (!fail) fprintf(stderr, "sluice iobench: %s\n", d.err.msg);
            fail = 1;
            continue;
        }
        unsigned sid = (unsigned)(d.tag / MAX_PARTS);
        stream *s = &st[sid];
        if (b->trace)
            fprintf(b->trace, "%u %u %llu %u %u %llu %llu %u %.1f %.1f\n", lanes, sid,
                    (unsigned long long)(s->k - 1), (unsigned)(d.tag % MAX_PARTS), d.file,
                    (unsigned long long)d.offset, (unsigned long long)d.len, d.lane,
                    (double)(d.t_start_ns - b->t_base) / 1e3,
                    (double)(d.t_end_ns - b->t_base) / 1e3);
        r->requests++;
        r->bytes += d.window_bytes;
        if (d.t_start_ns < s->t_first_start) s->t_first_start = d.t_start_ns;
        if (d.t_end_ns > s->t_last_end) s->t_last_end = d.t_end_ns;
        if (d.t_end_ns > t_last) t_last = d.t_end_ns;
        if (--s->parts_left > 0) continue;
        s->active = false;
        r->reads++;
        if (n_lat == cap_lat) {
            uint64_t *nl = realloc(lat, 2 * cap_lat * sizeof *lat);
            if (nl) {
                lat = nl;
                cap_lat *= 2;
            }
        }
        if (n_lat < cap_lat) lat[n_lat++] = s->t_last_end - s->t_first_start;
        if (!fail && sl_now_ns() < deadline) fail = submit_stream(io, b, s, sid, o->fresh);
    }
    atomic_store(&g_burn_stop, true);
    for (unsigned i = 0; i < n_burn; i++) pthread_join(burners[i], NULL);
    if (fail) goto out;

    r->lanes = lanes;
    r->info = *info_out;
    r->elapsed_s = sl_ns_to_s(t_last - t0);
    r->mib_s = r->elapsed_s > 0 ? (double)r->bytes / 1048576.0 / r->elapsed_s : 0;
    qsort(lat, n_lat, sizeof *lat, cmp_u64);
    double sum = 0;
    for (size_t i = 0; i < n_lat; i++) sum += (double)lat[i];
    r->lat_mean_ms = n_lat ? sum / (double)n_lat / 1e6 : 0;
    r->lat_p50_ms = pct_ms(lat, n_lat, 0.50);
    r->lat_p99_ms = pct_ms(lat, n_lat, 0.99);
    rc = 0;
out:
    sl_io_close(io);
    for (uint32_t f = 0; f < L->n_files; f++)
        if (maps[f]) munmap(maps[f], L->sizes[f]);
    free(st);
    free(lat);
    return rc;
}

/* ---- output ----------------------------------------------------------------------- */

static void mode_str(const sl_io_info *in, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s %s%s", in->direct ? sl_io_direct_word : "buffered",
             in->direct_fell_back ? "(fallback)" : "", sl_io_backend_name(in->backend),
             in->uring_fell_back ? "(fallback)" : "");
}

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

static void print_header(const opts *o, const layout *L, const sl_io_info *in)
{
    char slices[256] = "";
    size_t at = 0;
    for (unsigned p = 0; p < L->n_parts && at < sizeof slices - 32; p++)
        at += (size_t)snprintf(slices + at, sizeof slices - at, "%s%.1f", p ? "+" : "",
                               (double)L->part_bytes[p] / 1024.0);
    bool gib = L->total >= (1ull << 30);
    printf("sluice iobench: %s (%.2f %s%s)\n", o->model,
           (double)L->total / (gib ? 1073741824.0 : 1048576.0), gib ? "GiB" : "MiB",
           L->n_files > 1 ? ", split" : "");
    printf("  read: %s KiB%s (%s)%s\n", slices,
           L->real_experts ? " = one expert's gate+up+down at its real offsets"
           : o->expert ? " = gate+up+down at independent offsets"
           : o->scatter > 1 ? " in scatter pieces" : "",
           L->slice_note, o->range_bytes ? ", offsets confined" : "");
    printf("  %s, qd %u per lane, %.1f s per row, seed %llu, alignment %u, %s%s%s%s\n",
           sl_io_backend_name(o->backend), o->backend == SL_IO_URING ? o->qd : 1, o->seconds,
           (unsigned long long)o->seed, in->align,
           o->small_pages ? "small pages" : "huge pages asked", o->fresh ? ", fresh pages" : "",
           o->use_mmap && !o->reopen ? ", file mapped during the run"
           : o->use_mmap ? ", file mapped, unmapped before the run" : "",
           o->reopen ? ", lane descriptors reopened before the run" : "");
    if (o->compute_load) printf("  compute load: %u burning threads\n", o->compute_load);
    if (o->range_bytes)
        printf("  range: first %llu MiB of each file\n", (unsigned long long)(o->range_bytes >> 20));
    if (in->direct_fell_back)
        printf("  NOTE: O_DIRECT unavailable: %s.\n"
               "        Figures below include the page cache and are NOT the drive's.\n",
               in->direct_reason);
    else if (o->buffered)
        printf("  NOTE: --buffered: page cache included; figures are not the drive's.\n");
    if (in->uring_fell_back) printf("  NOTE: io_uring unavailable: %s.\n", in->uring_reason);
    printf("\n  %5s %10s %8s %9s %9s %9s  %s\n", "lanes", "MiB/s", "reads", "mean ms", "p50 ms",
           "p99 ms", "mode");
}

static void print_row(const row *r)
{
    char mode[96];
    mode_str(&r->info, mode, sizeof mode);
    printf("  %5u %10.1f %8llu %9.3f %9.3f %9.3f  %s\n", r->lanes, r->mib_s,
           (unsigned long long)r->reads, r->lat_mean_ms, r->lat_p50_ms, r->lat_p99_ms, mode);
    fflush(stdout);
}

static void print_json(const opts *o, const layout *L, const row *rows, unsigned n, unsigned peak)
{
    const sl_io_info *in = &rows[0].info;
    bool drive = in->direct && !in->direct_fell_back;
    printf("{\"file\":");
    json_str(o->model);
    printf(",\"file_bytes\":%llu,\"parts_bytes\":[", (unsigned long long)L->total);
    for (unsigned p = 0; p < L->n_parts; p++)
        printf("%s%llu", p ? "," : "", (unsigned long long)L->part_bytes[p]);
    printf("],\"slice_source\":");
    json_str(L->slice_note);
    printf(",\"real_expert_offsets\":%s,\"backend\":\"%s\",\"qd\":%u,\"seconds\":%g,"
           "\"seed\":%llu,\"range_bytes\":%llu,\"compute_load\":%u,\"fresh\":%s,"
           "\"buffered\":%s,\"mmap\":%s,\"reopen_lanes\":%s,\"scatter\":%u,\"huge_pages\":%s,",
           L->real_experts ? "true" : "false", sl_io_backend_name(o->backend),
           o->backend == SL_IO_URING ? o->qd : 1, o->seconds, (unsigned long long)o->seed,
           (unsigned long long)o->range_bytes, o->compute_load, o->fresh ? "true" : "false",
           o->buffered ? "true" : "false", o->use_mmap ? "true" : "false",
           o->reopen ? "true" : "false", o->scatter, o->small_pages ? "false" : "true");
    printf("\"direct\":%s,\"direct_fallback\":%s,\"direct_fallback_reason\":",
           in->direct ? "true" : "false", in->direct_fell_back ? "true" : "false");
    json_str(in->direct_reason);
    printf(",\"uring_fallback\":%s,\"uring_fallback_reason\":",
           in->uring_fell_back ? "true" : "false");
    json_str(in->uring_reason);
    printf(",\"alignment\":%u,\"drive_figure\":%s,\"rows\":[", in->align,
           drive ? "true" : "false");
    for (unsigned i = 0; i < n; i++) {
        const row *r = &rows[i];
        char mode[96];
        mode_str(&r->info, mode, sizeof mode);
        printf("%s{\"lanes\":%u,\"mib_s\":%.3f,\"reads\":%llu,\"requests\":%llu,\"bytes\":%llu,"
               "\"elapsed_s\":%.6f,\"lat_mean_ms\":%.4f,\"lat_p50_ms\":%.4f,\"lat_p99_ms\":%.4f,"
               "\"backend\":\"%s\",\"mode\":",
               i ? "," : "", r->lanes, r->mib_s, (unsigned long long)r->reads,
               (unsigned long long)r->requests, (unsigned long long)r->bytes, r->elapsed_s,
               r->lat_mean_ms, r->lat_p50_ms, r->lat_p99_ms, sl_io_backend_name(r->info.backend));
        json_str(mode);
        putchar('}');
    }
    printf("],\"peak\":{\"lanes\":%u,\"mib_s\":%.3f}}\n", rows[peak].lanes, rows[peak].mib_s);
}

/* Keeps the rows' rates as the drive's for `--stats`' printed bound (see
 * io/io_rate.h) when they measured what the streamer does: whole experts of
 * a GGUF model (--expert, no --range-mb), direct pread lanes into huge
 * pages, nothing else changed (--fresh, --compute-load, --scatter, --mmap,
 * --reopen-lanes, --small-pages, --buffered). Prints where, unless --json;
 * a failure to write is a warning. */
static void keep_rates(const opts *o, const layout *L, const row *rows, unsigned n)
{
    if (!L->real_experts || o->backend != SL_IO_PREAD || o->buffered || o->fresh ||
        o->compute_load || o->scatter > 1 || o->use_mmap || o->reopen || o->small_pages)
        return;
    sl_io_rate r;
    memset(&r, 0, sizeof r);
    for (unsigned i = 0; i < n && r.n < SL_IO_RATE_MAX_ROWS; i++) {
        if (!rows[i].info.direct || rows[i].info.direct_fell_back || !(rows[i].mib_s > 0))
            return; /* not the drive's figure */
        r.lanes[r.n] = rows[i].lanes;
        r.mib_s[r.n++] = rows[i].mib_s;
    }
    char path[4096];
    sl_err err;
    if (r.n == 0 || !user_cache_rate_path(o->model, path, sizeof path) ||
        sl_io_rate_device(o->model, r.device, sizeof r.device, &err))
        return;
    r.when = (long long)time(NULL);
    if (sl_io_rate_save(&r, path, &err)) {
        fprintf(stderr, "sluice iobench: warning: could not keep the drive's rate: %s\n",
                err.msg);
        return;
    }
    if (!o->json) printf("  kept as this drive's rate for --stats' bound: %s\n", path);
}

int cmd_iobench(int argc, char **argv)
{
    opts o;
    int pr = parse_args(argc, argv, &o);
    if (pr) return pr == 1 ? 0 : 2;
    layout L;
    if (build_layout(&o, &L)) {
        free_layout(&L);
        return 1;
    }
    int rc = 1;
    uint64_t maxpart = 0;
    for (unsigned p = 0; p < L.n_parts; p++)
        if (L.part_bytes[p] > maxpart) maxpart = L.part_bytes[p];
    /* Few distinct slices would measure the drive's cache, not the drive. */
    for (uint32_t f = 0; f < L.n_files && !L.real_experts; f++) {
        uint64_t region = L.sizes[f];
        if (o.range_bytes && o.range_bytes < region) region = o.range_bytes;
        if (region / maxpart < MIN_SLICES) {
            fprintf(stderr, "sluice iobench: %s%s is %llu bytes, fewer than %d reads of %llu "
                    "bytes: too small to measure a drive\n", L.paths[f],
                    o.range_bytes ? " (with --range-mb)" : "", (unsigned long long)region,
                    MIN_SLICES, (unsigned long long)maxpart);
            goto out;
        }
    }
    bench b = {.o = &o, .L = &L, .t_base = sl_now_ns()};
    if (o.trace) {
        sl_err terr;
        if (!(b.trace = sl_out_fopen_live(o.trace, &sl_out_text, &terr))) { /* no FIFO blocks */
            fprintf(stderr, "sluice iobench: %s\n", terr.msg);
            goto out;
        }
    }
    row rows[MAX_ROWS];
    memset(rows, 0, sizeof rows);
    unsigned peak = 0;
    for (unsigned i = 0; i < o.n_lanes; i++) {
        sl_io_info info;
        memset(&info, 0, sizeof info);
        if (run_row(&b, o.lanes[i], &rows[i], &info)) goto out_mem;
        if (i == 0 && !o.json) print_header(&o, &L, &info);
        if (!o.json) print_row(&rows[i]);
        if (rows[i].mib_s > rows[peak].mib_s) peak = i;
    }
    if (o.json) {
        print_json(&o, &L, rows, o.n_lanes, peak);
    } else {
        const sl_io_info *in = &rows[peak].info;
        bool drive = in->direct && !in->direct_fell_back;
        char mode[96];
        mode_str(in, mode, sizeof mode);
        printf("\n  peak: %.1f MiB/s (%.2f GB/s) at %u lanes, %s%s\n", rows[peak].mib_s,
               rows[peak].mib_s * 1048576.0 / 1e9, rows[peak].lanes, mode,
               drive ? "" : in->direct_fell_back
                   ? "  [buffered fallback: NOT the drive's figure]"
                   : "  [buffered: page cache included, not the drive's figure]");
    }
    keep_rates(&o, &L, rows, o.n_lanes);
    rc = 0;
out_mem:
    if (b.raw) munmap(b.raw, b.raw_len);
    if (b.trace && fclose(b.trace) != 0 && rc == 0) {
        fprintf(stderr, "sluice iobench: writing '%s' failed\n", o.trace);
        rc = 1;
    }
out:
    free_layout(&L);
    return rc;
}
