/* supervisor/cli/inject.c: `corral inject WORKSPACE`: a person's envelope into a running session
 * (WACP human-highway spec, section 2.3). It bypasses the role send rules only: the type must be
 * registered, the workspace live and its inbox open; the run stamps it origin "human" and
 * originator = the caller's user id, and records it (a refusal too). */
#include "supervisor/cli/cli.h"
#include "supervisor/cli/human.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: corral inject WORKSPACE --type TYPE (--text TEXT | --payload JSON) [options]\n"
    "\n"
    "Send an envelope as yourself to a workspace of a running session: a directive, feedback,\n"
    "a query, or any envelope type the policy's taxonomy registers.\n"
    "\n"
    "  --type TYPE          the envelope type (directive, feedback, query, ...)\n"
    "  --text TEXT          the payload {\"text\": TEXT}\n"
    "  --payload JSON       the payload as a JSON object\n"
    "  --in-reply-to ID     the envelope this answers\n"
    "  --priority P         low, normal (default), high or urgent\n"
    "  --db FILE | --policy FILE | --control PATH   the run (as corral ps)\n"
    "  --json               the answer as JSON\n"
    "\n"
    "Exit status: 0 delivered or queued, 1 refused (the workspace is closed, failed or being\n"
    "integrated; you may not inject; ...) or no run listening, 2 usage error.\n";

int cli_inject(int argc, char **argv)
{
    static const struct option longopts[] = {
        HUMAN_CLI_LONGOPTS,
        {"type", required_argument, NULL, 't'},
        {"text", required_argument, NULL, 'x'},
        {"payload", required_argument, NULL, 'P'},
        {"in-reply-to", required_argument, NULL, 'r'},
        {"priority", required_argument, NULL, 'y'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct human_cli h = {.prog = "corral inject"};
    const char *type = NULL, *text = NULL, *payload = NULL, *reply = NULL, *prio = NULL;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (human_cli_opt(&h, c, optarg))
            continue;
        switch (c) {
        case 't': type = optarg; break;
        case 'x': text = optarg; break;
        case 'P': payload = optarg; break;
        case 'r': reply = optarg; break;
        case 'y': prio = optarg; break;
        case 'h': fputs(usage, stdout); return CORRAL_EXIT_OK;
        default: fputs(usage, stderr); return CORRAL_EXIT_USAGE;
        }
    }
    if (optind + 1 != argc || !type || !text == !payload) {
        fputs(usage, stderr);
        return CORRAL_EXIT_USAGE;
    }
    cJSON *p = payload ? cJSON_Parse(payload) : cJSON_CreateObject();
    if (!cJSON_IsObject(p)) {
        cJSON_Delete(p);
        fprintf(stderr, "corral inject: --payload takes a JSON object\n");
        return CORRAL_EXIT_USAGE;
    }
    if (text)
        cJSON_AddStringToObject(p, "text", text);
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "op", "inject");
    cJSON_AddStringToObject(req, "to", argv[optind]);
    cJSON_AddStringToObject(req, "type", type);
    cJSON_AddItemToObject(req, "payload", p);
    if (reply)
        cJSON_AddStringToObject(req, "in_reply_to", reply);
    if (prio)
        cJSON_AddStringToObject(req, "priority", prio);
    cJSON *res;
    int rc = human_cli_ask(&h, req, &res, false);
    if (rc)
        return rc;
    if (h.json) {
        human_cli_print_json(res);
    } else {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(res, "envelope_id");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(res, "status");
        printf("envelope %s to %s: %s\n", cJSON_IsString(id) ? id->valuestring : "?", argv[optind],
               cJSON_IsString(st) ? st->valuestring : "sent");
    }
    cJSON_Delete(res);
    return CORRAL_EXIT_OK;
}
