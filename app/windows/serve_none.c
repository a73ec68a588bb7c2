/* serve_none.c - `sluice serve` in the Windows build, which leaves the server
 * out for now (its HTTP layer needs libmicrohttpd for Windows, and its
 * connection deadline and signal thread POSIX sockets and signals;
 * docs/ARCHITECTURE.md, "Windows"). The command says so and fails. */
#include <stdio.h>

#include "commands.h"

int cmd_serve(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "sluice serve: not in this build yet (the Windows exe has no HTTP server; "
            "run, chat, bench and the other commands work)\n");
    return 1;
}
