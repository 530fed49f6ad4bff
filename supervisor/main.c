/* supervisor/main.c: the `corral` command line: dispatch to one subcommand per file. */
#include "supervisor/cli/cli.h"

#include <stdio.h>
#include <string.h>

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    const char *missing; /* set while a subcommand is not part of this build: why, and what instead */
};

static const struct command commands[] = {
    {"exec", cli_exec, "run one program in a fresh sandbox (like bwrap / nsjail)", NULL},
    {"run", cli_run, "run a WACP session from a policy", NULL},
    {"policy", cli_policy, "check policy files; show a role's resolved profile", NULL},
    {"trail", cli_trail, "print, follow, verify and export the trail", NULL},
    {"ps", cli_ps, "show the live workspace tree of a run", NULL},
    {"gate", cli_gate, "list and answer the gates of a running session (approve, reject, modify)", NULL},
    {"inject", cli_inject, "send an envelope as yourself into a running session", NULL},
    {"escalations", cli_escalations, "list and answer the escalations of a running session", NULL},
    {"mcp", cli_mcp, "serve the tool surfaces as an MCP server on stdio (for MCP hosts)", NULL},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: corral COMMAND [ARGS...]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-12s %s%s\n", commands[i].name, commands[i].summary,
                commands[i].run ? "" : " (not in this build)");
    fprintf(f, "\n'corral COMMAND --help' describes a command; 'man corral' describes them all.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CORRAL_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return CORRAL_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        puts("corral 0.1.0");
        return CORRAL_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        const struct command *c = &commands[i];
        if (strcmp(argv[1], c->name))
            continue;
        if (!c->run) {
            fprintf(stderr, "corral: '%s' is not available: %s\n", c->name, c->missing);
            return CORRAL_EXIT_INTERNAL;
        }
        return c->run(argc - 1, argv + 1);
    }
    fprintf(stderr, "corral: unknown command '%s'; 'corral --help' lists the commands\n", argv[1]);
    return CORRAL_EXIT_USAGE;
}
