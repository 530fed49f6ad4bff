/* supervisor/cmd_policy.c: placeholder until the policy module lands. */
#include "supervisor/commands.h"

#include <stdio.h>

int cmd_policy(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "corral: 'policy' is not available in this build yet\n");
    return CORRAL_EXIT_INTERNAL;
}
