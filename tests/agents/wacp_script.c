/* tests/agents/wacp_script.c: a scripted WACP agent for end-to-end tests of `corral run`, hostile
 * on request. It sends `initialize` first (unless the first step is @noinit); then each argument
 * is one step, and everything it sees is printed on stderr (the run keeps it in the agent's log),
 * one line per event, so a test reads the conversation from there:
 *   [VAR=]METHOD PARAMS   a request (METHOD: "wacp/..." or any other; PARAMS: JSON, may be left
 *                         out: {}); prints "< METHOD ok RESULT" or "< METHOD error=RPC WORD MSG";
 *                         VAR keeps the result for later steps
 *   [VAR=]@envelope       waits for the next envelope (acked by the SDK), prints "< envelope JSON"
 *   [VAR=]@signal         waits for the next signal, prints "< signal JSON"
 *   [VAR=]@liveness       waits for the next wacp/liveness notification, prints "< liveness JSON"
 *   @wait:N               waits for N events, envelopes or signals, printing each
 *   [VAR=]@until:TYPE     waits (printing every event) for a signal of TYPE, kept as VAR;
 *                         TYPE,TYPE...: until one of each was seen, in any order (VAR: the last)
 *   @drop:N               the next N envelopes are dropped without an ack (redelivery tests);
 *                         first in the script, it applies before initialize
 *   @directive            waits for the first envelope (kept as VAR directive) and, when its
 *                         payload has "steps" (an array of strings), runs them next
 *   @timeout:MS           how long waits last from now on (default 30000); a wait that runs out
 *                         prints "< timeout" and the script goes on
 *   @flood:N:METHOD PARAMS  N requests pipelined, then "< flood N ok=K WORD=COUNT..."
 *   [VAR=]@poll:TEXT:METHOD PARAMS  the request again every 100 ms until its result holds TEXT
 *                         (printed once, as a request's), or the wait runs out: "< timeout"
 *                         (waits on a state no event announces, e.g. an entry in the trail)
 *   @raw:LINE             LINE as it is, then one line read and printed
 *   @log:TEXT             prints "# TEXT" ({{VAR}} expanded)
 *   @sleep:MS             sleeps
 *   @spin:MS              burns CPU for MS without a word on the pipe (liveness tests)
 *   @hold                 prints every event until the channel ends (the run stopped it)
 *   @exit:CODE            exits at once with CODE
 *   [VAR=]@retry:N:MS:ok|error:METHOD PARAMS  the request again, MS apart, until its outcome
 *                         is the one named (at most N times); only the last is printed, then
 *                         "# retry METHOD ok|error after K" (degraded-mode tests)
 * In PARAMS and LINE, {{VAR.a.b}} is replaced by that field of a kept value (a string as it is,
 * anything else as JSON; {{VAR}} alone: the whole value as JSON); in an array, a number picks
 * by index and K=V the first object whose field K is V ({{r.rights.kind=send.right_id}}). A
 * VAR not kept stays as it is (steps carried in a directive are expanded by their receiver).
 * Exit: 0 after the last step, 3 when the channel ended before. */
#include "corral_agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct corral_agent *A;
static cJSON *Vars;
static int Timeout = 30000;

static void print_json(const char *prefix, const cJSON *j)
{
    char *t = cJSON_PrintUnformatted(j);
    fprintf(stderr, "%s%.400000s\n", prefix, t ? t : "null");
    free(t);
}

static void keep(const char *var, const cJSON *v)
{
    if (!var || !*var || !v)
        return;
    cJSON_DeleteItemFromObjectCaseSensitive(Vars, var);
    cJSON_AddItemToObject(Vars, var, cJSON_Duplicate(v, true));
}

/* An element of array A: by index ("0"), or the first object whose field K is V ("K=V"). */
static const cJSON *pick(const cJSON *a, const char *p)
{
    const char *eq = strchr(p, '=');
    if (!eq)
        return cJSON_GetArrayItem(a, atoi(p));
    char key[64];
    snprintf(key, sizeof(key), "%.*s", (int)(eq - p), p);
    for (const cJSON *c = a->child; c; c = c->next) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, key);
        if (cJSON_IsString(f) && !strcmp(f->valuestring, eq + 1))
            return c;
    }
    return NULL;
}

/* {{VAR.path}} -> value. Returns a malloc'd string. */
static char *expand(const char *s)
{
    size_t cap = strlen(s) * 2 + 256, len = 0;
    char *out = malloc(cap);
    if (!out)
        exit(2);
    while (*s) {
        const char *open = strstr(s, "{{");
        const char *close = open ? strstr(open + 2, "}}") : NULL;
        size_t lit = open && close ? (size_t)(open - s) : strlen(s);
        char *val = NULL;
        if (open && close) {
            char path[256];
            snprintf(path, sizeof(path), "%.*s", (int)(close - open - 2), open + 2);
            char name[256];
            snprintf(name, sizeof(name), "%.*s", (int)strcspn(path, "."), path);
            const cJSON *v = Vars;
            for (char *save = NULL, *p = strtok_r(path, ".", &save); p && v;
                 p = strtok_r(NULL, ".", &save))
                v = cJSON_IsArray(v) ? pick(v, p) : cJSON_GetObjectItemCaseSensitive(v, p);
            /* A name not kept here stays as it is: steps carried to another agent (in a
             * directive) are expanded there. */
            if (!cJSON_GetObjectItemCaseSensitive(Vars, name))
                val = strndup(open, (size_t)(close + 2 - open));
            else
                val = cJSON_IsString(v) ? strdup(v->valuestring)
                      : v               ? cJSON_PrintUnformatted(v)
                                        : strdup("");
        }
        size_t vlen = val ? strlen(val) : 0;
        if (len + lit + vlen + 1 > cap) {
            cap = (len + lit + vlen + 1) * 2;
            char *n = realloc(out, cap);
            if (!n)
                exit(2);
            out = n;
        }
        memcpy(out + len, s, lit);
        len += lit;
        if (val) {
            memcpy(out + len, val, vlen);
            len += vlen;
            free(val);
            s = close + 2;
        } else {
            s += lit;
        }
    }
    out[len] = '\0';
    return out;
}

static void ended(void)
{
    fprintf(stderr, "< EOF %s\n", corral_agent_error(A));
    exit(3);
}

/* Waits for one event of KINDS; prints it; keeps it as VAR. NULL on timeout. */
static cJSON *wait_event(int kinds, const char *var)
{
    int kind;
    cJSON *v = corral_agent_next_event(A, kinds, Timeout, &kind);
    if (!v) {
        if (*corral_agent_error(A))
            ended();
        fprintf(stderr, "< timeout\n");
        return NULL;
    }
    print_json(kind == CORRAL_EV_ENVELOPE ? "< envelope "
               : kind == CORRAL_EV_SIGNAL ? "< signal "
                                          : "< liveness ",
               v);
    keep(var, v);
    return v;
}

/* 1: ok, 0: an error answer. QUIET: nothing printed. */
static int request_q(const char *var, const char *line, bool quiet)
{
    char *s = expand(line);
    char *sp = strchr(s, ' ');
    if (sp)
        *sp = '\0';
    cJSON *params = NULL;
    if (sp && sp[1]) {
        params = cJSON_Parse(sp + 1);
        if (!params) {
            fprintf(stderr, "wacp_script: the params of '%s' are not JSON: %s\n", s, sp + 1);
            exit(2);
        }
    }
    cJSON *r = corral_agent_request(A, s, params ? params : cJSON_CreateObject());
    int ok = r != NULL;
    if (r) {
        if (!quiet) {
            fprintf(stderr, "< %s ok ", s);
            print_json("", r);
        }
        keep(var, r);
        cJSON_Delete(r);
    } else if (!corral_agent_error_code(A)) {
        ended();
    } else if (!quiet) {
        fprintf(stderr, "< %s error=%d %s %s\n", s, corral_agent_error_code(A),
                *corral_agent_error_word(A) ? corral_agent_error_word(A) : "-", corral_agent_error(A));
    }
    free(s);
    return ok;
}

static void request(const char *var, const char *step)
{
    request_q(var, step, false);
}

/* @retry:N:MS:ok|error:METHOD PARAMS */
static void retry(const char *var, const char *spec)
{
    char *end;
    long n = strtol(spec, &end, 10), ms = *end == ':' ? strtol(end + 1, &end, 10) : -1;
    bool want_ok = *end == ':' && !strncmp(end + 1, "ok:", 3);
    if (n <= 0 || ms < 0 || *end != ':' || (!want_ok && strncmp(end + 1, "error:", 6))) {
        fprintf(stderr, "wacp_script: @retry:N:MS:ok|error:METHOD PARAMS\n");
        exit(2);
    }
    const char *what = end + 1 + (want_ok ? 3 : 6);
    long k = 1;
    int got;
    for (; (got = request_q(var, what, true)) != want_ok && k < n; k++) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
    char method[128];
    snprintf(method, sizeof(method), "%s", what);
    method[strcspn(method, " ")] = '\0';
    if (got)
        fprintf(stderr, "< %s ok\n", method);
    else
        fprintf(stderr, "< %s error=%d %s %s\n", method, corral_agent_error_code(A),
                *corral_agent_error_word(A) ? corral_agent_error_word(A) : "-", corral_agent_error(A));
    fprintf(stderr, "# retry %s %s after %ld\n", method, got ? "ok" : "error", k);
}

/* N requests written at once, then N answers read: counts by outcome. */
static void flood(const char *spec)
{
    char *end;
    long n = strtol(spec, &end, 10);
    if (*end != ':' || n <= 0 || n > 1000000) {
        fprintf(stderr, "wacp_script: @flood:N:METHOD PARAMS\n");
        exit(2);
    }
    char *s = expand(end + 1);
    char *sp = strchr(s, ' ');
    const char *params = sp ? sp + 1 : "{}";
    if (sp)
        *sp = '\0';
    for (long i = 0; i < n; i++) {
        char *line = NULL;
        int k = asprintf(&line,
                         "{\"jsonrpc\":\"2.0\",\"id\":\"f%ld\",\"method\":\"%s\",\"params\":%s}\n", i, s,
                         params);
        if (k < 0 || corral_agent_send_raw(A, line, (size_t)k) < 0)
            ended();
        free(line);
    }
    cJSON *counts = cJSON_CreateObject();
    long ok = 0;
    for (long got = 0; got < n;) {
        char *line = corral_agent_read_line(A, NULL);
        if (!line)
            ended();
        cJSON *m = cJSON_Parse(line);
        free(line);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
        if (!cJSON_IsString(id) || id->valuestring[0] != 'f') {
            cJSON_Delete(m); /* notifications during a flood are not the point */
            continue;
        }
        got++;
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, "error"), "data"),
            "code");
        if (cJSON_GetObjectItemCaseSensitive(m, "result")) {
            ok++;
        } else {
            const char *word = cJSON_IsString(w) ? w->valuestring : "rpc_error";
            cJSON *c = cJSON_GetObjectItemCaseSensitive(counts, word);
            if (c)
                cJSON_SetNumberValue(c, c->valuedouble + 1);
            else
                cJSON_AddNumberToObject(counts, word, 1);
        }
        cJSON_Delete(m);
    }
    fprintf(stderr, "< flood %ld ok=%ld", n, ok);
    for (const cJSON *c = counts->child; c; c = c->next)
        fprintf(stderr, " %s=%d", c->string, c->valueint);
    fprintf(stderr, "\n");
    cJSON_Delete(counts);
    free(s);
}

/* @poll:TEXT:METHOD PARAMS: see the top of the file. */
static void poll_request(const char *var, const char *spec)
{
    const char *colon = strchr(spec, ':');
    if (!colon || colon == spec) {
        fprintf(stderr, "wacp_script: @poll:TEXT:METHOD PARAMS\n");
        exit(2);
    }
    char *text = strndup(spec, (size_t)(colon - spec));
    char *s = expand(colon + 1);
    char *sp = strchr(s, ' ');
    const char *params = sp && sp[1] ? sp + 1 : "{}";
    if (sp)
        *sp = '\0';
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        cJSON *p = cJSON_Parse(params);
        if (!p) {
            fprintf(stderr, "wacp_script: the params of '%s' are not JSON: %s\n", s, params);
            exit(2);
        }
        cJSON *r = corral_agent_request(A, s, p);
        if (!r && !corral_agent_error_code(A))
            ended();
        char *j = r ? cJSON_PrintUnformatted(r) : NULL;
        bool hit = j && strstr(j, text);
        if (hit) {
            fprintf(stderr, "< %s ok %.16000s\n", s, j);
            keep(var, r);
        }
        free(j);
        cJSON_Delete(r);
        if (hit)
            break;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= Timeout) {
            fprintf(stderr, "< timeout\n");
            break;
        }
        struct timespec pause = {0, 100 * 1000000};
        nanosleep(&pause, NULL);
    }
    free(s);
    free(text);
}

static void run_steps(int n, const char *const *steps);

static void step(const char *arg)
{
    char var[64] = "";
    const char *eq = strchr(arg, '=');
    const char *sp = strchr(arg, ' ');
    /* VAR=... : a name before '=' with no space or brace before it */
    if (eq && (!sp || eq < sp) && eq != arg && (size_t)(eq - arg) < sizeof(var) &&
        !strchr("@{", arg[0])) {
        snprintf(var, sizeof(var), "%.*s", (int)(eq - arg), arg);
        arg = eq + 1;
    }
    if (!strcmp(arg, "@envelope")) {
        cJSON_Delete(wait_event(CORRAL_EV_ENVELOPE, var));
    } else if (!strcmp(arg, "@signal")) {
        cJSON_Delete(wait_event(CORRAL_EV_SIGNAL, var));
    } else if (!strcmp(arg, "@liveness")) {
        cJSON_Delete(wait_event(CORRAL_EV_LIVENESS, var));
    } else if (!strncmp(arg, "@wait:", 6)) {
        for (long i = strtol(arg + 6, NULL, 10); i > 0; i--)
            cJSON_Delete(wait_event(CORRAL_EV_ENVELOPE | CORRAL_EV_SIGNAL, NULL));
    } else if (!strncmp(arg, "@until:", 7)) {
        /* TYPE or TYPE,TYPE...: until every type named was seen, in any order */
        char types[256];
        snprintf(types, sizeof(types), "%s", arg + 7);
        const char *want[8];
        bool seen[8] = {false};
        int n_want = 0;
        for (char *save = NULL, *tok = strtok_r(types, ",", &save); tok && n_want < 8;
             tok = strtok_r(NULL, ",", &save))
            want[n_want++] = tok;
        for (int left = n_want; left > 0;) {
            int kind;
            cJSON *v = corral_agent_next_event(A, CORRAL_EV_ENVELOPE | CORRAL_EV_SIGNAL, Timeout, &kind);
            if (!v) {
                if (*corral_agent_error(A))
                    ended();
                fprintf(stderr, "< timeout\n");
                break;
            }
            print_json(kind == CORRAL_EV_ENVELOPE ? "< envelope " : "< signal ", v);
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(v, "type");
            for (int i = 0; i < n_want; i++)
                if (!seen[i] && kind == CORRAL_EV_SIGNAL && cJSON_IsString(t) &&
                    !strcmp(t->valuestring, want[i])) {
                    seen[i] = true;
                    left--;
                    keep(var, v);
                    break;
                }
            cJSON_Delete(v);
        }
    } else if (!strncmp(arg, "@drop:", 6)) {
        corral_agent_drop_envelopes(A, (unsigned)strtoul(arg + 6, NULL, 10));
    } else if (!strcmp(arg, "@directive")) {
        cJSON *d = wait_event(CORRAL_EV_ENVELOPE, "directive");
        const cJSON *steps = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(d, "payload"), "steps");
        int n = cJSON_GetArraySize(steps), k = 0;
        const char **v = calloc((size_t)n + 1, sizeof(*v));
        for (const cJSON *s = cJSON_IsArray(steps) ? steps->child : NULL; v && s; s = s->next)
            if (cJSON_IsString(s))
                v[k++] = s->valuestring;
        run_steps(k, v);
        free(v);
        cJSON_Delete(d);
    } else if (!strncmp(arg, "@timeout:", 9)) {
        Timeout = atoi(arg + 9);
    } else if (!strncmp(arg, "@flood:", 7)) {
        flood(arg + 7);
    } else if (!strncmp(arg, "@poll:", 6)) {
        poll_request(var, arg + 6);
    } else if (!strncmp(arg, "@raw:", 5)) {
        char *s = expand(arg + 5);
        if (corral_agent_send_raw(A, s, strlen(s)) < 0 || corral_agent_send_raw(A, "\n", 1) < 0)
            ended();
        free(s);
        char *line = corral_agent_read_line(A, NULL);
        if (!line)
            ended();
        fprintf(stderr, "< raw %.16000s\n", line);
        free(line);
    } else if (!strncmp(arg, "@log:", 5)) {
        char *s = expand(arg + 5);
        fprintf(stderr, "# %s\n", s);
        free(s);
    } else if (!strncmp(arg, "@sleep:", 7)) {
        long ms = strtol(arg + 7, NULL, 10);
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
    } else if (!strncmp(arg, "@spin:", 6)) {
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        long ms = strtol(arg + 6, NULL, 10);
        volatile unsigned long x = 0;
        do {
            for (int i = 0; i < 100000; i++)
                x += (unsigned long)i;
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
    } else if (!strcmp(arg, "@hold")) {
        for (;;) {
            int kind;
            cJSON *v = corral_agent_next_event(
                A, CORRAL_EV_ENVELOPE | CORRAL_EV_SIGNAL | CORRAL_EV_LIVENESS, -1, &kind);
            if (!v)
                ended();
            print_json(kind == CORRAL_EV_ENVELOPE ? "< envelope "
                       : kind == CORRAL_EV_SIGNAL ? "< signal "
                                                  : "< liveness ",
                       v);
            cJSON_Delete(v);
        }
    } else if (!strncmp(arg, "@retry:", 7)) {
        retry(var, arg + 7);
    } else if (!strncmp(arg, "@exit:", 6)) {
        fprintf(stderr, "# exit %s\n", arg + 6);
        exit(atoi(arg + 6));
    } else if (arg[0] == '@') {
        fprintf(stderr, "wacp_script: unknown step '%s'\n", arg);
        exit(2);
    } else {
        request(var, arg);
    }
}

static void run_steps(int n, const char *const *steps)
{
    for (int i = 0; i < n; i++)
        step(steps[i]);
}

int main(int argc, char **argv)
{
    setvbuf(stderr, NULL, _IOLBF, 0);
    A = corral_agent_new(0, 1);
    Vars = cJSON_CreateObject();
    if (!A || !Vars)
        return 2;
    int first = 1;
    /* Drops at the head of the script apply from the start: the directive may arrive while
     * initialize waits for its answer. */
    for (; first < argc && !strncmp(argv[first], "@drop:", 6); first++)
        step(argv[first]);
    if (first < argc && !strcmp(argv[first], "@noinit")) {
        first++;
    } else if (corral_agent_initialize(A, "wacp_script", "1", NULL) < 0) {
        fprintf(stderr, "< initialize error=%d %s\n", corral_agent_error_code(A), corral_agent_error(A));
        if (!corral_agent_error_code(A))
            return 3;
    }
    run_steps(argc - first, (const char *const *)argv + first);
    fprintf(stderr, "# done\n");
    cJSON_Delete(Vars);
    corral_agent_free(A);
    return 0;
}
