/* examples/agents/worker.c: a WACP worker in C (sdk/corral_agent.c) for `corral run`: takes an
 * add_function directive, asks the coordinator what it leaves open (query -> feedback), adds the
 * function to the module and a line to README.md through its tools, records a checkpoint chain
 * (a provisional artifact, then the final one) and signals complete. docs/sdk.md walks through it. */
#include "corral_agent.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_MS 120000

static void logf_(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("worker.c: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static const char *str(const cJSON *o, const char *k, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* The text of PATH in the workspace (the caller's), or NULL. */
static char *read_file(struct corral_agent *a, const char *path)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "path", path);
    bool is_error = false;
    cJSON *r = corral_agent_call(a, "readFile", args, &is_error);
    char *text = !is_error && r ? strdup(str(r, "content", "")) : NULL;
    if (!text)
        logf_("read %s: %s", path, r ? str(r, "error", "?") : corral_agent_error(a));
    cJSON_Delete(r);
    return text;
}

static int write_file(struct corral_agent *a, const char *path, const char *content)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "path", path);
    cJSON_AddStringToObject(args, "content", content);
    cJSON_AddBoolToObject(args, "createDirectories", true);
    bool is_error = false;
    cJSON *r = corral_agent_call(a, "writeFile", args, &is_error);
    int rc = r && !is_error ? 0 : -1;
    if (rc)
        logf_("write %s: %s", path, r ? str(r, "error", "?") : corral_agent_error(a));
    cJSON_Delete(r);
    return rc;
}

/* A query to the directive's sender, and the payload of the feedback that answers it (the
 * caller's; NULL when none came). */
static cJSON *ask(struct corral_agent *a, const cJSON *directive, const char *question, const char *text)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "format", "json");
    cJSON_AddStringToObject(p, "question", question);
    cJSON_AddStringToObject(p, "content", text);
    cJSON *q = corral_agent_send(a, str(directive, "from", ""), "query", p,
                                 str(directive, "envelope_id", NULL));
    if (!q) {
        logf_("query refused: %s (%s)", corral_agent_error(a), corral_agent_error_word(a));
        return NULL;
    }
    char qid[160];
    snprintf(qid, sizeof(qid), "%s", str(q, "envelope_id", ""));
    cJSON_Delete(q);
    logf_("query %s: %s", qid, text);
    for (;;) {
        cJSON *env = corral_agent_next_envelope(a, WAIT_MS);
        if (!env) {
            logf_("no answer to %s", qid);
            return NULL;
        }
        if (!strcmp(str(env, "type", ""), "feedback") && !strcmp(str(env, "in_reply_to", ""), qid)) {
            cJSON *payload = cJSON_DetachItemFromObjectCaseSensitive(env, "payload");
            cJSON_Delete(env);
            return payload;
        }
        logf_("meanwhile: %s from %s", str(env, "type", "?"), str(env, "from", "?"));
        cJSON_Delete(env);
    }
}

static char *concat(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

/* README.md with LINE at the end of its "## Functions" section. */
static int readme_add(struct corral_agent *a, const char *line)
{
    char *readme = read_file(a, "README.md");
    if (!readme)
        readme = strdup("");
    if (!readme)
        return -1;
    char *sec = strstr(readme, "## Functions");
    char *out;
    if (!sec) {
        out = concat(readme, "\n## Functions\n\n", line);
    } else {
        /* the end of the section: the next heading, or the end; before its blank lines */
        char *next = strstr(sec + 1, "\n#");
        char *end = next ? next : readme + strlen(readme);
        while (end > sec && (end[-1] == '\n'))
            end--;
        size_t head = (size_t)(end - readme);
        size_t n = strlen(readme) + strlen(line) + 3;
        out = malloc(n);
        if (out)
            snprintf(out, n, "%.*s\n%s\n%s", (int)head, readme, line, next ? next : "");
    }
    char *final = out ? concat(out, out[strlen(out) - 1] == '\n' ? "" : "\n", "") : NULL;
    int rc = final ? write_file(a, "README.md", final) : -1;
    free(final);
    free(out);
    free(readme);
    return rc;
}

static const char median_fmt[] =
    "\n\ndef median(xs):\n"
    "    \"\"\"The middle value of a non-empty list of numbers; for an even count, %s.\"\"\"\n"
    "    if not xs:\n"
    "        raise ValueError(\"median() of an empty list\")\n"
    "    s = sorted(xs)\n"
    "    m = len(s) // 2\n"
    "    if len(s) %% 2:\n"
    "        return s[m]\n"
    "    return %s\n";

/* The work: FILES gets the paths changed; a one-line summary in SUMMARY. */
static int add_function(struct corral_agent *a, const cJSON *d, const cJSON *job, cJSON *files,
                        char *summary, size_t cap)
{
    const char *module = str(job, "module", "stats.py"), *fn = str(job, "function", "median");
    if (strcmp(fn, "median")) {
        snprintf(summary, cap, "this worker only knows how to write median(), not %s()", fn);
        return -1;
    }
    char *src = read_file(a, module);
    if (!src) {
        snprintf(summary, cap, "%s is not in the workspace", module);
        return -1;
    }
    int rc = 0;
    if (!strstr(src, "def median(")) {
        char q[128];
        snprintf(q, sizeof(q), "%s() of an even-length list: which value?", fn);
        cJSON *ans = ask(a, d, "even_length", q);
        bool lower = !strcmp(str(ans, "answer", ""), "lower");
        cJSON_Delete(ans);
        size_t n = strlen(src);
        while (n && src[n - 1] == '\n')
            n--;
        src[n] = '\0';
        char *code = NULL;
        if (asprintf(&code, median_fmt,
                     lower ? "the lower of the two middle values" : "the mean of the two middle values",
                     lower ? "s[m - 1]" : "(s[m - 1] + s[m]) / 2") < 0)
            code = NULL;
        char *out = code ? concat(src, "\n", code + 1) : NULL; /* code starts with "\n\n" */
        rc = out ? write_file(a, module, out) : -1;
        free(out);
        free(code);
        if (rc == 0) {
            /* The chain's first link: the code, before the README; the final one follows. */
            cJSON *list = cJSON_CreateArray();
            cJSON_AddItemToArray(list, cJSON_CreateString(module));
            cJSON *cp = corral_agent_checkpoint(a, "artifact", "median() written, README.md still to do",
                                                "provisional", "medium", list, NULL);
            logf_("checkpoint %s (provisional)",
                  cp ? str(cp, "checkpoint_id", "?") : corral_agent_error(a));
            cJSON_Delete(cp);
        }
    }
    free(src);
    if (rc == 0)
        rc = readme_add(a, "- `median(xs)`: the middle value.");
    cJSON_AddItemToArray(files, cJSON_CreateString(module));
    cJSON_AddItemToArray(files, cJSON_CreateString("README.md"));
    snprintf(summary, cap, rc ? "the files could not be written" : "%s() added to %s", fn, module);
    return rc;
}

int main(void)
{
    setvbuf(stderr, NULL, _IOLBF, 0);
    struct corral_agent *a = corral_agent_new(0, 1);
    if (!a || corral_agent_initialize(a, "worker.c", "1.0", NULL) < 0) {
        logf_("initialize: %s", a ? corral_agent_error(a) : "out of memory");
        return 1;
    }
    cJSON *me = corral_agent_self(a);
    logf_("workspace %s role %s parent %s", str(me, "workspace_id", "?"), str(me, "role", "?"),
          str(me, "parent", "?"));
    cJSON_Delete(me);

    cJSON *d = corral_agent_next_envelope(a, WAIT_MS);
    if (!d) {
        cJSON_Delete(corral_agent_emit(a, "failed", "no directive within 120 s", NULL));
        corral_agent_free(a);
        return 1;
    }
    const cJSON *job = cJSON_GetObjectItemCaseSensitive(d, "payload");
    logf_("directive %s kind %s task %s", str(d, "envelope_id", "?"), str(job, "kind", "?"),
          str(job, "task", "-"));

    char summary[300];
    cJSON *files = cJSON_CreateArray();
    int rc;
    if (!strcmp(str(job, "kind", ""), "add_function")) {
        rc = add_function(a, d, job, files, summary, sizeof(summary));
    } else {
        snprintf(summary, sizeof(summary), "no such kind of work: %s", str(job, "kind", "(none)"));
        rc = -1;
    }
    if (rc == 0) {
        cJSON *payload = cJSON_CreateObject();
        cJSON_AddStringToObject(payload, "task", str(job, "task", ""));
        cJSON_AddStringToObject(payload, "kind", "add_function");
        cJSON *cp = corral_agent_checkpoint(a, "artifact", summary, "final", "high", files, payload);
        files = NULL;
        if (!cp) {
            logf_("checkpoint refused: %s (%s)", corral_agent_error(a), corral_agent_error_word(a));
            rc = -1;
        } else {
            logf_("checkpoint %s (artifact)", str(cp, "checkpoint_id", "?"));
            cJSON_Delete(cp);
        }
    }
    cJSON_Delete(files);
    cJSON *s = corral_agent_emit(a, rc == 0 ? "complete" : "failed", summary, NULL);
    logf_("%s: %s%s%s", rc == 0 ? "complete" : "failed", summary,
          s ? "" : " (signal refused: ", s ? "" : corral_agent_error(a));
    cJSON_Delete(s);
    cJSON_Delete(d);

    /* Until the run stops this agent (its workspace closed): log what still comes. */
    for (;;) {
        int kind;
        cJSON *ev = corral_agent_next_event(a, CORRAL_EV_ENVELOPE | CORRAL_EV_SIGNAL, -1, &kind);
        if (!ev)
            break;
        logf_("after completion: %s %s", kind == CORRAL_EV_ENVELOPE ? "envelope" : "signal",
              str(ev, "type", "?"));
        cJSON_Delete(ev);
    }
    corral_agent_free(a);
    return 0;
}
