/* test_file.c - the platform file layer (src/util/file.c) for issue 10,
 * D6-D9: non-regular files refused without blocking, file identity through
 * links and spellings, bounded whole-file and stdin reads, checked writes,
 * the temporary file beside an output, and the guard on closed standard
 * descriptors. An alarm turns a blocking open into a failed run (the binary
 * dies without its summary line) instead of a hung suite. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/testutil.h"
#include "test.h"
#include "util/file.h"

static char g_dir[96]; /* paths in it fit the tests' 128-byte buffers */

static void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", g_dir, name);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

TEST(fifo_refused_without_blocking)
{
    char p[128];
    path_in(p, sizeof p, "fifo");
    CHECK(mkfifo(p, 0600) == 0);
    sl_file f;
    sl_err err = {0};
    alarm(10);
    CHECK(sl_file_open_read(&f, p, &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "is a FIFO, not a regular file");
    CHECK(f.fd == -1);
    /* for writing, no reader: refused rather than waiting for one */
    CHECK(sl_file_open_write(&f, p, &err) == SL_EIO);
    CHECK_STR_CONTAINS(err.msg, "FIFO with no reader");
    char *buf;
    size_t len;
    CHECK(sl_file_read_all(p, 1 << 20, &buf, &len, &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "is a FIFO");
    alarm(0);
    unlink(p);
}

TEST(devices_and_directories_refused)
{
    sl_file f;
    sl_err err = {0};
    CHECK(sl_file_open_read(&f, "/dev/zero", &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "'/dev/zero' is a character device, not a regular file");
    CHECK(sl_file_open_read(&f, g_dir, &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "is a directory");
    char *buf;
    size_t len;
    CHECK(sl_file_read_all("/dev/zero", 1 << 20, &buf, &len, &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "character device");
    CHECK(sl_file_open_read(&f, "/nonexistent/x", &err) == SL_EIO);
    CHECK_STR_CONTAINS(err.msg, "No such file");
}

TEST(identity_through_links)
{
    char a[128], b[128], sym[128], hard[128], dot[160];
    path_in(a, sizeof a, "a.txt");
    path_in(b, sizeof b, "b.txt");
    path_in(sym, sizeof sym, "sym.txt");
    path_in(hard, sizeof hard, "hard.txt");
    snprintf(dot, sizeof dot, "%s/./a.txt", g_dir);
    write_text(a, "a");
    write_text(b, "b");
    CHECK(symlink("a.txt", sym) == 0);
    CHECK(link(a, hard) == 0);
    sl_file_id ia, ib, is, ih, id, none;
    sl_err err = {0};
    CHECK(sl_file_identity(a, &ia, &err) == 0 && ia.exists && ia.regular);
    CHECK(sl_file_identity(b, &ib, &err) == 0);
    CHECK(sl_file_identity(sym, &is, &err) == 0);
    CHECK(sl_file_identity(hard, &ih, &err) == 0);
    CHECK(sl_file_identity(dot, &id, &err) == 0);
    CHECK(sl_file_id_same(&ia, &is));
    CHECK(sl_file_id_same(&ia, &ih));
    CHECK(sl_file_id_same(&ia, &id));
    CHECK(!sl_file_id_same(&ia, &ib));
    char missing[128];
    path_in(missing, sizeof missing, "missing.txt");
    CHECK(sl_file_identity(missing, &none, &err) == 0 && !none.exists);
    CHECK(!sl_file_id_same(&none, &none)); /* nothing is never the same file */
    int fd = open(a, O_RDONLY);
    sl_file_id ifd;
    sl_file_fd_identity(fd, &ifd);
    CHECK(sl_file_id_same(&ia, &ifd));
    close(fd);
    sl_file_fd_identity(fd, &ifd); /* closed now */
    CHECK(!ifd.exists);
    sl_file_id dev;
    CHECK(sl_file_identity("/dev/null", &dev, &err) == 0 && dev.exists && !dev.regular);
    CHECK(!strcmp(dev.kind, "character device"));
    unlink(sym);
    unlink(hard);
    unlink(a);
    unlink(b);
}

TEST(read_all_limit)
{
    char p[128];
    path_in(p, sizeof p, "hundred.txt");
    char text[101];
    memset(text, 'z', 100);
    text[100] = '\0';
    write_text(p, text);
    char *buf = NULL;
    size_t len = 0;
    sl_err err = {0};
    CHECK(sl_file_read_all(p, 99, &buf, &len, &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "more than 99");
    CHECK(buf == NULL);
    CHECK(sl_file_read_all(p, 100, &buf, &len, &err) == 0);
    CHECK(len == 100 && buf && buf[100] == '\0' && !memcmp(buf, text, 100));
    free(buf);
    unlink(p);
}

/* Standard input through a pipe: bounded, then a device refused. Runs in a
 * child so that the test's own stdin is untouched. */
static int child_stdin(const char *data, size_t n, uint64_t limit, size_t *got)
{
    int pfd[2];
    if (pipe(pfd) != 0) return -100;
    if (write(pfd[1], data, n) != (ssize_t)n) return -101;
    close(pfd[1]);
    int saved = dup(0);
    dup2(pfd[0], 0);
    close(pfd[0]);
    char *buf = NULL;
    size_t len = 0;
    sl_err err = {0};
    int rc = sl_file_read_all("-", limit, &buf, &len, &err);
    dup2(saved, 0);
    close(saved);
    *got = len;
    if (!rc && (len != n || memcmp(buf, data, n) || buf[n])) rc = -102;
    free(buf);
    return rc;
}

TEST(read_all_stdin)
{
    size_t got = 0;
    CHECK_EQ_INT(child_stdin("hello", 5, 5, &got), 0);
    CHECK_EQ_INT(got, 5);
    CHECK_EQ_INT(child_stdin("hello!", 6, 5, &got), SL_EINVAL);
    /* a device as standard input (not a terminal): refused */
    int saved = dup(0);
    int z = open("/dev/zero", O_RDONLY);
    dup2(z, 0);
    close(z);
    char *buf = NULL;
    size_t len;
    sl_err err = {0};
    CHECK(sl_file_read_all("-", 1 << 20, &buf, &len, &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "standard input is a character device");
    dup2(saved, 0);
    close(saved);
}

TEST(write_errors_reported)
{
    sl_file f;
    sl_err err = {0};
    CHECK(sl_file_open_write(&f, "/dev/full", &err) == 0);
    char block[4096] = {0};
    CHECK(sl_file_write_full(&f, block, sizeof block, &err) == SL_EIO);
    CHECK_STR_CONTAINS(err.msg, "'/dev/full'");
    CHECK_STR_CONTAINS(err.msg, "No space left on device");
    CHECK(sl_file_close_checked(&f, &err) == 0);
    CHECK(f.fd == -1 && f.path == NULL);
    CHECK(sl_file_open_write(&f, g_dir, &err) == SL_EIO);
    CHECK_STR_CONTAINS(err.msg, "Is a directory");
    char p[128];
    path_in(p, sizeof p, "w.bin");
    CHECK(sl_file_open_write(&f, p, &err) == 0);
    CHECK(sl_file_write_full(&f, "abc", 3, &err) == 0);
    CHECK(sl_file_sync(&f, &err) == 0);
    CHECK(sl_file_close_checked(&f, &err) == 0);
    struct stat st;
    CHECK(stat(p, &st) == 0 && st.st_size == 3);
    unlink(p);
}

TEST(temp_beside_and_rename)
{
    char final[128], sym[128], target[128];
    path_in(final, sizeof final, "out.kld");
    path_in(target, sizeof target, "target.kld");
    path_in(sym, sizeof sym, "link.kld");
    char *tmp = NULL, *dest = NULL;
    sl_err err = {0};
    /* a new output: the temporary sits in the same directory, hidden */
    CHECK(sl_file_temp_beside(final, &tmp, &dest, &err) == 0);
    CHECK(tmp && !strncmp(tmp, g_dir, strlen(g_dir)));
    CHECK(tmp && strstr(tmp, "/.out.kld.tmp-") != NULL);
    CHECK(dest && !strcmp(dest, final));
    struct stat st;
    CHECK(tmp && stat(tmp, &st) == 0 && st.st_size == 0);
    CHECK(sl_file_rename(tmp, dest, &err) == 0);
    CHECK(stat(final, &st) == 0);
    free(tmp);
    free(dest);
    /* an existing file keeps its mode; through a symlink the target is
     * replaced and the link stays */
    write_text(target, "old");
    chmod(target, 0640);
    CHECK(symlink("target.kld", sym) == 0);
    CHECK(sl_file_temp_beside(sym, &tmp, &dest, &err) == 0);
    CHECK(tmp && stat(tmp, &st) == 0 && (st.st_mode & 0777) == 0640);
    CHECK(dest && strstr(dest, "/target.kld") != NULL);
    write_text(tmp, "new");
    CHECK(sl_file_rename(tmp, dest, &err) == 0);
    struct stat ls;
    CHECK(lstat(sym, &ls) == 0 && S_ISLNK(ls.st_mode));
    char back[8] = {0};
    FILE *f = fopen(target, "r");
    if (f) {
        CHECK(fread(back, 1, sizeof back - 1, f) == 3);
        fclose(f);
    }
    CHECK(!strcmp(back, "new"));
    free(tmp);
    free(dest);
    /* a device is never renamed over */
    CHECK(sl_file_temp_beside("/dev/null", &tmp, &dest, &err) == SL_EINVAL);
    CHECK_STR_CONTAINS(err.msg, "character device");
    CHECK(tmp == NULL && dest == NULL);
    /* a failed rename names both */
    CHECK(sl_file_rename("/nonexistent/a", final, &err) == SL_EIO);
    CHECK_STR_CONTAINS(err.msg, "/nonexistent/a");
    unlink(sym);
    unlink(target);
    unlink(final);
}

/* With stdout closed, a file opened next must not get descriptor 1 (text
 * for stdout would land in it), and writes to stdout must still fail. */
TEST(closed_stdout_guarded)
{
    char p[128];
    path_in(p, sizeof p, "after.txt");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(1);
        unsigned closed = sl_file_guard_std_fds();
        sl_file f;
        sl_err err = {0};
        int code = 0;
        if (closed != 2u) code |= 1;
        if (sl_file_open_write(&f, p, &err) || f.fd == 1) code |= 2;
        errno = 0;
        if (write(1, "x", 1) != -1 || errno != EBADF) code |= 4;
        sl_file_close(&f);
        _exit(code);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    struct stat st;
    CHECK(stat(p, &st) == 0 && st.st_size == 0);
    unlink(p);
    /* nothing closed: nothing changed */
    CHECK(sl_file_guard_std_fds() == 0);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "%s/file-XXXXXX", t_tmpdir());
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(fifo_refused_without_blocking);
    RUN(devices_and_directories_refused);
    RUN(identity_through_links);
    RUN(read_all_limit);
    RUN(read_all_stdin);
    RUN(write_errors_reported);
    RUN(temp_beside_and_rename);
    RUN(closed_stdout_guarded);
    rmdir(g_dir);
    return TEST_REPORT();
}
