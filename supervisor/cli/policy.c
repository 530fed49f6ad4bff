/* supervisor/cli/policy.c: `corral policy check FILE...` (every problem as FILE:LINE:COL: message)
 * and `corral policy show FILE --role ROLE` (a role's fully resolved profile, for reviewers). */
#include "policy/policy.h"
#include "supervisor/cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void policy_usage(FILE *f)
{
    fputs("usage: corral policy check FILE...\n"
          "       corral policy show (FILE | --default) [--role ROLE]\n"
          "       corral policy show --print-default\n"
          "\n"
          "check   validate each policy file; print every problem as FILE:LINE:COL: message\n"
          "        (exit 0: all valid; 1: problems found; 2: usage)\n"
          "show    print the effective, fully resolved profile of ROLE: authority, WACP\n"
          "        capabilities, tools, budgets, sandbox and the derived seccomp filter.\n"
          "        Without --role, every role of the policy is shown.\n"
          "        --default shows the embedded policy 'corral exec' uses without --policy.\n"
          "        --print-default prints that embedded policy's text.\n"
          "\n"
          "The format is described in docs/policy.md; docs/policy.schema.json helps editors.\n",
          f);
}

static int check(int argc, char **argv)
{
    if (argc < 1) {
        fprintf(stderr, "corral policy check: no FILE given; usage: corral policy check FILE...\n");
        return CORRAL_EXIT_USAGE;
    }
    int status = CORRAL_EXIT_OK;
    for (int i = 0; i < argc; i++) {
        struct policy_diags d = {0};
        struct policy *p = NULL;
        int r = policy_load_file(argv[i], &p, &d);
        if (r == 0) {
            printf("%s: ok (%zu roles, %zu agents)\n", argv[i], policy_role_count(p),
                   policy_agent_count(p));
        } else {
            policy_diags_print(&d, stderr);
            fprintf(stderr, "%s: %zu problem%s\n", argv[i], d.n, d.n == 1 ? "" : "s");
            status = r == -EINVAL ? CORRAL_EXIT_PROBLEMS
                                  : (status == CORRAL_EXIT_OK ? CORRAL_EXIT_PROBLEMS : status);
        }
        policy_free(p);
        policy_diags_free(&d);
    }
    return status;
}

static int show(int argc, char **argv)
{
    enum { O_ROLE = 1, O_DEFAULT, O_PRINT_DEFAULT, O_HELP };
    static const struct option opts[] = {
        {"role", required_argument, 0, O_ROLE},
        {"default", no_argument, 0, O_DEFAULT},
        {"print-default", no_argument, 0, O_PRINT_DEFAULT},
        {"help", no_argument, 0, O_HELP},
        {0, 0, 0, 0},
    };
    const char *role = NULL;
    bool use_default = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_ROLE: role = optarg; break;
        case O_DEFAULT: use_default = true; break;
        case O_PRINT_DEFAULT: fputs(policy_default_text(), stdout); return CORRAL_EXIT_OK;
        case O_HELP: policy_usage(stdout); return CORRAL_EXIT_OK;
        default: policy_usage(stderr); return CORRAL_EXIT_USAGE;
        }
    }
    const char *file = optind < argc ? argv[optind] : NULL;
    if ((file != NULL) == use_default || (file && optind + 1 < argc)) {
        fprintf(stderr, "corral policy show: name one FILE or --default; usage: corral policy show "
                        "(FILE | --default) [--role ROLE]\n");
        return CORRAL_EXIT_USAGE;
    }
    struct policy_diags d = {0};
    struct policy *p = NULL;
    int r = file ? policy_load_file(file, &p, &d) : policy_load_default(&p);
    if (r < 0) {
        policy_diags_print(&d, stderr);
        if (!file)
            fprintf(stderr, "corral: the embedded default policy does not load (%s)\n", strerror(-r));
        policy_diags_free(&d);
        return CORRAL_EXIT_PROBLEMS;
    }
    policy_diags_free(&d);
    struct cerr err = {0};
    int status = CORRAL_EXIT_OK;
    if (role) {
        if (policy_role_print(p, role, stdout, &err) < 0) {
            fprintf(stderr, "corral policy show: %s\n", err.msg);
            status = CORRAL_EXIT_USAGE;
        }
    } else {
        for (size_t i = 0; i < policy_role_count(p); i++) {
            if (i)
                fputs("\n------------------------------------------------------------\n\n", stdout);
            policy_role_print(p, policy_role_name(p, i), stdout, &err);
        }
    }
    policy_free(p);
    return status;
}

int cli_policy(int argc, char **argv)
{
    if (argc < 2) {
        policy_usage(stderr);
        return CORRAL_EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
        policy_usage(stdout);
        return CORRAL_EXIT_OK;
    }
    if (!strcmp(sub, "check")) {
        for (int i = 2; i < argc; i++)
            if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                policy_usage(stdout);
                return CORRAL_EXIT_OK;
            }
        int first = 2;
        if (first < argc && !strcmp(argv[first], "--"))
            first++;
        return check(argc - first, argv + first);
    }
    if (!strcmp(sub, "show"))
        return show(argc - 1, argv + 1);
    fprintf(stderr, "corral policy: unknown subcommand '%s'; 'corral policy --help' lists them\n", sub);
    return CORRAL_EXIT_USAGE;
}
