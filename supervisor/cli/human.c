/* supervisor/cli/human.c: see human.h. */
#include "supervisor/cli/human.h"

#include "policy/policy.h"
#include "supervisor/cli/cli.h"
#include "supervisor/runtime/control_human.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TRAIL "/var/lib/corral/corral.db"

int human_cli_opt(struct human_cli *h, int opt, const char *arg)
{
    switch (opt) {
    case 'd': h->db = arg; return 1;
    case 'p': h->policy = arg; return 1;
    case 'c': h->control = arg; return 1;
    case 'j': h->json = true; return 1;
    default: return 0;
    }
}

int human_cli_locate(struct human_cli *h)
{
    if (h->path[0])
        return 0;
    if (h->control) {
        snprintf(h->path, sizeof(h->path), "%s", h->control);
        return 0;
    }
    struct policy *pol = NULL;
    if (!h->db && h->policy) {
        struct policy_diags diags = {0};
        if (policy_load_file(h->policy, &pol, &diags) < 0) {
            policy_diags_print(&diags, stderr);
            policy_diags_free(&diags);
            return CORRAL_EXIT_USAGE;
        }
        policy_diags_free(&diags);
    }
    const char *trail = h->db;
    struct policy_session s;
    if (!trail && pol) {
        policy_session_get(pol, &s);
        trail = s.trail_path;
    }
    snprintf(h->path, sizeof(h->path), "%s.sock", trail ? trail : DEFAULT_TRAIL);
    policy_free(pol);
    return 0;
}

void human_cli_print_json(const cJSON *x)
{
    char *t = cJSON_Print(x);
    if (t)
        puts(t);
    free(t);
}

int human_cli_ask(struct human_cli *h, cJSON *req, cJSON **result, bool quiet_gone)
{
    *result = NULL;
    int rc = human_cli_locate(h);
    char *line = req ? cJSON_PrintUnformatted(req) : NULL;
    cJSON_Delete(req);
    if (rc)
        return free(line), rc;
    if (!line) {
        fprintf(stderr, "%s: out of memory\n", h->prog);
        return CORRAL_EXIT_INTERNAL;
    }
    char *text = NULL;
    struct cerr err = {0};
    rc = control_human_request(h->path, line, &text, &err);
    /* A run that ends while we ask resets the connection it had not taken yet, or closes it
     * unanswered: asked once more, no one listens (gone), or the run answers (a real fault). */
    if (quiet_gone && (rc == -ECONNRESET || rc == -EPIPE || (rc == 0 && (!text || !*text)))) {
        free(text);
        text = NULL;
        rc = control_human_request(h->path, line, &text, &err);
    }
    free(line);
    if (rc < 0) {
        if (quiet_gone && (rc == -ENOENT || rc == -ECONNREFUSED))
            return -2;
        fprintf(stderr, "%s: %s\n", h->prog, err.msg);
        return CORRAL_EXIT_PROBLEMS;
    }
    cJSON *doc = cJSON_Parse(text);
    free(text);
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(doc, "ok");
    if (!cJSON_IsBool(ok)) {
        fprintf(stderr, "%s: the run's answer is not one this corral understands\n", h->prog);
        cJSON_Delete(doc);
        return CORRAL_EXIT_INTERNAL;
    }
    if (cJSON_IsTrue(ok)) {
        *result = cJSON_DetachItemFromObjectCaseSensitive(doc, "result");
        cJSON_Delete(doc);
        if (!*result)
            *result = cJSON_CreateObject();
        return 0;
    }
    if (h->json) {
        human_cli_print_json(doc);
    } else {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "code");
        fprintf(stderr, "%s: refused (%s): %s\n", h->prog, cJSON_IsString(c) ? c->valuestring : "?",
                cJSON_IsString(m) ? m->valuestring : "no reason given");
    }
    cJSON_Delete(doc);
    return CORRAL_EXIT_PROBLEMS;
}

void human_cli_duration(double sec, char *buf, size_t len)
{
    if (sec < 0) {
        snprintf(buf, len, "never");
        return;
    }
    unsigned long s = (unsigned long)(sec + 0.5);
    if (s < 60)
        snprintf(buf, len, "%lus", s);
    else if (s < 3600)
        snprintf(buf, len, "%lum%02lus", s / 60, s % 60);
    else
        snprintf(buf, len, "%luh%02lum", s / 3600, (s % 3600) / 60);
}

const char *human_cli_str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "-";
}

double human_cli_num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}
