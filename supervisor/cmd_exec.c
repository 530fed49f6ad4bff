/* supervisor/cmd_exec.c: placeholder until the exec module lands. */
#include "supervisor/commands.h"

#include <stdio.h>

int cmd_exec(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "corral: 'exec' is not available in this build yet\n");
    return CORRAL_EXIT_INTERNAL;
}
