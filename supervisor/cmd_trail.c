/* supervisor/cmd_trail.c: placeholder until the trail module lands. */
#include "supervisor/commands.h"

#include <stdio.h>

int cmd_trail(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "corral: 'trail' is not available in this build yet\n");
    return CORRAL_EXIT_INTERNAL;
}
