/* supervisor/cli/human.h: what `corral gate`, `corral inject` and `corral escalations` share:
 * finding a running `corral run` (--control SOCKET, or TRAIL.sock from --db / --policy, as
 * `corral ps` does) and asking it one question over its control socket. The run knows who asks
 * from the kernel (SO_PEERCRED): nothing here claims an identity. */
#ifndef CORRAL_CLI_HUMAN_H
#define CORRAL_CLI_HUMAN_H

#include <cjson/cJSON.h>
#include <stdbool.h>

struct human_cli {
    const char *prog; /* "corral gate", for messages */
    const char *db, *policy, *control;
    bool json;
    char path[4096]; /* the socket found */
};

/* Handles --db, --policy, --control, --json (returns 1 when OPT was one of them, 0 not, -1 a
 * bad value). Options are the getopt_long codes 'd', 'p', 'c', 'j'. */
int human_cli_opt(struct human_cli *h, int opt, const char *arg);
#define HUMAN_CLI_LONGOPTS                                                          \
    {"db", required_argument, NULL, 'd'}, {"policy", required_argument, NULL, 'p'}, \
        {"control", required_argument, NULL, 'c'},                                  \
    {                                                                               \
        "json", no_argument, NULL, 'j'                                              \
    }
/* Finds the socket (once). A CORRAL_EXIT_* on failure (message printed). */
int human_cli_locate(struct human_cli *h);
/* Sends REQ (taken) and returns the run's answer: 0 with *RESULT (owned by the caller) when it
 * said ok; else a CORRAL_EXIT_* with the run's refusal printed (or, with --json, the whole answer
 * written to stdout). QUIET_GONE: a run that is not (or no longer) there is -2, unprinted (a
 * connection reset, or closed unanswered, as the run ends is asked again to tell). */
int human_cli_ask(struct human_cli *h, cJSON *req, cJSON **result, bool quiet_gone);
/* Prints X (borrowed) as one JSON document on stdout. */
void human_cli_print_json(const cJSON *x);
/* For printing a run's answer: O's member K as a string, or "-" when it is not one. */
const char *human_cli_str(const cJSON *o, const char *k);
/* O's member K as a number, or -1 when it is not one. */
double human_cli_num(const cJSON *o, const char *k);
/* Seconds as "12s", "4m05s", "1h02m", or "never" for a negative value. */
void human_cli_duration(double sec, char *buf, size_t len);

#endif
