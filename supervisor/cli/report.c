/* supervisor/cli/report.c: `corral trail report`: write the HTML page of a run (supervisor/report/)
 * to a file, atomically, readable by its owner only (like the trail it is made from). */
#include "supervisor/cli/cli.h"
#include "supervisor/report/report.h"

#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char report_usage[] =
    "usage: corral trail report --db FILE [--output FILE.html]\n"
    "\n"
    "Write one self-contained HTML page of the run the trail records: summary and 'trail verify'\n"
    "result, the workspace tree with budgets used against granted, the task graph (laid out by\n"
    "Graphviz), a timeline with one lane per workspace, denials grouped by rule and network\n"
    "connections. The page loads nothing (no network), runs only its own inline script, and shows\n"
    "every text an agent wrote as text. Open it in any browser; mail it as it is.\n"
    "\n"
    "  --db FILE       the trail database\n"
    "  --output FILE   where to write the page (mode 0600, replaced atomically); default: standard "
    "output\n"
    "\n"
    "Exit status: 0 written (also for a trail that fails verification: the page says so at the top),\n"
    "2 usage error (a --db that does not exist or is not a trail included), 125 the trail could not\n"
    "be read or the page not written.\n";

int cli_report(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *db = NULL, *output = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'o': output = optarg; break;
        case 'h': fputs(report_usage, stdout); return CORRAL_EXIT_OK;
        default:
            fprintf(stderr,
                    "corral trail report: unknown or incomplete option '%s'; 'corral trail report "
                    "--help' lists the options\n",
                    argv[optind - 1]);
            return CORRAL_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "corral trail report: unexpected argument '%s'\n", argv[optind]);
        return CORRAL_EXIT_USAGE;
    }
    if (!db) {
        fprintf(stderr, "corral trail report: --db FILE is required: pass the run's trail file\n");
        return CORRAL_EXIT_USAGE;
    }
    struct stat st;
    if (stat(db, &st) < 0) {
        fprintf(stderr, "corral trail report: cannot read %s: %s\n", db, strerror(errno));
        return CORRAL_EXIT_USAGE;
    }
    FILE *out = stdout;
    _cleanup_free_ char *tmp = NULL;
    if (output) {
        /* beside the target, then renamed: a reader never sees half a page */
        tmp = util_printf("%s.tmp.%d", output, (int)getpid());
        int fd = tmp ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
        if (fd < 0 || !(out = fdopen(fd, "w"))) {
            fprintf(stderr,
                    "corral trail report: cannot create %s: %s; choose a writable --output path\n",
                    output, strerror(errno));
            if (fd >= 0) {
                close(fd);
                unlink(tmp);
            }
            return CORRAL_EXIT_INTERNAL;
        }
    }
    struct cerr err = {0};
    int rc = report_write(db, out, &err);
    int status = CORRAL_EXIT_OK;
    if (rc < 0) {
        fprintf(stderr, "corral trail report: %s\n",
                rc == -ENOMEM && !err.msg[0] ? "out of memory" : err.msg);
        status = rc == -ENOENT || rc == -EINVAL || rc == -ENOTDIR ? CORRAL_EXIT_USAGE
                                                                  : CORRAL_EXIT_INTERNAL;
    }
    if (output) {
        if (fclose(out) != 0 && status == CORRAL_EXIT_OK) {
            fprintf(stderr, "corral trail report: cannot write %s: %s\n", output, strerror(errno));
            status = CORRAL_EXIT_INTERNAL;
        }
        if (status == CORRAL_EXIT_OK && rename(tmp, output) < 0) {
            fprintf(stderr, "corral trail report: cannot write %s: %s\n", output, strerror(errno));
            status = CORRAL_EXIT_INTERNAL;
        }
        if (status != CORRAL_EXIT_OK)
            unlink(tmp);
    } else if (fflush(stdout) != 0 && status == CORRAL_EXIT_OK) {
        fprintf(stderr, "corral trail report: cannot write to standard output: %s\n", strerror(errno));
        status = CORRAL_EXIT_INTERNAL;
    }
    return status;
}
