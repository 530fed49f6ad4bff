/* supervisor/cli/gate.c: `corral gate list|show|approve|reject|modify`: what waits for a person
 * in a running `corral run`, for how long, and what happens when nobody answers; and the
 * person's answer. The run checks who asks (the policy's users map) and records the decision
 * under that user's id. */
#include "supervisor/cli/cli.h"
#include "supervisor/cli/human.h"

#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: corral gate list [--all] [--follow] [options]\n"
    "       corral gate show GATE [options]\n"
    "       corral gate approve [GATE | --next] [options]\n"
    "       corral gate reject [GATE | --next] [--reason TEXT] [options]\n"
    "       corral gate modify GATE --set FIELD=VALUE... | --modifications JSON [options]\n"
    "\n"
    "Gates are transitions of a running session paused for a person: a task to approve, a\n"
    "workspace to create, an envelope to deliver, an integration, a conflict resolution, an\n"
    "abort, or a tool call under needs_approval. They wait oldest first; each has a timeout\n"
    "after which its fallback runs (approve, reject, or escalate_to_coordinator).\n"
    "\n"
    "  list            the waiting gates, oldest first (--all: with the recently resolved)\n"
    "  --follow        keep listing: print each new gate as it opens, until the run ends\n"
    "  show GATE       one gate with its whole subject (the task, the tool and its arguments, ...)\n"
    "  approve, reject GATE (or --next: the oldest waiting gate)\n"
    "  modify GATE     approve with changes: --set name=VALUE (VALUE is JSON, else a string),\n"
    "                  or --modifications '{\"priority\": \"high\"}'\n"
    "\n"
    "  --db FILE       the run's trail (its control socket is FILE.sock)\n"
    "  --policy FILE   the policy the run uses (its trail.path)\n"
    "  --control PATH  the control socket itself\n"
    "  --json          answers as JSON\n"
    "\n"
    "Exit status: 0 done, 1 refused or no run listening, 2 usage error.\n";

/* One line on what is asked: the tool and its arguments, the task's name, else the JSON. */
static void summary(const cJSON *g, char *buf, size_t len)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(g, "subject");
    const char *type = human_cli_str(g, "type");
    char *text = NULL;
    if (!strcmp(type, "tool_call")) {
        text = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(s, "arguments"));
        snprintf(buf, len, "%s %s", human_cli_str(s, "tool"), text ? text : "{}");
    } else if (!strcmp(type, "task_approval")) {
        snprintf(buf, len, "task \"%s\"", human_cli_str(s, "name"));
    } else if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(s, "method"))) {
        /* A coordinator's request: the method and its parameters. */
        text = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(s, "params"));
        const char *m = human_cli_str(s, "method");
        snprintf(buf, len, "%s %s", strncmp(m, "wacp/", 5) ? m : m + 5, text ? text : "{}");
    } else if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(s, "envelope_id"))) {
        text = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(s, "payload"));
        snprintf(buf, len, "%s from %s: %s", human_cli_str(s, "type"), human_cli_str(s, "from"),
                 text ? text : "null");
    } else {
        text = cJSON_PrintUnformatted(s);
        snprintf(buf, len, "%s", text ? text : "-");
    }
    free(text);
    if (strlen(buf) > 70)
        snprintf(buf + 66, len - 66, "...");
}

static void print_gate_line(const cJSON *g)
{
    char waited[16], left[16], sub[128];
    human_cli_duration(human_cli_num(g, "waited"), waited, sizeof(waited));
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(g, "seconds_left");
    if (cJSON_IsNumber(l))
        human_cli_duration(l->valuedouble, left, sizeof(left));
    else
        snprintf(left, sizeof(left), "%s",
                 !strcmp(human_cli_str(g, "status"), "pending") ? "never" : "-");
    summary(g, sub, sizeof(sub));
    const char *status = human_cli_str(g, "status");
    char then[64];
    if (!strcmp(status, "pending"))
        snprintf(then, sizeof(then), "%s", human_cli_str(g, "fallback"));
    else
        snprintf(then, sizeof(then), "%s by %s", human_cli_str(g, "action"), human_cli_str(g, "actor"));
    printf("%-37s %-19s %-36s %7s %7s  %-24s %s\n", human_cli_str(g, "id"), human_cli_str(g, "type"),
           human_cli_str(g, "workspace"), waited, left, then, sub);
}

static void print_header(bool all)
{
    printf("%-37s %-19s %-36s %7s %7s  %-24s %s\n", "GATE", "TYPE", "WORKSPACE", "WAITED", "LEFT",
           all ? "ON TIMEOUT / RESOLVED" : "ON TIMEOUT", "SUBJECT");
}

static int do_list(struct human_cli *h, bool all, bool follow)
{
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "op", "gate.list");
    cJSON_AddBoolToObject(req, "all", all);
    cJSON *res;
    int rc = human_cli_ask(h, req, &res, false);
    if (rc)
        return rc;
    const cJSON *gates = cJSON_GetObjectItemCaseSensitive(res, "gates");
    if (!follow) {
        if (h->json) {
            human_cli_print_json(res);
        } else if (!cJSON_GetArraySize(gates)) {
            printf("no gate is waiting (%s)\n", h->path);
        } else {
            print_header(all);
            const cJSON *g;
            cJSON_ArrayForEach (g, gates)
                print_gate_line(g);
        }
        cJSON_Delete(res);
        return CORRAL_EXIT_OK;
    }
    /* --follow: the run is asked again every half second; each gate is printed once, when first
     * seen (pending, or already resolved if it was decided between two looks); it ends when the
     * run does. */
    cJSON *seen = cJSON_CreateObject();
    if (!h->json) {
        print_header(true);
        fflush(stdout);
    }
    for (;;) {
        const cJSON *g;
        cJSON_ArrayForEach (g, gates) {
            const char *id = human_cli_str(g, "id");
            if (cJSON_HasObjectItem(seen, id))
                continue;
            cJSON_AddTrueToObject(seen, id);
            if (h->json) {
                char *t = cJSON_PrintUnformatted(g);
                if (t)
                    puts(t);
                free(t);
            } else {
                print_gate_line(g);
            }
            fflush(stdout);
        }
        cJSON_Delete(res);
        res = NULL;
        poll(NULL, 0, 500);
        /* With the resolved ones: a gate decided between two looks is still printed once. */
        req = cJSON_CreateObject();
        cJSON_AddStringToObject(req, "op", "gate.list");
        cJSON_AddBoolToObject(req, "all", true);
        rc = human_cli_ask(h, req, &res, true);
        if (rc == -2) { /* the run is over */
            cJSON_Delete(seen);
            return CORRAL_EXIT_OK;
        }
        if (rc) {
            cJSON_Delete(seen);
            return rc;
        }
        gates = cJSON_GetObjectItemCaseSensitive(res, "gates");
    }
}

static int do_show(struct human_cli *h, const char *id)
{
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "op", "gate.show");
    cJSON_AddStringToObject(req, "id", id);
    cJSON *res;
    int rc = human_cli_ask(h, req, &res, false);
    if (rc)
        return rc;
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(res, "gate");
    if (h->json) {
        human_cli_print_json(res);
    } else {
        char waited[16], left[16];
        human_cli_duration(human_cli_num(g, "waited"), waited, sizeof(waited));
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(g, "seconds_left");
        human_cli_duration(cJSON_IsNumber(l) ? l->valuedouble : -1, left, sizeof(left));
        printf("gate       %s (%s)\n", human_cli_str(g, "id"), human_cli_str(g, "status"));
        printf("type       %s\n", human_cli_str(g, "type"));
        printf("workspace  %s\n", human_cli_str(g, "workspace"));
        if (strcmp(human_cli_str(g, "task_ref"), "-"))
            printf("task       %s (graph %s)\n", human_cli_str(g, "task_ref"),
                   human_cli_str(g, "graph_ref"));
        printf("waiting    %s, position %.0f in the queue when it opened\n", waited,
               human_cli_num(g, "queue_position"));
        if (!strcmp(human_cli_str(g, "status"), "pending"))
            printf("timeout    %s left; then: %s\n", left, human_cli_str(g, "fallback"));
        else
            printf("resolved   %s by %s%s%s\n", human_cli_str(g, "action"), human_cli_str(g, "actor"),
                   strcmp(human_cli_str(g, "reason"), "-") ? ", " : "",
                   strcmp(human_cli_str(g, "reason"), "-") ? human_cli_str(g, "reason") : "");
        char *t = cJSON_Print(cJSON_GetObjectItemCaseSensitive(g, "subject"));
        printf("subject    %s\n", t ? t : "-");
        free(t);
    }
    cJSON_Delete(res);
    return CORRAL_EXIT_OK;
}

/* --set name=VALUE: VALUE is taken as JSON when it parses, else as a string. */
static int add_set(cJSON *mods, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return -1;
    char key[128];
    snprintf(key, sizeof(key), "%.*s", (int)(eq - kv), kv);
    cJSON *v = cJSON_Parse(eq + 1);
    if (!v)
        v = cJSON_CreateString(eq + 1);
    cJSON_DeleteItemFromObjectCaseSensitive(mods, key);
    cJSON_AddItemToObject(mods, key, v);
    return 0;
}

static int do_resolve(struct human_cli *h, const char *op, const char *id, const char *reason,
                      cJSON *mods)
{
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "op", op);
    if (id)
        cJSON_AddStringToObject(req, "id", id);
    else
        cJSON_AddBoolToObject(req, "next", true);
    if (reason)
        cJSON_AddStringToObject(req, "reason", reason);
    if (mods)
        cJSON_AddItemToObject(req, "modifications", mods);
    cJSON *res;
    int rc = human_cli_ask(h, req, &res, false);
    if (rc)
        return rc;
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(res, "gate");
    if (h->json)
        human_cli_print_json(res);
    else
        printf("%s %s (%s, workspace %s) as %s\n", human_cli_str(g, "action"), human_cli_str(g, "id"),
               human_cli_str(g, "type"), human_cli_str(g, "workspace"), human_cli_str(g, "actor"));
    cJSON_Delete(res);
    return CORRAL_EXIT_OK;
}

int cli_gate(int argc, char **argv)
{
    static const struct option longopts[] = {
        HUMAN_CLI_LONGOPTS,
        {"all", no_argument, NULL, 'a'},
        {"follow", no_argument, NULL, 'f'},
        {"next", no_argument, NULL, 'n'},
        {"reason", required_argument, NULL, 'r'},
        {"set", required_argument, NULL, 's'},
        {"modifications", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct human_cli h = {.prog = "corral gate"};
    bool all = false, follow = false, next = false;
    const char *reason = NULL;
    cJSON *mods = NULL;
    optind = 1;
    int c;
    int rc = CORRAL_EXIT_USAGE;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (human_cli_opt(&h, c, optarg))
            continue;
        switch (c) {
        case 'a': all = true; break;
        case 'f': follow = true; break;
        case 'n': next = true; break;
        case 'r': reason = optarg; break;
        case 's':
            if (!mods)
                mods = cJSON_CreateObject();
            if (add_set(mods, optarg) < 0) {
                fprintf(stderr, "corral gate: --set takes FIELD=VALUE, not '%s'\n", optarg);
                goto out;
            }
            break;
        case 'm':
            cJSON_Delete(mods);
            mods = cJSON_Parse(optarg);
            if (!cJSON_IsObject(mods)) {
                fprintf(stderr, "corral gate: --modifications takes a JSON object\n");
                goto out;
            }
            break;
        case 'h':
            fputs(usage, stdout);
            rc = CORRAL_EXIT_OK;
            goto out;
        default: fputs(usage, stderr); goto out;
        }
    }
    if (optind >= argc) {
        fputs(usage, stderr);
        goto out;
    }
    const char *sub = argv[optind++];
    const char *id = optind < argc ? argv[optind++] : NULL;
    if (optind != argc) {
        fputs(usage, stderr);
        goto out;
    }
    if (!strcmp(sub, "list") && !id) {
        rc = do_list(&h, all, follow);
    } else if (!strcmp(sub, "show") && id) {
        rc = do_show(&h, id);
    } else if ((!strcmp(sub, "approve") || !strcmp(sub, "reject")) && (!id != !next) && !mods) {
        char op[32];
        snprintf(op, sizeof(op), "gate.%s", sub);
        rc = do_resolve(&h, op, id, reason, NULL);
    } else if (!strcmp(sub, "modify") && id && mods) {
        rc = do_resolve(&h, "gate.modify", id, reason, mods);
        mods = NULL;
    } else {
        fprintf(stderr, "corral gate: %s\n%s",
                "give a subcommand and what it needs (approve and reject take a GATE or --next; modify "
                "takes a GATE and --set or --modifications)",
                usage);
    }
out:
    cJSON_Delete(mods);
    return rc;
}
