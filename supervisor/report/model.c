/* supervisor/report/model.c: reads a trail once, in sequence order, into what the report shows:
 * the run's summary, its workspaces and tasks, timeline marks, denials by rule and network
 * connections. Everything here came from the trail and may be an agent's hostile text: it is
 * kept as bytes and escaped only where it is written (html.c, graph.c, timeline.c). */
#include "supervisor/report/internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

const char *const report_kind_names[REPORT_KIND_COUNT] = {
    [REPORT_KIND_PROCESS] = "process",
    [REPORT_KIND_TOOL] = "tool",
    [REPORT_KIND_ENVELOPE] = "envelope",
    [REPORT_KIND_SIGNAL] = "signal",
    [REPORT_KIND_CHECKPOINT] = "checkpoint",
    [REPORT_KIND_TASK] = "task",
    [REPORT_KIND_GATE] = "gate",
    [REPORT_KIND_DENIAL] = "denial",
    [REPORT_KIND_BUDGET] = "budget",
    [REPORT_KIND_WORKSPACE] = "workspace",
    [REPORT_KIND_NETWORK] = "network",
    [REPORT_KIND_LOG] = "log",
    [REPORT_KIND_MESSAGE] = "message",
    [REPORT_KIND_OTHER] = "other",
};

/* ---- a small string map ------------------------------------------------------------------ */

static uint64_t map_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

size_t report_map_get(const struct report_map *m, const char *key)
{
    if (!m->cap || !key)
        return SIZE_MAX;
    for (size_t i = map_hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i])
            return SIZE_MAX;
        if (!strcmp(m->keys[i], key))
            return m->vals[i];
    }
}

int report_map_put(struct report_map *m, const char *key, size_t val)
{
    if (2 * (m->n + 1) > m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        char **keys = calloc(cap, sizeof(*keys));
        size_t *vals = calloc(cap, sizeof(*vals));
        if (!keys || !vals) {
            free(keys);
            free(vals);
            return -ENOMEM;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i])
                continue;
            size_t j = map_hash(m->keys[i]) & (cap - 1);
            while (keys[j])
                j = (j + 1) & (cap - 1);
            keys[j] = m->keys[i];
            vals[j] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = cap;
    }
    size_t i = map_hash(key) & (m->cap - 1);
    while (m->keys[i])
        i = (i + 1) & (m->cap - 1);
    if (!(m->keys[i] = strdup(key)))
        return -ENOMEM;
    m->vals[i] = val;
    m->n++;
    return 0;
}

void report_map_free(struct report_map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    *m = (struct report_map){0};
}

static char *dup_str(const char *s)
{
    return s ? report_clean_utf8(s, strlen(s), 4096) : NULL;
}

static void set_str(char **dst, const char *s)
{
    if (!s)
        return;
    char *c = dup_str(s);
    if (!c)
        return; /* out of memory: the field stays as it was; the page just says less */
    free(*dst);
    *dst = c;
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : dflt;
}

/* A scalar as text ("4", "abc"), for ids that may be numbers or strings. Owned. */
static char *jscalar(const cJSON *v)
{
    if (cJSON_IsString(v))
        return dup_str(v->valuestring);
    if (cJSON_IsNumber(v))
        return util_printf("%.17g", v->valuedouble);
    return strdup("");
}

/* ---- loading ------------------------------------------------------------------------------- */

struct open_call {
    size_t mark;
    size_t lane;
    char *key; /* request id (tool) or pid (process) */
};

struct loader {
    struct report_model *m;
    struct trail_reader *r;
    int rc;
    struct open_call *calls; /* tool calls and processes not yet ended */
    size_t ncalls, calls_cap;
    size_t *first_proc; /* per workspace: mark index of its first process, SIZE_MAX none */
    char **log_blobs;   /* per workspace: blob hash of its last agent_log */
    size_t slots;       /* allocated length of m->ws, first_proc and log_blobs */
    size_t tasks_cap;
    size_t message_marks;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    void *q = reallocarray(*p, n, elem);
    if (!q)
        return -ENOMEM;
    memset((char *)q + *cap * elem, 0, (n - *cap) * elem);
    *p = q;
    *cap = n;
    return 0;
}

/* The workspace named id: found, or added (an exec trail has no workspace_created). SIZE_MAX
 * when id is NULL or past REPORT_WS_MAX; -ENOMEM sets L->rc. */
static size_t ws_get(struct loader *L, const char *id)
{
    struct report_model *m = L->m;
    if (!id)
        return SIZE_MAX;
    size_t i = report_map_get(&m->ws_ids, id);
    if (i != SIZE_MAX)
        return i;
    if (m->nws >= REPORT_WS_MAX) {
        m->ws_dropped++;
        return SIZE_MAX;
    }
    if (m->nws == L->slots) {
        size_t cap = L->slots ? 2 * L->slots : 16;
        struct report_ws *ws = reallocarray(m->ws, cap, sizeof(*ws));
        if (ws)
            m->ws = ws;
        size_t *fp = reallocarray(L->first_proc, cap, sizeof(*fp));
        if (fp)
            L->first_proc = fp;
        char **lb = reallocarray(L->log_blobs, cap, sizeof(*lb));
        if (lb)
            L->log_blobs = lb;
        if (!ws || !fp || !lb) {
            L->rc = -ENOMEM;
            return SIZE_MAX;
        }
        L->slots = cap;
    }
    if (report_map_put(&m->ws_ids, id, m->nws) < 0) {
        L->rc = -ENOMEM;
        return SIZE_MAX;
    }
    struct report_ws *w = &m->ws[m->nws];
    *w = (struct report_ws){.created_us = -1,
                            .started_us = -1,
                            .exited_us = -1,
                            .mem_limit = -1,
                            .pids_limit = -1,
                            .cpus_limit = -1,
                            .wall_limit = -1,
                            .mem_peak = -1,
                            .cpu_sec = -1,
                            .wall_sec = -1};
    w->id = dup_str(id);
    L->first_proc[m->nws] = SIZE_MAX;
    L->log_blobs[m->nws] = NULL;
    return m->nws++;
}

static size_t task_get(struct loader *L, const char *id)
{
    struct report_model *m = L->m;
    if (!id)
        return SIZE_MAX;
    size_t i = report_map_get(&m->task_ids, id);
    if (i != SIZE_MAX)
        return i;
    if (m->ntasks >= REPORT_TASKS_MAX) {
        m->tasks_dropped++;
        return SIZE_MAX;
    }
    if (grow((void **)&m->tasks, &L->tasks_cap, m->ntasks + 1, sizeof(*m->tasks)) < 0 ||
        report_map_put(&m->task_ids, id, m->ntasks) < 0) {
        L->rc = -ENOMEM;
        return SIZE_MAX;
    }
    m->tasks[m->ntasks] = (struct report_task){.id = dup_str(id)};
    return m->ntasks++;
}

/* The body for the detail panel: pretty JSON; a protocol message's own JSON text unfolded. */
static char *pretty_body(const cJSON *b, const struct trail_entry *e)
{
    char *s = NULL;
    const char *msg = jstr(b, "message");
    if (msg && !strcmp(e->type, "protocol_message")) {
        cJSON *inner = cJSON_Parse(msg);
        if (inner) {
            cJSON *copy = cJSON_Duplicate(b, true);
            if (copy) {
                cJSON_ReplaceItemInObjectCaseSensitive(copy, "message", inner);
                s = cJSON_Print(copy);
                cJSON_Delete(copy);
            } else {
                cJSON_Delete(inner);
            }
        }
    }
    if (!s && b)
        s = cJSON_Print(b);
    char *out = s ? report_clean_utf8(s, strlen(s), REPORT_BODY_MAX)
                  : report_clean_utf8(e->body, e->body_len, REPORT_BODY_MAX);
    free(s);
    return out;
}

static size_t add_mark(struct loader *L, const struct trail_entry *e, const cJSON *b, size_t lane,
                       enum report_kind kind, char *label)
{
    struct report_model *m = L->m;
    /* protocol messages are most of a trail and hidden at first: they get a third of the marks,
     * so the entries that say what happened are not crowded out */
    if (m->nmarks >= REPORT_MARKS_MAX ||
        (kind == REPORT_KIND_MESSAGE && L->message_marks >= REPORT_MARKS_MAX / 3)) {
        m->marks_dropped++;
        free(label);
        return SIZE_MAX;
    }
    L->message_marks += kind == REPORT_KIND_MESSAGE;
    if (grow((void **)&m->marks, &m->marks_cap, m->nmarks + 1, sizeof(*m->marks)) < 0) {
        free(label);
        L->rc = -ENOMEM;
        return SIZE_MAX;
    }
    struct report_mark *k = &m->marks[m->nmarks];
    *k = (struct report_mark){.lane = lane, .kind = kind, .seq = e->seq, .t_us = e->ts_us - m->start_ts};
    k->label = label ? label : util_printf("%s", e->type);
    k->body = pretty_body(b, e);
    if (!k->label || !k->body) {
        free(k->label);
        free(k->body);
        L->rc = -ENOMEM;
        return SIZE_MAX;
    }
    return m->nmarks++;
}

static void open_call(struct loader *L, size_t mark, size_t lane, char *key)
{
    /* Each end searches the open calls: a bound on them keeps a trail of calls that never end
     * (a damaged file; a run killed mid-flood) from making the report quadratic. Past it a start
     * stays an instant. */
    if (mark == SIZE_MAX || !key || L->ncalls >= REPORT_OPEN_MAX ||
        grow((void **)&L->calls, &L->calls_cap, L->ncalls + 1, sizeof(*L->calls)) < 0) {
        free(key);
        return;
    }
    L->m->marks[mark].open = true;
    L->calls[L->ncalls++] = (struct open_call){mark, lane, key};
}

/* Closes the open call of lane with key (or, key NULL, its latest open process): its mark's
 * duration runs to now and the end's body is added to the start's. Returns the mark or SIZE_MAX. */
static size_t close_call(struct loader *L, const struct trail_entry *e, const cJSON *b, size_t lane,
                         enum report_kind kind, const char *key)
{
    struct report_model *m = L->m;
    for (size_t i = L->ncalls; i-- > 0;) {
        struct open_call *c = &L->calls[i];
        struct report_mark *k = &m->marks[c->mark];
        if (c->lane != lane || k->kind != kind || (key && strcmp(c->key, key)))
            continue;
        k->dur_us = e->ts_us - m->start_ts - k->t_us;
        k->open = false;
        char *end = pretty_body(b, e);
        char *both = end ? util_printf("%s\n\n-- %s (entry %llu) --\n%s", k->body, e->type,
                                       (unsigned long long)e->seq, end)
                         : NULL;
        free(end);
        if (both) {
            char *cut = report_clean_utf8(both, strlen(both), 2 * REPORT_BODY_MAX);
            free(both);
            if (cut) {
                free(k->body);
                k->body = cut;
            }
        }
        size_t mark = c->mark;
        free(c->key);
        memmove(c, c + 1, (L->ncalls - i - 1) * sizeof(*c));
        L->ncalls--;
        return mark;
    }
    return SIZE_MAX;
}

static void count_type(struct loader *L, const char *type)
{
    struct report_model *m = L->m;
    for (size_t i = 0; i < m->ncounts; i++)
        if (!strcmp(m->counts[i].type, type)) {
            m->counts[i].n++;
            return;
        }
    if (m->ncounts >= 256)
        return; /* the registry is closed (83 types): only a damaged file gets here */
    struct report_count *c = reallocarray(m->counts, m->ncounts + 1, sizeof(*c));
    if (!c) {
        L->rc = -ENOMEM;
        return;
    }
    m->counts = c;
    if (!(c[m->ncounts].type = dup_str(type))) {
        L->rc = -ENOMEM;
        return;
    }
    c[m->ncounts++].n = 1;
}

static void add_denial(struct loader *L, const struct trail_entry *e, const cJSON *b)
{
    struct report_model *m = L->m;
    const char *type = e->type;
    _cleanup_free_ char *rule = NULL;
    const char *kind = jstr(b, "kind");
    const char *subject = jstr(b, "subject");
    const char *reason = jstr(b, "reason");
    if (!strcmp(type, "denial")) {
        const char *r = jstr(b, "rule"), *code = jstr(b, "code"), *method = jstr(b, "method");
        if (r)
            rule = util_printf("%s", r);
        else if (code)
            rule = util_printf("%s on %s", code, method ? method : "?");
        else
            rule = util_printf("%s", kind ? kind : "denial");
        if (!subject)
            subject = method;
    } else {
        const char *r = reason ? reason : jstr(b, "capability");
        rule = util_printf("%s: %s", type, r ? r : "?");
        kind = type;
        if (!subject)
            subject = jstr(b, "message") ? jstr(b, "message") : jstr(b, "to");
        reason = jstr(b, "message") ? jstr(b, "message") : reason;
    }
    if (!rule) {
        L->rc = -ENOMEM;
        return;
    }
    if (!kind)
        kind = type;
    m->denials++;
    struct report_rule *r = NULL;
    for (size_t i = 0; i < m->nrules; i++)
        if (!strcmp(m->rules[i].rule, rule) || (m->nrules == REPORT_RULES_MAX && i == m->nrules - 1)) {
            r = &m->rules[i];
            break;
        }
    if (!r) {
        struct report_rule *n = reallocarray(m->rules, m->nrules + 1, sizeof(*n));
        if (!n) {
            L->rc = -ENOMEM;
            return;
        }
        m->rules = n;
        r = &m->rules[m->nrules++];
        *r = (struct report_rule){0};
        r->rule = m->nrules == REPORT_RULES_MAX ? strdup("(other rules)") : dup_str(rule);
        if (!r->rule) {
            L->rc = -ENOMEM;
            return;
        }
    }
    if (!strcmp(r->rule, "(other rules)"))
        m->rules_dropped++;
    r->count++;
    /* kinds seen under this rule, comma separated, bounded */
    if (!r->kinds || (!strstr(r->kinds, kind) && strlen(r->kinds) < 200)) {
        char *k = r->kinds ? util_printf("%s, %s", r->kinds, kind) : dup_str(kind);
        if (k) {
            free(r->kinds);
            r->kinds = k;
        }
    }
    if (r->nexamples < REPORT_EXAMPLES_MAX) {
        struct report_example *x = &r->examples[r->nexamples++];
        x->seq = e->seq;
        x->workspace = dup_str(e->workspace ? e->workspace : "-");
        x->subject = subject ? report_clean_utf8(subject, strlen(subject), 300) : dup_str("");
        x->reason = reason ? report_clean_utf8(reason, strlen(reason), 300) : dup_str("");
    }
    size_t w = ws_get(L, e->workspace);
    if (w != SIZE_MAX)
        m->ws[w].denials++;
}

static void add_network(struct loader *L, const struct trail_entry *e, const cJSON *b)
{
    struct report_model *m = L->m;
    if (m->nnet >= REPORT_NET_MAX) {
        m->net_dropped++;
        return;
    }
    struct report_net *n = reallocarray(m->net, m->nnet + 1, sizeof(*n));
    if (!n) {
        L->rc = -ENOMEM;
        return;
    }
    m->net = n;
    /* The event's fields are the egress proxy's (not built yet): show the usual ones if there,
     * and the whole body beside them. */
    const char *host = jstr(b, "host") ? jstr(b, "host") : jstr(b, "destination");
    const char *decision = jstr(b, "decision") ? jstr(b, "decision") : jstr(b, "outcome");
    const char *proto = jstr(b, "protocol") ? jstr(b, "protocol") : jstr(b, "via");
    double port = jnum(b, "port", -1);
    char portbuf[24] = "";
    if (port >= 0)
        snprintf(portbuf, sizeof(portbuf), ":%.0f", port);
    char *sum = util_printf("%s%s%s%s%s%s", host ? host : "?", portbuf, proto ? " via " : "",
                            proto ? proto : "", decision ? " - " : "", decision ? decision : "");
    n[m->nnet] = (struct report_net){.seq = e->seq, .t_us = e->ts_us - m->start_ts};
    n[m->nnet].workspace = dup_str(e->workspace ? e->workspace : "-");
    n[m->nnet].summary = sum ? report_clean_utf8(sum, strlen(sum), 400) : NULL;
    free(sum);
    n[m->nnet].body = report_clean_utf8(e->body, e->body_len, REPORT_BODY_MAX);
    m->nnet++;
}

static void set_budgets(struct report_ws *w, const cJSON *bud, bool profile)
{
    if (!cJSON_IsObject(bud))
        return;
    /* 0 is "no limit" (a corral exec without --timeout) */
    double v;
    if ((v = jnum(bud, profile ? "memory_bytes" : "memory", -1)) > 0 && w->mem_limit < 0)
        w->mem_limit = v;
    if ((v = jnum(bud, "pids", -1)) > 0 && w->pids_limit < 0)
        w->pids_limit = v;
    if ((v = jnum(bud, "cpus", -1)) > 0 && w->cpus_limit < 0)
        w->cpus_limit = v;
    if ((v = jnum(bud, profile ? "timeout_sec" : "wall_time", -1)) > 0 && w->wall_limit < 0)
        w->wall_limit = v;
}

static char *labelf(const char *type, const char *detail)
{
    if (!detail || !*detail)
        return util_printf("%s", type);
    return util_printf("%s %.80s", type, detail);
}

static int load_entry(const struct trail_entry *e, void *ctx)
{
    struct loader *L = ctx;
    struct report_model *m = L->m;
    if (m->entries == 0)
        m->start_ts = e->ts_us;
    m->end_ts = e->ts_us;
    m->entries++;
    count_type(L, e->type);
    cJSON *b = cJSON_ParseWithLength(e->body, e->body_len);
    const char *t = e->type;
    size_t w = ws_get(L, e->workspace);
    size_t lane = w == SIZE_MAX ? 0 : 1 + w;
    struct report_ws *ws = w == SIZE_MAX ? NULL : &m->ws[w];
    if (e->workspace && w == SIZE_MAX) {
        m->marks_dropped++; /* a workspace past REPORT_WS_MAX has no lane */
        goto done;
    }

    if (!strcmp(t, "trail_created")) {
        set_str(&m->trail_id, jstr(b, "trail_id"));
        set_str(&m->durability, jstr(b, "durability"));
    } else if (!strcmp(t, "supervisor_started")) {
        set_str(&m->policy, jstr(b, "policy"));
        set_str(&m->owner, jstr(b, "started_by"));
        const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(b, "command");
        if (cJSON_IsString(cmd))
            set_str(&m->command, cmd->valuestring);
        else if (cJSON_IsArray(cmd) && cJSON_IsString(cmd->child))
            set_str(&m->command, cmd->child->valuestring);
        add_mark(L, e, b, lane, REPORT_KIND_PROCESS, NULL);
    } else if (!strcmp(t, "supervisor_stopped")) {
        const char *reason = jstr(b, "reason");
        double status = jnum(b, "status", -1);
        char *s = status >= 0 ? util_printf("%s (status %.0f)", reason ? reason : "stopped", status)
                              : util_printf("%s", reason ? reason : "stopped");
        if (s) {
            set_str(&m->stop_text, s);
            free(s);
        }
        add_mark(L, e, b, lane, REPORT_KIND_PROCESS, NULL);
    } else if (!strcmp(t, "workspace_created")) {
        const char *id = jstr(b, "workspace_id");
        if (id && (!e->workspace || strcmp(id, e->workspace))) {
            w = ws_get(L, id); /* created by its parent: the entry sits in the parent's lane */
            ws = w == SIZE_MAX ? NULL : &m->ws[w];
        }
        if (ws) {
            set_str(&ws->parent, jstr(b, "parent"));
            set_str(&ws->agent, jstr(b, "agent"));
            set_str(&ws->role, jstr(b, "role"));
            set_str(&ws->state, jstr(b, "state"));
            set_str(&ws->task, jstr(b, "task"));
            set_str(&ws->owner, jstr(b, "owner"));
            ws->created_us = e->ts_us - m->start_ts;
            set_budgets(ws, cJSON_GetObjectItemCaseSensitive(b, "budgets"), false);
        }
        add_mark(L, e, b, lane, REPORT_KIND_WORKSPACE, labelf(t, jstr(b, "agent")));
    } else if (!strcmp(t, "workspace_state_changed")) {
        if (ws)
            set_str(&ws->state, jstr(b, "to"));
        char *d = util_printf("%s -> %s", jstr(b, "from") ? jstr(b, "from") : "?",
                              jstr(b, "to") ? jstr(b, "to") : "?");
        add_mark(L, e, b, lane, REPORT_KIND_WORKSPACE, labelf("state", d));
        free(d);
    } else if (!strcmp(t, "sandbox_created")) {
        if (ws) {
            const cJSON *prof = cJSON_GetObjectItemCaseSensitive(b, "profile");
            set_budgets(ws, cJSON_GetObjectItemCaseSensitive(prof, "budgets"), true);
            if (!ws->agent)
                set_str(&ws->agent, jstr(b, "agent"));
            /* corral exec: no workspace_created, no supervisor_started; the program says who */
            const cJSON *argv = cJSON_GetObjectItemCaseSensitive(b, "argv");
            if (!ws->agent && cJSON_IsArray(argv) && cJSON_IsString(argv->child)) {
                const char *prog = argv->child->valuestring, *slash = strrchr(prog, '/');
                set_str(&ws->agent, slash && slash[1] ? slash + 1 : prog);
            }
            if (!m->command && cJSON_IsArray(argv)) {
                char *line = NULL;
                for (const cJSON *a = argv->child; a; a = a->next) {
                    char *next = util_printf("%s%s%s", line ? line : "exec:", " ",
                                             cJSON_IsString(a) ? a->valuestring : "?");
                    free(line);
                    if (!(line = next) || strlen(line) > 300)
                        break;
                }
                set_str(&m->command, line);
                free(line);
            }
        }
        add_mark(L, e, b, lane, REPORT_KIND_PROCESS, labelf(t, jstr(b, "purpose")));
    } else if (!strcmp(t, "process_started")) {
        size_t k = add_mark(
            L, e, b, lane, REPORT_KIND_PROCESS,
            labelf("process", jstr(b, "purpose") ? jstr(b, "purpose") : jstr(b, "agent")));
        if (ws && ws->started_us < 0)
            ws->started_us = e->ts_us - m->start_ts;
        if (ws && L->first_proc[w] == SIZE_MAX)
            L->first_proc[w] = k;
        open_call(L, k, lane, jscalar(cJSON_GetObjectItemCaseSensitive(b, "pid")));
    } else if (!strcmp(t, "process_exited")) {
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(b, "pid");
        _cleanup_free_ char *key = cJSON_IsNumber(pid) ? jscalar(pid) : NULL;
        size_t k = close_call(L, e, b, lane, REPORT_KIND_PROCESS, key);
        if (k == SIZE_MAX && key)
            k = close_call(L, e, b, lane, REPORT_KIND_PROCESS, NULL);
        if (ws && (k == L->first_proc[w] || L->first_proc[w] == SIZE_MAX)) {
            const cJSON *u = cJSON_GetObjectItemCaseSensitive(b, "usage");
            ws->exited_us = e->ts_us - m->start_ts;
            if (cJSON_IsObject(u)) {
                ws->mem_peak = jnum(u, "memory_peak_bytes", -1);
                ws->cpu_sec = jnum(u, "cpu_us", -1e9) / 1e6;
                ws->wall_sec = jnum(u, "wall_us", -1e9) / 1e6;
            } else {
                ws->mem_peak = jnum(b, "memory_peak", -1);
                ws->cpu_sec = jnum(b, "cpu_usec", -1e9) / 1e6;
                ws->wall_sec = jnum(b, "wall_sec", -1);
            }
            double st = jnum(b, "status", -1), sig = jnum(b, "signal", -1);
            const cJSON *oom = cJSON_GetObjectItemCaseSensitive(b, "oom");
            const cJSON *to = cJSON_GetObjectItemCaseSensitive(b, "timed_out");
            free(ws->exit_text);
            ws->exit_text = cJSON_IsTrue(oom)  ? util_printf("out of memory")
                            : cJSON_IsTrue(to) ? util_printf("timed out")
                            : sig >= 0         ? util_printf("signal %.0f", sig)
                            : st >= 0          ? util_printf("exit %.0f", st)
                                               : util_printf("ended");
        }
        if (k == SIZE_MAX)
            add_mark(L, e, b, lane, REPORT_KIND_PROCESS, NULL);
    } else if (!strcmp(t, "tool_call")) {
        const char *phase = jstr(b, "phase");
        _cleanup_free_ char *key = jscalar(cJSON_GetObjectItemCaseSensitive(b, "request_id"));
        if (ws)
            ws->tool_calls += phase && !strcmp(phase, "start");
        if (phase && !strcmp(phase, "end") && key &&
            close_call(L, e, b, lane, REPORT_KIND_TOOL, key) != SIZE_MAX)
            goto done;
        size_t k = add_mark(L, e, b, lane, REPORT_KIND_TOOL, labelf("tool", jstr(b, "tool")));
        if (phase && !strcmp(phase, "start"))
            open_call(L, k, lane, steal_pointer(&key));
    } else if (!strncmp(t, "envelope_", 9) || !strncmp(t, "port_right_", 11)) {
        if (!strcmp(t, "envelope_rejected"))
            add_denial(L, e, b);
        add_mark(L, e, b, lane,
                 !strcmp(t, "envelope_rejected") ? REPORT_KIND_DENIAL : REPORT_KIND_ENVELOPE,
                 labelf(t, jstr(b, "type") ? jstr(b, "type") : jstr(b, "kind")));
    } else if (!strncmp(t, "signal_", 7)) {
        add_mark(L, e, b, lane, REPORT_KIND_SIGNAL, labelf(t, jstr(b, "type")));
    } else if (!strncmp(t, "checkpoint_", 11) || !strncmp(t, "integration_", 12) ||
               !strncmp(t, "conflict_", 9) || !strcmp(t, "resource_discrepancy")) {
        if (!strcmp(t, "checkpoint_rejected"))
            add_denial(L, e, b);
        if (ws && !strcmp(t, "checkpoint_created"))
            ws->checkpoints++;
        add_mark(L, e, b, lane,
                 !strcmp(t, "checkpoint_rejected") ? REPORT_KIND_DENIAL : REPORT_KIND_CHECKPOINT,
                 labelf(t, jstr(b, "intent")));
    } else if (!strncmp(t, "task_", 5) || !strcmp(t, "graph_created")) {
        size_t k = task_get(L, jstr(b, "task_id"));
        if (k != SIZE_MAX) {
            struct report_task *tk = &m->tasks[k];
            if (!strcmp(t, "task_created")) {
                set_str(&tk->name, jstr(b, "name"));
                set_str(&tk->description, jstr(b, "description"));
                set_str(&tk->parent, jstr(b, "parent_task"));
                const cJSON *deps = cJSON_GetObjectItemCaseSensitive(b, "depends_on");
                int nd = cJSON_IsArray(deps) ? cJSON_GetArraySize(deps) : 0;
                if (nd > 0 && !tk->deps && (tk->deps = calloc((size_t)nd, sizeof(char *)))) {
                    for (const cJSON *d = deps->child; d; d = d->next)
                        if (cJSON_IsString(d) && (tk->deps[tk->ndeps] = dup_str(d->valuestring)))
                            tk->ndeps++;
                }
            }
            set_str(&tk->status, jstr(b, strcmp(t, "task_created") ? "to" : "status"));
            if (!strcmp(t, "task_failed") && !jstr(b, "to"))
                set_str(&tk->status, "failed");
            set_str(&tk->workspace,
                    jstr(b, "workspace_id") ? jstr(b, "workspace_id") : jstr(b, "workspace_ref"));
        }
        const char *name = k != SIZE_MAX && m->tasks[k].name ? m->tasks[k].name : jstr(b, "name");
        add_mark(L, e, b, lane, REPORT_KIND_TASK, labelf(t, name));
    } else if (!strncmp(t, "gate_", 5) || !strncmp(t, "escalation_", 11) ||
               !strcmp(t, "human_injection")) {
        add_mark(L, e, b, lane, REPORT_KIND_GATE,
                 labelf(t, jstr(b, "gate") ? jstr(b, "gate") : jstr(b, "gate_type")));
    } else if (!strcmp(t, "denial") || !strcmp(t, "capability_denied") ||
               !strcmp(t, "workspace_rejected") || !strcmp(t, "trail_access_denied") ||
               !strcmp(t, "gate_reentry_blocked")) {
        add_denial(L, e, b);
        add_mark(L, e, b, lane, REPORT_KIND_DENIAL,
                 labelf(t, jstr(b, "subject") ? jstr(b, "subject") : jstr(b, "method")));
    } else if (!strncmp(t, "budget_", 7)) {
        if (ws) {
            ws->warnings += !strcmp(t, "budget_warning");
            ws->exceeded += !strcmp(t, "budget_exceeded");
        }
        add_mark(L, e, b, lane, REPORT_KIND_BUDGET, labelf(t, jstr(b, "budget_dimension")));
    } else if (!strcmp(t, "network_connect")) {
        add_network(L, e, b);
        add_mark(L, e, b, lane, REPORT_KIND_NETWORK, labelf(t, jstr(b, "host")));
    } else if (!strcmp(t, "agent_log")) {
        if (ws) {
            const char *text = jstr(b, "text"), *blob = jstr(b, "blob");
            ws->log_bytes = (size_t)jnum(b, "bytes", 0);
            ws->log_cut = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "truncated"));
            if (text)
                set_str(&ws->log, text);
            else if (blob && strlen(blob) == 64)
                set_str(&L->log_blobs[w], blob); /* read after the scan */
        }
        add_mark(L, e, b, lane, REPORT_KIND_LOG, NULL);
    } else if (!strcmp(t, "protocol_message") || !strcmp(t, "protocol_error")) {
        const char *dir = jstr(b, "direction");
        cJSON *msg = jstr(b, "message") ? cJSON_Parse(jstr(b, "message")) : NULL;
        const char *method = jstr(msg, "method");
        char *d = util_printf(
            "%s %s", dir ? dir : "",
            method ? method : (cJSON_GetObjectItemCaseSensitive(msg, "result") ? "result" : ""));
        cJSON_Delete(msg);
        add_mark(L, e, b, lane, REPORT_KIND_MESSAGE,
                 labelf(!strcmp(t, "protocol_error") ? "protocol_error" : "message", d));
        free(d);
    } else {
        add_mark(L, e, b, lane, REPORT_KIND_OTHER, NULL);
    }
done:
    cJSON_Delete(b);
    return L->rc;
}

/* Tree order (parents before children, siblings in creation order) for the tree and the lanes;
 * a cycle from a damaged file puts its members at the end instead of looping. */
static int order_tree(struct report_model *m)
{
    size_t n = m->nws;
    if (!(m->lane_order = calloc(n ? n : 1, sizeof(size_t))))
        return -ENOMEM;
    _cleanup_free_ size_t *parent = calloc(n ? n : 1, sizeof(size_t));
    _cleanup_free_ bool *seen = calloc(n ? n : 1, sizeof(bool));
    _cleanup_free_ size_t *stack = calloc(n ? n : 1, sizeof(size_t));
    if (!parent || !seen || !stack)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        parent[i] = report_map_get(&m->ws_ids, m->ws[i].parent);
        if (parent[i] == i)
            parent[i] = SIZE_MAX;
    }
    size_t o = 0;
    for (size_t root = 0; root < n; root++) {
        if (seen[root] || parent[root] != SIZE_MAX)
            continue;
        size_t sp = 0;
        stack[sp++] = root;
        m->ws[root].depth = 0;
        while (sp) {
            size_t i = stack[--sp];
            if (seen[i])
                continue;
            seen[i] = true;
            m->ws[i].order = o;
            m->lane_order[o++] = i;
            /* children pushed in reverse so the first created comes out first */
            for (size_t c = n; c-- > 0;)
                if (parent[c] == i && !seen[c] && sp < n) {
                    m->ws[c].depth = m->ws[i].depth + 1;
                    stack[sp++] = c;
                }
        }
    }
    for (size_t i = 0; i < n; i++)
        if (!seen[i]) {
            m->ws[i].depth = 0;
            m->ws[i].order = o;
            m->lane_order[o++] = i;
        }
    return 0;
}

struct head {
    uint64_t seq;
    char hex[2 * TRAIL_HASH_LEN + 1];
};

static int keep_head(const struct trail_entry *e, void *ctx)
{
    struct head *h = ctx;
    h->seq = e->seq;
    if (e->hash)
        sodium_bin2hex(h->hex, sizeof(h->hex), e->hash, TRAIL_HASH_LEN);
    return 0;
}

int report_model_load(struct report_model *m, struct cerr *err)
{
    /* Verify first: the page states the result, and shows the entries up to the head it checked
     * (a writer may still be appending). */
    uint64_t n = 0;
    struct cerr verr = {0};
    m->verify_rc = trail_verify_file_count(m->db, &n, &m->verify_bad_seq, &verr);
    if (m->verify_rc < 0)
        return cerr_set(err, -m->verify_rc, "%s", verr.msg);
    snprintf(m->verify_msg, sizeof(m->verify_msg), "%s", verr.msg);
    struct loader L = {.m = m};
    int rc = trail_reader_open(m->db, &L.r, err);
    if (rc < 0)
        return rc;
    struct head h = {0};
    struct trail_filter last = {.after_seq = n ? n - 1 : 0, .limit = 1};
    if (m->verify_rc == 0 && n && (rc = trail_query(L.r, &last, keep_head, &h, err)) < 0)
        goto out;
    m->head_seq = h.seq;
    memcpy(m->head_hex, h.hex, sizeof(h.hex));
    struct trail_filter all = {.limit = m->verify_rc == 0 ? n : 0};
    if (m->verify_rc == 0 && n == 0)
        goto out;
    rc = trail_query(L.r, &all, load_entry, &L, err);
    if (rc == -ENOMEM || L.rc == -ENOMEM) {
        rc = cerr_set(err, ENOMEM, "out of memory reading %s", m->db);
        goto out;
    }
    if (rc < 0)
        goto out;
    for (size_t i = 0; i < m->nws; i++) {
        if (!L.log_blobs[i])
            continue;
        void *data = NULL;
        size_t len = 0;
        struct cerr berr = {0};
        if (trail_blob_get(L.r, L.log_blobs[i], &data, &len, &berr) == 0) {
            /* the end of a log says why an agent stopped */
            size_t from = len > REPORT_LOG_MAX ? len - REPORT_LOG_MAX : 0;
            while (from > 0 && from < len && (((unsigned char *)data)[from] & 0xc0) == 0x80)
                from++;
            free(m->ws[i].log);
            m->ws[i].log = report_clean_utf8((char *)data + from, len - from, REPORT_LOG_MAX + 4);
            m->ws[i].log_cut |= from > 0;
        }
        free(data);
    }
    rc = order_tree(m);
    if (rc < 0)
        rc = cerr_set(err, ENOMEM, "out of memory");
out:
    for (size_t i = 0; i < L.ncalls; i++)
        free(L.calls[i].key);
    free(L.calls);
    for (size_t i = 0; i < m->nws && L.log_blobs; i++)
        free(L.log_blobs[i]);
    free(L.log_blobs);
    free(L.first_proc);
    trail_reader_close(L.r);
    return rc;
}

void report_model_free(struct report_model *m)
{
    free(m->trail_id);
    free(m->policy);
    free(m->owner);
    free(m->command);
    free(m->stop_text);
    free(m->durability);
    for (size_t i = 0; i < m->nws; i++) {
        struct report_ws *w = &m->ws[i];
        free(w->id), free(w->parent), free(w->agent), free(w->role), free(w->state), free(w->task);
        free(w->owner), free(w->exit_text), free(w->log);
    }
    free(m->ws);
    free(m->lane_order);
    report_map_free(&m->ws_ids);
    for (size_t i = 0; i < m->ntasks; i++) {
        struct report_task *t = &m->tasks[i];
        free(t->id), free(t->name), free(t->description), free(t->status), free(t->workspace),
            free(t->parent);
        for (size_t j = 0; j < t->ndeps; j++)
            free(t->deps[j]);
        free(t->deps);
    }
    free(m->tasks);
    report_map_free(&m->task_ids);
    for (size_t i = 0; i < m->nmarks; i++) {
        free(m->marks[i].label);
        free(m->marks[i].body);
    }
    free(m->marks);
    for (size_t i = 0; i < m->nrules; i++) {
        struct report_rule *r = &m->rules[i];
        free(r->rule);
        free(r->kinds);
        for (size_t j = 0; j < r->nexamples; j++)
            free(r->examples[j].workspace), free(r->examples[j].subject), free(r->examples[j].reason);
    }
    free(m->rules);
    for (size_t i = 0; i < m->nnet; i++)
        free(m->net[i].workspace), free(m->net[i].summary), free(m->net[i].body);
    free(m->net);
    for (size_t i = 0; i < m->ncounts; i++)
        free(m->counts[i].type);
    free(m->counts);
}
