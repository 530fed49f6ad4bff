/* supervisor/cli/cli.h: the subcommands of the `corral` CLI, one file each in supervisor/cli/.
 * Each takes the arguments after its own name (argv[0] is the subcommand) and returns the
 * process exit status of docs/sandbox.md ("Exit status"). */
#ifndef CORRAL_COMMANDS_H
#define CORRAL_COMMANDS_H

enum {
    CORRAL_EXIT_OK = 0,
    CORRAL_EXIT_PROBLEMS = 1, /* a check found problems (policy check, trail verify) */
    CORRAL_EXIT_USAGE = 2,
    CORRAL_EXIT_TIMEOUT = 124, /* corral exec: the program's time ran out */
    CORRAL_EXIT_INTERNAL = 125,
    CORRAL_EXIT_NOEXEC = 126,
    CORRAL_EXIT_NOTFOUND = 127,
};

int cli_exec(int argc, char **argv);
int cli_policy(int argc, char **argv);
int cli_trail(int argc, char **argv);
int cli_report(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_ps(int argc, char **argv);
int cli_mcp(int argc, char **argv);
int cli_gate(int argc, char **argv);
int cli_inject(int argc, char **argv);
int cli_escalations(int argc, char **argv);

#define DEFAULT_TRAIL "/var/lib/corral/corral.db"

struct policy;
/* The trail a run of policy P uses: GIVEN when set, else the policy's trail.path, else
 * DEFAULT_TRAIL (shared by `corral run` and `corral ps`, which finds the run's control socket
 * beside it). */
const char *cli_trail_path(const struct policy *p, const char *given);

#endif
