/* fuzz_session.c - libFuzzer target on the loading of session files: the
 * CLI's --prompt-cache files, the server's --prompt-cache entries and its
 * slot saves (all three are sl_session_save files read back by
 * sl_session_load).
 *
 * Three tiny generated models are loaded once: qwen3moe (attention rows),
 * qwen35moe (gated DeltaNet: sequence state and its snapshot) and gemma4
 * (sliding-window layers kept in rings, so files that save a ring's last
 * positions only). For each, valid files are made once: the whole state
 * with its logits, and a shorter prefix (the snapshot's position on the
 * recurrent model).
 *
 * An input is either a whole file (it begins with the magic "SLSTATE1"),
 * loaded into each model's session, or a recipe applied to one of the
 * valid files: byte 0 picks the model and the file, byte 1 holds flags
 * (bit 0: re-seal both checksums after the edits, so the checks behind
 * them are reached; bit 1: cut the file at an offset; bit 2: append
 * bytes), and the rest are edits of 4 bytes each: a kind (set a byte, xor
 * a byte, set a little-endian u32 to a small value or to its value -1 /
 * +1), a 16-bit offset (modulo the file's length) and a value.
 *
 * The oracle, besides the sanitizers: a refused file leaves the session as
 * it was (n_past and the logits, bit for bit); an accepted one gives a
 * session that continues (one token evaluated: success, or a non-finite
 * refusal of values the file carried), and saving it again and loading
 * that file back gives the same tokens. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sluice.h"
#include "engine/session.h"
#include "synth/synth.h"

#define FUZZ_CHECK(c)                                                                     \
    do {                                                                                  \
        if (!(c)) {                                                                       \
            fprintf(stderr, "fuzz_session: check failed at line %d: %s\n", __LINE__, #c); \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

#define N_MODELS 3
#define N_CTX 32
#define N_TOK 14
#define HEADER 96
#define LAYER_REC 32

typedef struct fmodel {
    sl_model *m;
    sl_session *s;
    uint8_t *file[2]; /* valid saves: all tokens with logits, a prefix */
    size_t len[2];
    int32_t tokens[N_TOK];
} fmodel;

static fmodel g_models[N_MODELS];
static unsigned long g_tried, g_loaded; /* files, and files accepted */

static void report(void)
{
    fprintf(stderr, "fuzz_session: %lu of %lu files loaded\n", g_loaded, g_tried);
}
static char g_dir[64], g_in[128], g_out[128];

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void write_file(const char *path, const uint8_t *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f);
    FUZZ_CHECK(fwrite(b, 1, n, f) == n);
    FUZZ_CHECK(fclose(f) == 0);
}

/* The session of model i back at its reference state: the first 8 tokens. */
static void reset(fmodel *fm)
{
    sl_err err;
    sl_session_truncate(fm->s, 0);
    FUZZ_CHECK(sl_session_eval(fm->s, fm->tokens, 8, &err) == SL_OK);
}

static void setup_model(int i, const char *arch)
{
    fmodel *fm = &g_models[i];
    char path[160];
    snprintf(path, sizeof path, "%s/%s.gguf", g_dir, arch);
    sl_synth_config c;
    sl_err err;
    FUZZ_CHECK(sl_synth_config_init(&c, arch, "tiny", &err) == SL_OK);
    c.type = SL_SYNTH_Q8_0;
    c.seed = 7;
    c.threads = 1;
    FUZZ_CHECK(sl_synth_config_validate(&c, &err) == SL_OK);
    FUZZ_CHECK(sl_synth_write(&c, path, NULL, NULL, NULL, &err) == SL_OK);
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = 1;
    FUZZ_CHECK(sl_model_load(&fm->m, path, &mp, &err) == SL_OK);
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = N_CTX;
    sp.n_batch_max = 16;
    FUZZ_CHECK(sl_session_create(&fm->s, fm->m, &sp, &err) == SL_OK);
    for (int t = 0; t < N_TOK; t++) fm->tokens[t] = 3 + (t * 37) % 200;
    /* 10 tokens in one batch (the snapshot at 10), then 4 one by one */
    FUZZ_CHECK(sl_session_eval(fm->s, fm->tokens, 10, &err) == SL_OK);
    for (int t = 10; t < N_TOK; t++)
        FUZZ_CHECK(sl_session_eval(fm->s, fm->tokens + t, 1, &err) == SL_OK);
    const int cuts[2] = {N_TOK, 10};
    for (int k = 0; k < 2; k++) {
        FUZZ_CHECK(sl_session_save(fm->s, g_out, fm->tokens, cuts[k], &err) == SL_OK);
        fm->file[k] = read_file(g_out, &fm->len[k]);
        FUZZ_CHECK(fm->file[k] && fm->len[k] > HEADER);
    }
    reset(fm);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(g_dir, sizeof g_dir, "%s/sluice-fuzz-session-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    FUZZ_CHECK(mkdtemp(g_dir));
    snprintf(g_in, sizeof g_in, "%s/in.state", g_dir);
    snprintf(g_out, sizeof g_out, "%s/out.state", g_dir);
    setup_model(0, "qwen3moe");
    setup_model(1, "qwen35moe");
    setup_model(2, "gemma4");
    atexit(report);
    return 0;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

/* Adds the chunk [off, off + n) to the body hash if it lies in the file. */
static bool chunk(const uint8_t *b, size_t len, uint64_t off, uint64_t n, uint64_t *h)
{
    if (off > len || n > len - off) return false;
    *h = sl_session_file_hash(*h, b + off, (size_t)n);
    return true;
}

/* Recomputes both checksums of the file in b, its body read through the
 * file's own table (as the format lays it out); leaves b alone when the
 * table does not fit the file. */
static void reseal(uint8_t *b, size_t len)
{
    if (len < HEADER) return;
    const uint32_t n_layer = get32(b + 32), n_vocab = get32(b + 36), n = get32(b + 44);
    const int32_t snap = (int32_t)get32(b + 48);
    const bool logits = get32(b + 52) == 1;
    const uint64_t seq_total = get64(b + 72);
    if (n_layer > 4096) return;
    uint64_t h = 0, off = HEADER;
    if (!chunk(b, len, off, (uint64_t)n * 4, &h)) return;
    off += (uint64_t)n * 4;
    const uint64_t table = off;
    for (uint32_t il = 0; il < n_layer; il++, off += LAYER_REC)
        if (!chunk(b, len, off, LAYER_REC, &h)) return;
    for (uint32_t il = 0; il < n_layer; il++) {
        const uint8_t *rec = b + table + (uint64_t)il * LAYER_REC;
        const uint32_t lo = get32(rec + 4);
        for (int r = 0; r < 2; r++) {
            const uint64_t rb = get64(rec + 8 + 8 * r);
            if (!rb) continue;
            if (lo > n || rb > len || (n - lo) > len / rb) return;
            if (!chunk(b, len, off, rb * (n - lo), &h)) return;
            off += rb * (n - lo);
        }
        const uint64_t seq = get64(rec + 24);
        if (seq) {
            if (!chunk(b, len, off, seq, &h)) return;
            off += seq;
        }
    }
    if (snap >= 0) {
        if (!chunk(b, len, off, seq_total, &h)) return;
        off += seq_total;
    }
    if (logits && !chunk(b, len, off, (uint64_t)n_vocab * 4, &h)) return;
    put64(b + 64, h);
    put64(b + 88, sl_session_file_hash(0, b, 88));
}

/* Loads the file at g_in into model fm's session and checks the contract. */
static void try_load(fmodel *fm)
{
    sl_session *s = fm->s;
    const int V = sl_model_n_vocab(fm->m);
    const int before = sl_session_n_past(s);
    float *logits = malloc((size_t)V * sizeof *logits);
    FUZZ_CHECK(logits);
    memcpy(logits, sl_session_logits(s), (size_t)V * sizeof *logits);
    sl_err err;
    int32_t got[N_CTX];
    int k = sl_session_load(s, g_in, NULL, 0, &err); /* a peek */
    FUZZ_CHECK(sl_session_n_past(s) == before); /* a peek restores nothing */
    if (k >= 0) k = sl_session_load(s, g_in, got, N_CTX, &err);
    g_tried++;
    if (k < 0) {
        FUZZ_CHECK(err.msg[0] != '\0');
        FUZZ_CHECK(sl_session_n_past(s) == before);
        FUZZ_CHECK(memcmp(sl_session_logits(s), logits, (size_t)V * sizeof *logits) == 0);
        free(logits);
        return;
    }
    free(logits);
    g_loaded++;
    FUZZ_CHECK(k > 0 && k <= N_CTX && sl_session_n_past(s) == k);
    for (int i = 0; i < k; i++) FUZZ_CHECK(got[i] >= 0 && got[i] < V);
    /* saved again and read back: the same tokens */
    if (sl_session_save(s, g_out, got, k, &err) == SL_OK) {
        int32_t again[N_CTX];
        FUZZ_CHECK(sl_session_load(s, g_out, again, N_CTX, &err) == k);
        FUZZ_CHECK(memcmp(again, got, (size_t)k * sizeof *got) == 0);
    }
    /* it continues: one more token, when there is room (values the file
     * carried may be refused as non-finite, never crash) */
    if (k < N_CTX) {
        const int32_t id = 5;
        const int rc = sl_session_eval(s, &id, 1, &err);
        FUZZ_CHECK(rc == SL_OK || rc == SL_EFORMAT);
    }
    reset(fm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size >= 8 && !memcmp(data, "SLSTATE1", 8)) {
        write_file(g_in, data, size);
        for (int i = 0; i < N_MODELS; i++) try_load(&g_models[i]);
        return 0;
    }
    if (size < 2) return 0;
    fmodel *fm = &g_models[data[0] % N_MODELS];
    const int which = (data[0] / N_MODELS) % 2;
    const uint8_t flags = data[1];
    size_t len = fm->len[which];
    const size_t cap = len + 256;
    uint8_t *b = malloc(cap);
    FUZZ_CHECK(b);
    memcpy(b, fm->file[which], len);
    size_t i = 2;
    for (; i + 4 <= size; i += 4) {
        const uint8_t kind = data[i], v = data[i + 3];
        const size_t off = ((size_t)data[i + 1] | (size_t)data[i + 2] << 8) % len;
        switch (kind % 5) {
        case 0: b[off] = v; break;
        case 1: b[off] ^= v ? v : 1; break;
        case 2: if (off + 4 <= len) put32(b + off, v); break;
        case 3: if (off + 4 <= len) put32(b + off, get32(b + off) - 1); break;
        case 4: if (off + 4 <= len) put32(b + off, get32(b + off) + 1 + v); break;
        }
    }
    if (flags & 1) reseal(b, len);
    if ((flags & 2) && i < size) len = (len * data[size - 1]) / 256;
    if (flags & 4) {
        memset(b + len, flags, 256);
        len += 1 + flags % 255;
    }
    write_file(g_in, b, len);
    free(b);
    try_load(fm);
    return 0;
}
