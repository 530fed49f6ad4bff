/* supervisor/cli/escalations.c: `corral escalations list|respond`: agents that cannot go on
 * without a person (WACP human-highway spec, section 2.4), routed to their workspace's owner,
 * and the person's answer: an envelope to the agent, an abort of its workspace, or a delegation
 * to the coordinator. */
#include "supervisor/cli/cli.h"
#include "supervisor/cli/human.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: corral escalations list [--all] [options]\n"
    "       corral escalations respond ID (--text TEXT | --payload JSON | --abort | --delegate) "
    "[options]\n"
    "\n"
    "  list          escalations waiting for you (--all: every one, with the resolved)\n"
    "  respond ID    --text/--payload: an envelope (feedback) to the blocked agent, which resumes;\n"
    "                --abort: its workspace fails (aborted_by_human); --delegate: the coordinator\n"
    "                handles it\n"
    "  --db FILE | --policy FILE | --control PATH   the run (as corral ps)\n"
    "  --json        answers as JSON\n"
    "\n"
    "Exit status: 0 done, 1 refused or no run listening, 2 usage error.\n";

int cli_escalations(int argc, char **argv)
{
    static const struct option longopts[] = {
        HUMAN_CLI_LONGOPTS,
        {"all", no_argument, NULL, 'a'},
        {"text", required_argument, NULL, 'x'},
        {"payload", required_argument, NULL, 'P'},
        {"abort", no_argument, NULL, 'A'},
        {"delegate", no_argument, NULL, 'D'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct human_cli h = {.prog = "corral escalations"};
    bool all = false, abort_ = false, delegate = false;
    const char *text = NULL, *payload = NULL;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (human_cli_opt(&h, c, optarg))
            continue;
        switch (c) {
        case 'a': all = true; break;
        case 'x': text = optarg; break;
        case 'P': payload = optarg; break;
        case 'A': abort_ = true; break;
        case 'D': delegate = true; break;
        case 'h': fputs(usage, stdout); return CORRAL_EXIT_OK;
        default: fputs(usage, stderr); return CORRAL_EXIT_USAGE;
        }
    }
    const char *sub = optind < argc ? argv[optind++] : "";
    cJSON *req = cJSON_CreateObject();
    if (!strcmp(sub, "list") && optind == argc) {
        cJSON_AddStringToObject(req, "op", "escalations.list");
        cJSON_AddBoolToObject(req, "all", all);
    } else if (!strcmp(sub, "respond") && optind + 1 == argc &&
               (text != NULL) + (payload != NULL) + abort_ + delegate == 1) {
        cJSON_AddStringToObject(req, "op", "escalations.respond");
        cJSON_AddStringToObject(req, "id", argv[optind]);
        cJSON_AddStringToObject(req, "response",
                                abort_     ? "abort"
                                : delegate ? "delegation"
                                           : "envelope");
        if (text || payload) {
            cJSON *p = payload ? cJSON_Parse(payload) : cJSON_CreateObject();
            if (!cJSON_IsObject(p)) {
                cJSON_Delete(p);
                cJSON_Delete(req);
                fprintf(stderr, "corral escalations: --payload takes a JSON object\n");
                return CORRAL_EXIT_USAGE;
            }
            if (text)
                cJSON_AddStringToObject(p, "text", text);
            cJSON_AddItemToObject(req, "payload", p);
        }
    } else {
        cJSON_Delete(req);
        fputs(usage, stderr);
        return CORRAL_EXIT_USAGE;
    }
    cJSON *res;
    int rc = human_cli_ask(&h, req, &res, false);
    if (rc)
        return rc;
    if (h.json) {
        human_cli_print_json(res);
    } else if (!strcmp(sub, "respond")) {
        printf("answered %s (%s)%s%s\n", human_cli_str(res, "id"), human_cli_str(res, "response_type"),
               strcmp(human_cli_str(res, "response_ref"), "-") ? ": envelope " : "",
               strcmp(human_cli_str(res, "response_ref"), "-") ? human_cli_str(res, "response_ref")
                                                               : "");
    } else {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(res, "escalations");
        if (!cJSON_GetArraySize(list)) {
            printf("no escalation is waiting\n");
        } else {
            printf("%-40s %-36s %-10s %-8s %7s %-24s %s\n", "ESCALATION", "WORKSPACE", "OWNER", "STATUS",
                   "LEFT", "ON TIMEOUT", "REASON");
            const cJSON *x;
            cJSON_ArrayForEach (x, list) {
                char left[16];
                const cJSON *l = cJSON_GetObjectItemCaseSensitive(x, "seconds_left");
                human_cli_duration(cJSON_IsNumber(l) ? l->valuedouble : -1, left, sizeof(left));
                printf("%-40s %-36s %-10s %-8s %7s %-24s %s\n", human_cli_str(x, "id"),
                       human_cli_str(x, "workspace"), human_cli_str(x, "owner"),
                       human_cli_str(x, "status"), left, human_cli_str(x, "fallback"),
                       human_cli_str(x, "reason"));
            }
        }
    }
    cJSON_Delete(res);
    return CORRAL_EXIT_OK;
}
