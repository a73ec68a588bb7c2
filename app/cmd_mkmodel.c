/* cmd_mkmodel.c - placeholder until the command lands (being written now). */
#include <stdio.h>
#include "commands.h"

int cmd_mkmodel(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "sluice mkmodel: not built yet\n");
    return 1;
}
