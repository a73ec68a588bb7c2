/* open_inputs.h - the files this process has open as inputs, by identity
 * (device and inode, or volume and file index), so that no output replaces
 * one (util/out_file.c asks through sl_file_open_input). The platform files
 * (file.c, file_win.c) list a file at sl_file_open_read and drop it at
 * sl_file_close. Thread-safe. */
#ifndef SL_UTIL_OPEN_INPUTS_H
#define SL_UTIL_OPEN_INPUTS_H

#include <stdbool.h>
#include <stdint.h>

/* Lists (dev, ino), opened by path (a count when it is listed already);
 * false when out of memory: the open then fails, since an input that could
 * not be listed could be overwritten. */
bool sl_open_inputs_add(uint64_t dev, uint64_t ino, const char *path);

/* Takes one count of (dev, ino) off the list. */
void sl_open_inputs_drop(uint64_t dev, uint64_t ino);

#endif
