/* supervisor/cli/ps.c: `corral ps` (the live tree of a `corral run`, from another terminal,
 * through the run's control socket). */
#include "supervisor/cli/cli.h"
#include "supervisor/cli/human.h"

#include "policy/policy.h"
#include "supervisor/runtime/control.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ps_usage[] =
    "usage: corral ps [--db FILE | --policy FILE | --control PATH] [--json]\n"
    "\n"
    "Show the live workspace tree of a running `corral run`: state, role, agent, owner, task,\n"
    "checkpoints, memory used against its budget.\n"
    "\n"
    "  --db FILE        the run's trail (its control socket is FILE.sock)\n"
    "  --policy FILE    the policy the run uses (its trail.path)\n"
    "  --control PATH   the control socket itself\n"
    "  --json           the run's answer as one JSON document\n"
    "\n"
    "Exit status: 0 ok, 1 no run is listening, 2 usage error.\n";

static void human_bytes(double b, char *buf, size_t len)
{
    static const char *const u[] = {"B", "K", "M", "G", "T"};
    size_t i = 0;
    if (b < 0) {
        snprintf(buf, len, "-");
        return;
    }
    while (b >= 1024 && i + 1 < ARRAY_SIZE(u)) {
        b /= 1024;
        i++;
    }
    snprintf(buf, len, i ? "%.1f%s" : "%.0f%s", b, u[i]);
}

static int depth_of(const cJSON *list, const cJSON *ws)
{
    int d = 0;
    const char *parent = human_cli_str(ws, "parent");
    while (strcmp(parent, "-") && d < 64) {
        const cJSON *p = NULL, *it;
        cJSON_ArrayForEach (it, list)
            if (!strcmp(human_cli_str(it, "id"), parent) ||
                !strcmp(human_cli_str(it, "workspace_id"), parent))
                p = it;
        if (!p)
            break;
        d++;
        parent = human_cli_str(p, "parent");
    }
    return d;
}

int cli_ps(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"db", required_argument, NULL, 'd'},      {"policy", required_argument, NULL, 'p'},
        {"control", required_argument, NULL, 'c'}, {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    const char *db = NULL, *policy = NULL, *control = NULL;
    bool json = false;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'p': policy = optarg; break;
        case 'c': control = optarg; break;
        case 'j': json = true; break;
        case 'h': fputs(ps_usage, stdout); return CORRAL_EXIT_OK;
        default: fputs(ps_usage, stderr); return CORRAL_EXIT_USAGE;
        }
    }
    if (optind != argc) {
        fputs(ps_usage, stderr);
        return CORRAL_EXIT_USAGE;
    }
    char path[PATH_MAX];
    if (!control) {
        struct policy *pol = NULL;
        if (!db && policy) {
            struct policy_diags diags = {0};
            if (policy_load_file(policy, &pol, &diags) < 0) {
                policy_diags_print(&diags, stderr);
                policy_diags_free(&diags);
                return CORRAL_EXIT_USAGE;
            }
            policy_diags_free(&diags);
        }
        snprintf(path, sizeof(path), "%s.sock",
                 db    ? db
                 : pol ? cli_trail_path(pol, NULL)
                       : DEFAULT_TRAIL);
        policy_free(pol);
        control = path;
    }
    char *text = NULL;
    struct cerr err = {0};
    if (control_fetch(control, &text, &err) < 0) {
        fprintf(stderr, "corral ps: %s\n", err.msg);
        return CORRAL_EXIT_PROBLEMS;
    }
    if (json) {
        fputs(text, stdout);
        free(text);
        return CORRAL_EXIT_OK;
    }
    cJSON *doc = cJSON_Parse(text);
    free(text);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "workspaces");
    const cJSON *refused = cJSON_GetObjectItemCaseSensitive(doc, "error");
    if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(doc, "ok")) && cJSON_IsObject(refused)) {
        /* The socket is open to the policy's users; whoever else asks is refused. */
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(refused, "message");
        fprintf(stderr, "corral ps: refused: %s\n", cJSON_IsString(m) ? m->valuestring : "by the run");
        cJSON_Delete(doc);
        return CORRAL_EXIT_PROBLEMS;
    }
    if (!cJSON_IsArray(list)) {
        fprintf(stderr, "corral ps: the run's answer is not a workspace list\n");
        cJSON_Delete(doc);
        return CORRAL_EXIT_INTERNAL;
    }
    printf("run pid %.0f, trail %s\n", human_cli_num(doc, "pid"), human_cli_str(doc, "trail"));
    printf("%-28s %-12s %-12s %-10s %-10s %-10s %5s %15s  %s\n", "WORKSPACE", "STATE", "ROLE", "AGENT",
           "OWNER", "ORIGINATOR", "CKPTS", "MEMORY/BUDGET", "EGRESS(open/allowed/refused in/out)");
    const cJSON *ws;
    cJSON_ArrayForEach (ws, list) {
        const char *id = human_cli_str(ws, "id");
        if (!strcmp(id, "-"))
            id = human_cli_str(ws, "workspace_id");
        char name[64];
        int d = depth_of(list, ws);
        snprintf(name, sizeof(name), "%*s%s", d * 2, "", id);
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(ws, "usage");
        char used[16], lim[16], mem[40];
        human_bytes(u ? human_cli_num(u, "memory_peak") : -1, used, sizeof(used));
        human_bytes(u ? human_cli_num(u, "memory_limit") : -1, lim, sizeof(lim));
        snprintf(mem, sizeof(mem), "%s/%s", used, lim);
        double ck = human_cli_num(ws, "checkpoints");
        /* network "proxy" sandboxes: their connections, from the egress proxies' counters */
        const cJSON *eg = u ? cJSON_GetObjectItemCaseSensitive(u, "egress") : NULL;
        char net[96] = "-", bin[16], bout[16];
        if (eg) {
            human_bytes(human_cli_num(eg, "bytes_in"), bin, sizeof(bin));
            human_bytes(human_cli_num(eg, "bytes_out"), bout, sizeof(bout));
            snprintf(net, sizeof(net), "%.0f/%.0f/%.0f %s/%s", human_cli_num(eg, "open"),
                     human_cli_num(eg, "allowed"), human_cli_num(eg, "refused"), bin, bout);
        }
        printf("%-28s %-12s %-12s %-10s %-10s %-10s %5.0f %15s  %s\n", name, human_cli_str(ws, "state"),
               human_cli_str(ws, "role"), human_cli_str(ws, "agent"), human_cli_str(ws, "owner"),
               human_cli_str(ws, "originator"), ck < 0 ? 0 : ck, mem, net);
    }
    cJSON_Delete(doc);
    return CORRAL_EXIT_OK;
}
