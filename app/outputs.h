/* outputs.h - the files a command writes: refusing an output that is one of
 * the command's inputs (before anything is opened for writing), writing a
 * small output file with every write and the close checked, and checking
 * standard output when a command ends. Messages go to stderr as
 * "sluice CMD: ...". */
#ifndef SL_APP_OUTPUTS_H
#define SL_APP_OUTPUTS_H

#include <stdbool.h>
#include <stddef.h>

/* A file a command names, and what it is to the user ("the model (-m)",
 * "--stats-json"). A NULL path is skipped. */
typedef struct file_role {
    const char *what;
    const char *path;
} file_role;

/* The limit on a text read whole (-f prompt or text): 1 GiB. */
#define APP_TEXT_LIMIT ((unsigned long long)1 << 30)

/* Refuses an output that is the same file (device and inode: also through
 * a symlink, a hard link or another spelling of the path) as an input or as
 * another output, and a standard output that is one of the inputs. An input
 * path "-" means standard input. Returns false after printing which two
 * files clash. */
bool outputs_check(const char *cmd, const file_role *in, size_t n_in, const file_role *out,
                   size_t n_out);

/* Writes len bytes of text to path through the writer (util/out_file.h:
 * never over a binary file or an open input; beside, synced, renamed),
 * checking every write. Returns false after printing the file and the
 * reason. */
bool outputs_write_file(const char *cmd, const char *what, const char *path, const char *data,
                        size_t len);

/* Reads a whole text input (-f FILE, or "-" for standard input) of at most
 * APP_TEXT_LIMIT bytes from a regular file (devices, FIFOs and directories
 * are refused). Returns NULL after printing the reason. */
char *outputs_read_text(const char *cmd, const char *path, size_t *len);

/* At the end of a command: flushes standard output, checks its error flag
 * and closes it. Returns false on a failure (a full disk, a closed
 * descriptor), after printing the OS reason if report is true. */
bool outputs_finish_stdout(const char *cmd, bool report);

/* Whether standard output has failed so far (its error flag after a flush);
 * commands that write as they go check it to stop early. */
bool outputs_stdout_failed(void);

#endif
