/* supervisor/cli/cli.h: the subcommands of the `corral` CLI, one file each (cmd_*.c).
 * Each takes the arguments after its own name (argv[0] is the subcommand) and returns the
 * process exit status of design.md section 3. */
#ifndef CORRAL_COMMANDS_H
#define CORRAL_COMMANDS_H

enum {
    CORRAL_EXIT_OK = 0,
    CORRAL_EXIT_PROBLEMS = 1,  /* a check found problems (policy check, trail verify) */
    CORRAL_EXIT_USAGE = 2,
    CORRAL_EXIT_TIMEOUT = 124, /* corral exec: the program's time ran out */
    CORRAL_EXIT_INTERNAL = 125,
    CORRAL_EXIT_NOEXEC = 126,
    CORRAL_EXIT_NOTFOUND = 127,
};

int cmd_exec(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_trail(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_gate(int argc, char **argv);
int cmd_inject(int argc, char **argv);
int cmd_escalations(int argc, char **argv);

#endif
