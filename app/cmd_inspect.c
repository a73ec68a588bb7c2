/* cmd_inspect.c - placeholder until the command lands (being written now). */
#include <stdio.h>
#include "commands.h"

int cmd_inspect(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "sluice inspect: not built yet\n");
    return 1;
}
