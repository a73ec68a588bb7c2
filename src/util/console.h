/* console.h - the process's text conventions at start (platform wrapper:
 * nothing to do on POSIX, console.c; Windows, console_win.c, switches the
 * console to UTF-8, the standard streams to binary so that "\n" stays one
 * byte, and rebuilds argv as UTF-8 from the UTF-16 command line). */
#ifndef SL_UTIL_CONSOLE_H
#define SL_UTIL_CONSOLE_H

/* Call first in main. May replace *argv with a new UTF-8 vector that lives
 * until the process ends; leaves both unchanged where nothing is needed or
 * the conversion fails. */
void sl_console_init(int *argc, char ***argv);

#endif
