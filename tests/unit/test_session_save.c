/* test_session_save.c - sl_session_save / sl_session_load on generated
 * qwen3moe (attention only) and qwen35moe (gated DeltaNet + attention)
 * models, f16 and f32 caches: a session restored from a file continues
 * with logits bit-identical to the uninterrupted one (and, on qwen35moe,
 * its recurrent snapshot comes back too); truncated, corrupt, foreign,
 * other-cache-type and non-session files, and a wrong header-size field,
 * are refused with SL_EFORMAT naming what is wrong, and the session is left
 * exactly as it was; a save never replaces the model (through a symlink
 * too), a text file or a device. */
#include <dirent.h>
#include <errno.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "sluice.h"
#include "synth/synth.h"
#include "test.h"

#define N_PROMPT 20
#define N_CONT 6

static int32_t tok(int i) { return (int32_t)(5 + (i * 53) % 400); }

static int generate(const char *arch, uint64_t seed, const char *name, char *path, size_t cap)
{
    sl_synth_config c;
    sl_err err;
    if (sl_synth_config_init(&c, arch, "tiny", &err)) return -1;
    c.type = SL_SYNTH_Q8_0;
    c.seed = seed;
    t_path(path, cap, name);
    if (sl_synth_config_validate(&c, &err) || sl_synth_write(&c, path, NULL, NULL, NULL, &err)) {
        fprintf(stderr, "  mkmodel %s: %s\n", arch, err.msg);
        return -1;
    }
    return 0;
}

static sl_model *load(const char *path)
{
    sl_model_params mp = sl_model_default_params();
    mp.n_threads = 2;
    sl_model *m = NULL;
    sl_err err;
    if (sl_model_load(&m, path, &mp, &err)) fprintf(stderr, "  load: %s\n", err.msg);
    return m;
}

static sl_session *session(sl_model *m, sl_kv_type kv)
{
    sl_session_params sp = sl_session_default_params();
    sp.n_ctx = 64;
    sp.n_batch_max = 32;
    sp.type_k = sp.type_v = (int)kv;
    sl_session *s = NULL;
    sl_err err;
    if (sl_session_create(&s, m, &sp, &err)) fprintf(stderr, "  session: %s\n", err.msg);
    return s;
}

static int eval1(sl_session *s, int32_t id)
{
    sl_err err;
    int rc = sl_session_eval(s, &id, 1, &err);
    if (rc) fprintf(stderr, "  eval: %s\n", err.msg);
    return rc;
}

static bool same_bits(const float *a, const float *b, int n)
{
    return a && b && memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

static int32_t prompt[N_PROMPT];

/* The prompt evaluated in one batch, then N_CONT tokens one by one: the
 * logits after the prompt (row 0) and after each continuation token. */
static float *uninterrupted(sl_model *m, sl_kv_type kv, const char *save_to)
{
    const int V = sl_model_n_vocab(m);
    float *out = malloc((size_t)V * (N_CONT + 1) * sizeof *out);
    sl_session *s = session(m, kv);
    sl_err err;
    CHECK(s && out);
    if (!s || !out) return NULL;
    CHECK(sl_session_eval(s, prompt, N_PROMPT, &err) == 0);
    memcpy(out, sl_session_logits(s), (size_t)V * sizeof *out);
    if (save_to) CHECK_MSG(sl_session_save(s, save_to, prompt, N_PROMPT, &err) == 0, "%s", err.msg);
    for (int i = 0; i < N_CONT; i++) {
        CHECK(eval1(s, tok(100 + i)) == 0);
        memcpy(out + (size_t)V * (i + 1), sl_session_logits(s), (size_t)V * sizeof *out);
    }
    sl_session_free(s);
    return out;
}

static bool no_temp_files(void)
{
    DIR *d = opendir(t_tmpdir());
    if (!d) return false;
    bool ok = true;
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".tmp-")) ok = false;
    closedir(d);
    return ok;
}

static void round_trip(const char *model, sl_kv_type kv, bool recurrent)
{
    sl_model *m = load(model);
    CHECK(m);
    if (!m) return;
    const int V = sl_model_n_vocab(m);
    char file[512];
    t_path(file, sizeof file, kv == SL_KV_F32 ? "state-f32.bin" : "state-f16.bin");
    float *ref = uninterrupted(m, kv, file);
    CHECK(no_temp_files());

    sl_session *s = session(m, kv);
    sl_err err;
    CHECK(s);
    if (!s || !ref) goto done;
    /* a peek reads the count only */
    CHECK_EQ_INT(sl_session_load(s, file, NULL, 0, &err), N_PROMPT);
    CHECK_EQ_INT(sl_session_n_past(s), 0);
    int32_t got[64];
    CHECK_EQ_INT(sl_session_load(s, file, got, 64, &err), N_PROMPT);
    CHECK(memcmp(got, prompt, sizeof prompt) == 0);
    CHECK_EQ_INT(sl_session_n_past(s), N_PROMPT);
    CHECK(same_bits(sl_session_logits(s), ref, V));
    for (int i = 0; i < N_CONT; i++) {
        CHECK(eval1(s, tok(100 + i)) == 0);
        CHECK_MSG(same_bits(sl_session_logits(s), ref + (size_t)V * (i + 1), V),
                  "continuation token %d differs after restore", i);
    }
    if (recurrent) {
        /* the snapshot (end of the prompt) came back with the state */
        CHECK_EQ_INT(sl_session_truncate(s, N_PROMPT), SL_OK);
        CHECK(eval1(s, tok(100)) == 0);
        CHECK(same_bits(sl_session_logits(s), ref + (size_t)V, V));
        /* any other prefix cannot be saved */
        CHECK_EQ_INT(sl_session_save(s, file, prompt, 5, &err), SL_EINVAL);
    } else {
        /* an attention-only state saves any prefix */
        char part[512];
        t_path(part, sizeof part, "state-part.bin");
        CHECK_MSG(sl_session_save(s, part, prompt, 12, &err) == 0, "%s", err.msg);
        sl_session *s2 = session(m, kv);
        CHECK(s2 && sl_session_load(s2, part, got, 64, &err) == 12);
        CHECK(s2 && sl_session_logits(s2) == NULL); /* not the last position: no logits */
        CHECK(s2 && sl_session_eval(s2, prompt + 12, N_PROMPT - 12, &err) == 0);
        CHECK(s2 && same_bits(sl_session_logits(s2), ref, V));
        sl_session_free(s2);
    }
done:
    sl_session_free(s);
    free(ref);
    sl_model_free(m);
}

static char model_a[512], model_b[512], model_q35[512];

TEST(qwen3moe_f16_restore_continues_bit_identical) { round_trip(model_a, SL_KV_F16, false); }
TEST(qwen3moe_f32_restore_continues_bit_identical) { round_trip(model_a, SL_KV_F32, false); }
TEST(qwen35moe_f16_restore_continues_bit_identical) { round_trip(model_q35, SL_KV_F16, true); }
TEST(qwen35moe_f32_restore_continues_bit_identical) { round_trip(model_q35, SL_KV_F32, true); }

static int write_bytes(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(b, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

static unsigned char *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len);
    if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return b;
}

typedef struct bad_case {
    const char *what;
    const char *path;
    const char *says; /* a word the refusal must contain */
} bad_case;

/* Every bad file is refused; the session (holding 7 other tokens) still
 * continues exactly as one that never saw them. */
static void refusals(const char *model, const char *foreign_model)
{
    sl_model *m = load(model), *fm = load(foreign_model);
    CHECK(m && fm);
    if (!m || !fm) goto out;
    const int V = sl_model_n_vocab(m);
    sl_err err;
    char good[512], f32[512], foreign[512], bad[512];
    t_path(good, sizeof good, "refuse-good.bin");
    t_path(f32, sizeof f32, "refuse-f32.bin");
    t_path(foreign, sizeof foreign, "refuse-foreign.bin");
    t_path(bad, sizeof bad, "refuse-bad.bin");
    free(uninterrupted(m, SL_KV_F16, good));
    free(uninterrupted(m, SL_KV_F32, f32));
    free(uninterrupted(fm, SL_KV_F16, foreign));

    /* the control: 7 tokens, then one more */
    int32_t other[7];
    for (int i = 0; i < 7; i++) other[i] = tok(300 + i);
    sl_session *c = session(m, SL_KV_F16), *s = session(m, SL_KV_F16);
    CHECK(c && s);
    if (!c || !s) goto free_s;
    CHECK(sl_session_eval(c, other, 7, &err) == 0);
    CHECK(eval1(c, tok(200)) == 0);
    CHECK(sl_session_eval(s, other, 7, &err) == 0);
    float *before = malloc((size_t)V * sizeof *before);
    memcpy(before, sl_session_logits(s), (size_t)V * sizeof *before);

    size_t n;
    unsigned char *b = read_bytes(good, &n);
    CHECK(b && n > 200);
    if (!b) goto free_b;
    int32_t got[64];
    bad_case cases[8];
    int nc = 0;
    cases[nc++] = (bad_case){"foreign", foreign, "another model"};
    cases[nc++] = (bad_case){"f32 cache", f32, "f32"};
    const char *muts[] = {"truncated", "body byte", "header byte", "magic", "empty",
                          "header size"};
    for (int k = 0; k < 6; k++) {
        char p[512];
        CHECK(snprintf(p, sizeof p, "%s.%d", bad, k) < (int)sizeof p);
        unsigned char *x = malloc(n);
        memcpy(x, b, n);
        size_t len = n;
        const char *says = "refused";
        switch (k) {
        case 0: len = n - 37; says = "truncated"; break;
        case 1: x[n / 2] ^= 0x10; says = "checksum"; break;
        case 2: x[44] ^= 1; says = "checksum"; break; /* the token count */
        case 3: memcpy(x, "GGUF", 4); says = "not a sluice session"; break;
        case 4: len = 0; says = "truncated"; break;
        case 5: x[12] = 100; says = "header size field is 100, a version 1 header is 96"; break;
        }
        CHECK(write_bytes(p, x, len) == 0);
        free(x);
        char *dup = strdup(p);
        cases[nc++] = (bad_case){muts[k], dup, says};
    }
    for (int i = 0; i < nc; i++) {
        err.msg[0] = 0;
        int rc = sl_session_load(s, cases[i].path, got, 64, &err);
        CHECK_MSG(rc == SL_EFORMAT, "%s: rc %d (%s)", cases[i].what, rc, err.msg);
        CHECK_MSG(strstr(err.msg, "refused") && strstr(err.msg, cases[i].says), "%s: '%s'",
                  cases[i].what, err.msg);
        CHECK_EQ_INT(sl_session_n_past(s), 7);
        CHECK(same_bits(sl_session_logits(s), before, V));
    }
    for (int i = 2; i < nc; i++) free((char *)cases[i].path);
    CHECK(eval1(s, tok(200)) == 0);
    CHECK(same_bits(sl_session_logits(s), sl_session_logits(c), V));
free_b:
    free(b);
    free(before);
free_s:
    sl_session_free(s);
    sl_session_free(c);
out:
    sl_model_free(m);
    sl_model_free(fm);
}

TEST(bad_files_are_refused_and_the_session_is_unchanged) { refusals(model_a, model_b); }

/* A session file replaces only a session file (issue 29, N1): never the
 * model (open as an input, also through a symlink), a text file or a
 * device; their bytes stay as they were, and no temporary file is left. */
TEST(save_never_replaces_other_files)
{
    sl_model *m = load(model_a);
    sl_session *s = m ? session(m, SL_KV_F16) : NULL;
    CHECK(m && s);
    if (!s) goto out;
    sl_err err;
    CHECK(sl_session_eval(s, prompt, 8, &err) == 0);
    char copy[512], notes[512], link_path[512], ok_path[512];
    t_path(copy, sizeof copy, "model-copy.gguf");
    t_path(notes, sizeof notes, "notes.txt");
    t_path(link_path, sizeof link_path, "link.state");
    t_path(ok_path, sizeof ok_path, "fine.state");
    size_t n_model = 0;
    unsigned char *model_bytes = read_bytes(model_a, &n_model);
    CHECK(model_bytes && write_bytes(copy, model_bytes, n_model) == 0);
    CHECK(write_bytes(notes, (const unsigned char *)"my notes\n", 9) == 0);
    unlink(link_path);
    /* no symbolic links without a privilege on Windows: that victim is skipped */
    const bool linked = symlink(model_a, link_path) == 0;
    CHECK(linked || errno == ENOSYS);
    const struct {
        const char *path, *says;
    } victims[] = {
        {model_a, "an input sluice has open"},
        {copy, "is a GGUF model, not a session file"},
        {notes, "is a text file, not a session file"},
        {"/dev/null", "character device"},
        {link_path, "the same file as"},
    };
    const size_t n_victims = sizeof victims / sizeof victims[0] - (linked ? 0 : 1);
    for (size_t i = 0; i < n_victims; i++) {
        err.msg[0] = 0;
        CHECK_EQ_INT(sl_session_save_check(victims[i].path, &err), SL_EINVAL);
        err.msg[0] = 0;
        CHECK_EQ_INT(sl_session_save(s, victims[i].path, prompt, 8, &err), SL_EINVAL);
        CHECK_MSG(strstr(err.msg, victims[i].says), "%s: '%s'", victims[i].path, err.msg);
    }
    size_t n;
    unsigned char *b = read_bytes(model_a, &n);
    CHECK(b && n == n_model && !memcmp(b, model_bytes, n));
    free(b);
    b = read_bytes(copy, &n);
    CHECK(b && n == n_model && !memcmp(b, model_bytes, n));
    free(b);
    b = read_bytes(notes, &n);
    CHECK(b && n == 9 && !memcmp(b, "my notes\n", 9));
    free(b);
    CHECK(no_temp_files());
    /* a session file, and an empty file, are replaced */
    CHECK_EQ_INT(sl_session_save(s, ok_path, prompt, 8, &err), SL_OK);
    CHECK_EQ_INT(sl_session_save(s, ok_path, prompt, 4, &err), SL_OK);
    CHECK(write_bytes(notes, (const unsigned char *)"", 0) == 0);
    CHECK_EQ_INT(sl_session_save(s, notes, prompt, 8, &err), SL_OK);
    free(model_bytes);
    unlink(link_path);
    unlink(copy);
out:
    sl_session_free(s);
    sl_model_free(m);
}
TEST(qwen35moe_bad_files_are_refused) { refusals(model_q35, model_a); }

int main(void)
{
    for (int i = 0; i < N_PROMPT; i++) prompt[i] = tok(i);
    if (generate("qwen3moe", 3, "qwen3moe-a.gguf", model_a, sizeof model_a) ||
        generate("qwen3moe", 4, "qwen3moe-b.gguf", model_b, sizeof model_b) ||
        generate("qwen35moe", 8, "qwen35moe.gguf", model_q35, sizeof model_q35)) {
        printf("  could not generate the models\n");
        return 1;
    }
    RUN(qwen3moe_f16_restore_continues_bit_identical);
    RUN(qwen3moe_f32_restore_continues_bit_identical);
    RUN(qwen35moe_f16_restore_continues_bit_identical);
    RUN(qwen35moe_f32_restore_continues_bit_identical);
    RUN(bad_files_are_refused_and_the_session_is_unchanged);
    RUN(qwen35moe_bad_files_are_refused);
    RUN(save_never_replaces_other_files);
    return TEST_REPORT();
}
