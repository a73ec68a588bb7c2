/* console.c - POSIX implementation of console.h: arguments and terminals
 * already speak UTF-8 bytes. */
#include "util/console.h"

void sl_console_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
}
