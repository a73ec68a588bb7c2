/* test_out_file.c - the one writer (src/util/out_file.c, issue 29 N1): a
 * file is replaced only by one of its own kind (the magic; text outputs
 * only over text), never when it is an open input (also through a symlink
 * or a hard link), never through a device or directory; the bytes go
 * beside the target and take its name only on commit; a refused or
 * aborted output leaves the target's bytes exactly as they were. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/testutil.h"
#include "test.h"
#include "util/file.h"
#include "util/out_file.h"

static char g_dir[96]; /* paths in it fit the tests' 128-byte buffers */

static const sl_out_kind state_kind = {"a state file", "STATE001", 8};

static void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", g_dir, name);
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(p, 1, n, f);
    fclose(f);
}

/* Whether path holds exactly the n bytes at p. */
static bool holds(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char buf[256];
    size_t got = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return got == n && !memcmp(buf, p, n);
}

/* Number of entries in g_dir whose name contains ".tmp-". */
static int temps_left(void)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -c '\\.tmp-'", g_dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p) {
        if (fscanf(p, "%d", &n) != 1) n = -1;
        pclose(p);
    }
    return n;
}

static const char gguf_bytes[] = "GGUF\003\0\0\0 a model's bytes";
static const char state_old[] = "STATE001 old";
static const char state_new[] = "STATE001 new";

TEST(new_file_and_own_kind_replaced)
{
    char p[128];
    sl_err err = {0};
    path_in(p, sizeof p, "s.state");
    CHECK_EQ_INT(sl_out_write_all(p, &state_kind, state_old, sizeof state_old, &err), SL_OK);
    CHECK(holds(p, state_old, sizeof state_old));
    CHECK_EQ_INT(sl_out_write_all(p, &state_kind, state_new, sizeof state_new, &err), SL_OK);
    CHECK(holds(p, state_new, sizeof state_new));
    /* an empty file has nothing to lose */
    write_bytes(p, "", 0);
    CHECK_EQ_INT(sl_out_write_all(p, &state_kind, state_old, sizeof state_old, &err), SL_OK);
    CHECK(holds(p, state_old, sizeof state_old));
    CHECK_EQ_INT(temps_left(), 0);
    unlink(p);
}

TEST(other_kinds_refused_and_left_alone)
{
    char model[128], notes[128];
    sl_err err = {0};
    path_in(model, sizeof model, "m.gguf");
    path_in(notes, sizeof notes, "notes.txt");
    write_bytes(model, gguf_bytes, sizeof gguf_bytes);
    write_bytes(notes, "my notes\n", 9);
    CHECK_EQ_INT(sl_out_write_all(model, &state_kind, state_new, sizeof state_new, &err),
                 SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "is a GGUF model, not a state file");
    CHECK(holds(model, gguf_bytes, sizeof gguf_bytes));
    CHECK_EQ_INT(sl_out_write_all(notes, &state_kind, state_new, sizeof state_new, &err),
                 SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "is a text file, not a state file");
    CHECK(holds(notes, "my notes\n", 9));
    /* a text output replaces text, never a binary file */
    CHECK_EQ_INT(sl_out_write_all(notes, &sl_out_text, "{}\n", 3, &err), SL_OK);
    CHECK(holds(notes, "{}\n", 3));
    CHECK_EQ_INT(sl_out_write_all(model, &sl_out_text, "{}\n", 3, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "is a GGUF model, not text");
    CHECK(holds(model, gguf_bytes, sizeof gguf_bytes));
    /* a GGUF writer's kind replaces a GGUF */
    static const sl_out_kind gguf_kind = {"a GGUF model", "GGUF", 4};
    CHECK_EQ_INT(sl_out_write_all(notes, &gguf_kind, gguf_bytes, sizeof gguf_bytes, &err),
                 SL_EINVAL);
    CHECK_EQ_INT(sl_out_write_all(model, &gguf_kind, "GGUF new", 8, &err), SL_OK);
    CHECK(holds(model, "GGUF new", 8));
    CHECK_EQ_INT(temps_left(), 0);
    unlink(model);
    unlink(notes);
}

TEST(open_input_refused_through_links)
{
    char model[128], sym[128], hard[128];
    sl_err err = {0};
    path_in(model, sizeof model, "in.state");
    path_in(sym, sizeof sym, "sym.state");
    path_in(hard, sizeof hard, "hard.state");
    write_bytes(model, state_old, sizeof state_old);
    CHECK(symlink("in.state", sym) == 0);
    CHECK(link(model, hard) == 0);
    sl_file in;
    CHECK_EQ_INT(sl_file_open_read(&in, model, &err), SL_OK);
    /* of its own kind, but open as an input: refused under every name */
    CHECK_EQ_INT(sl_out_check(model, &state_kind, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "an input sluice has open");
    CHECK_EQ_INT(sl_out_write_all(sym, &state_kind, state_new, sizeof state_new, &err),
                 SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "is the same file as");
    CHECK_EQ_INT(sl_out_write_all(hard, &sl_out_text, "x", 1, &err), SL_EINVAL);
    CHECK(holds(model, state_old, sizeof state_old));
    /* opened twice, closed once: still an input */
    sl_file in2;
    CHECK_EQ_INT(sl_file_open_read(&in2, sym, &err), SL_OK);
    sl_file_close(&in2);
    CHECK_EQ_INT(sl_out_check(model, &state_kind, &err), SL_EINVAL);
    sl_file_close(&in);
    /* closed: an ordinary file of the kind again, replaced through the
     * symlink (its target is written, the link stays a link) */
    CHECK_EQ_INT(sl_out_write_all(sym, &state_kind, state_new, sizeof state_new, &err), SL_OK);
    CHECK(holds(model, state_new, sizeof state_new));
    struct stat st;
    CHECK(lstat(sym, &st) == 0 && S_ISLNK(st.st_mode));
    unlink(sym);
    unlink(hard);
    unlink(model);
}

TEST(devices_and_directories)
{
    sl_err err = {0};
    CHECK_EQ_INT(sl_out_check("/dev/null", &state_kind, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "character device, not a regular file");
    CHECK_EQ_INT(sl_out_check(g_dir, &sl_out_text, &err), SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "is a directory");
    /* a text output to a device writes it in place: nothing is replaced */
    CHECK_EQ_INT(sl_out_write_all("/dev/null", &sl_out_text, "x\n", 2, &err), SL_OK);
    struct stat st;
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
}

TEST(abort_and_failed_commit_leave_target)
{
    char p[128];
    sl_err err = {0};
    path_in(p, sizeof p, "keep.state");
    write_bytes(p, state_old, sizeof state_old);
    sl_out_file o;
    CHECK_EQ_INT(sl_out_open(&o, p, &state_kind, &err), SL_OK);
    CHECK_EQ_INT(sl_out_write(&o, state_new, sizeof state_new, &err), SL_OK);
    CHECK_EQ_INT(temps_left(), 1);
    CHECK(holds(p, state_old, sizeof state_old)); /* not before the commit */
    sl_out_abort(&o);
    CHECK(holds(p, state_old, sizeof state_old));
    CHECK_EQ_INT(temps_left(), 0);
    sl_out_abort(&o); /* twice: harmless */
    /* the commit renames */
    CHECK_EQ_INT(sl_out_open(&o, p, &state_kind, &err), SL_OK);
    CHECK_EQ_INT(sl_out_write(&o, state_new, sizeof state_new, &err), SL_OK);
    CHECK_EQ_INT(sl_out_commit(&o, &err), SL_OK);
    CHECK(holds(p, state_new, sizeof state_new));
    CHECK_EQ_INT(temps_left(), 0);
    /* a live output writes the file itself, under the same rules */
    char t[128];
    path_in(t, sizeof t, "log.csv");
    CHECK_EQ_INT(sl_out_open_live(&o, t, &sl_out_text, &err), SL_OK);
    CHECK_EQ_INT(sl_out_write(&o, "a,b\n", 4, &err), SL_OK);
    CHECK(holds(t, "a,b\n", 4));
    CHECK_EQ_INT(sl_out_commit(&o, &err), SL_OK);
    write_bytes(p, gguf_bytes, sizeof gguf_bytes);
    CHECK_EQ_INT(sl_out_open_live(&o, p, &sl_out_text, &err), SL_EINVAL);
    CHECK(holds(p, gguf_bytes, sizeof gguf_bytes));
    unlink(t);
    unlink(p);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "%s/out-XXXXXX", t_tmpdir());
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(new_file_and_own_kind_replaced);
    RUN(other_kinds_refused_and_left_alone);
    RUN(open_input_refused_through_links);
    RUN(devices_and_directories);
    RUN(abort_and_failed_commit_leave_target);
    rmdir(g_dir);
    return TEST_REPORT();
}
