/* supervisor/runtime/recovery.c: the one forward scan of a trail for its last `corral run`. */
#include "supervisor/runtime/recovery.h"

#include "policy/policy.h"
#include "supervisor/runtime/rundir.h"
#include "supervisor/trail/trail.h"
#include "supervisor/wacp/wacp.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A workspace of the run and whether its last recorded state is terminal. */
struct scan_ws {
    char id[64];
    char *role, *agent; /* as workspace_created recorded them */
    bool terminal;
};

struct scan {
    struct recovery_scan *out;
    struct scan_ws *ws;
    size_t n, cap;
    bool root_terminal;
};

static void scan_forget(struct scan *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->ws[i].role);
        free(s->ws[i].agent);
    }
    s->n = 0;
}

static const char *body_str(const cJSON *b, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static struct scan_ws *scan_find(struct scan *s, const char *id)
{
    for (size_t i = s->n; id && i-- > 0;) /* the latest workspaces are the likeliest */
        if (!strcmp(s->ws[i].id, id))
            return &s->ws[i];
    return NULL;
}

static int on_entry(const struct trail_entry *e, void *data)
{
    struct scan *s = data;
    struct recovery_scan *o = s->out;
    bool started = !strcmp(e->type, "supervisor_started");
    bool created = !strcmp(e->type, "workspace_created");
    bool changed = !strcmp(e->type, "workspace_state_changed");
    if (!started && !created && !changed)
        return 0;
    cJSON *b = cJSON_ParseWithLength(e->body, e->body_len);
    if (!b)
        return 0; /* not ours to judge here: `corral trail verify` checks the chain */
    const char *cmd = body_str(b, "command");
    bool resumed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "resumed"));
    if (started && cmd && !strcmp(cmd, "run") && resumed && o->found) {
        /* `corral run --resume` took the run over: same run, same directory, its own pid. */
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(b, "pid");
        o->pid = cJSON_IsNumber(pid) ? (pid_t)pid->valuedouble : 0;
        o->resumes++;
    } else if (started && cmd && !strcmp(cmd, "run")) {
        /* A new run: what came before belongs to an earlier one. */
        const char *rd = body_str(b, "run_dir"), *wsd = body_str(b, "workspace"),
                   *pol = body_str(b, "policy");
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(b, "pid");
        o->found = true;
        o->started_seq = e->seq;
        snprintf(o->run_dir, sizeof(o->run_dir), "%s", rd ? rd : "");
        snprintf(o->workspace, sizeof(o->workspace), "%s", wsd ? wsd : "");
        snprintf(o->policy, sizeof(o->policy), "%s", pol ? pol : "");
        o->pid = cJSON_IsNumber(pid) ? (pid_t)pid->valuedouble : 0;
        o->root[0] = '\0';
        o->resumes = 0;
        scan_forget(s);
        s->root_terminal = false;
    } else if (created && o->found && e->workspace && !scan_find(s, e->workspace)) {
        if (s->n == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 16;
            struct scan_ws *p = realloc(s->ws, cap * sizeof(*p));
            if (!p) {
                cJSON_Delete(b);
                return -ENOMEM;
            }
            s->ws = p;
            s->cap = cap;
        }
        struct scan_ws *w = &s->ws[s->n++];
        snprintf(w->id, sizeof(w->id), "%s", e->workspace);
        w->terminal = false;
        const char *role = body_str(b, "role"), *agent = body_str(b, "agent");
        w->role = role ? strdup(role) : NULL;
        w->agent = agent ? strdup(agent) : NULL;
        if ((role && !w->role) || (agent && !w->agent)) {
            cJSON_Delete(b);
            return -ENOMEM;
        }
        if (!body_str(b, "parent") && !o->root[0])
            snprintf(o->root, sizeof(o->root), "%s", e->workspace);
    } else if (changed && o->found) {
        struct scan_ws *w = scan_find(s, e->workspace);
        const char *to = body_str(b, "to");
        if (w && to)
            w->terminal = !strcmp(to, "closed") || !strcmp(to, "failed");
    }
    cJSON_Delete(b);
    return 0;
}

int recovery_scan_file(const char *path, const struct policy *policy, struct recovery_scan *out,
                       struct cerr *err)
{
    memset(out, 0, sizeof(*out));
    if (access(path, F_OK) < 0)
        return errno == ENOENT ? 0 : cerr_set(err, errno, "trail %s: %s", path, strerror(errno));
    struct trail_reader *r;
    int rc = trail_reader_open(path, &r, err);
    if (rc < 0)
        return rc;
    /* Three indexed reads rather than the whole trail (a shared default trail holds many runs):
     * the runs' starts, then the last run's workspaces and their state changes. */
    struct scan s = {.out = out};
    struct trail_filter f = {.type = "supervisor_started"};
    rc = trail_query(r, &f, on_entry, &s, err);
    static const char *const later[] = {"workspace_created", "workspace_state_changed"};
    for (size_t i = 0; rc >= 0 && out->found && i < ARRAY_SIZE(later); i++) {
        struct trail_filter g = {.type = later[i], .after_seq = out->started_seq};
        rc = trail_query(r, &g, on_entry, &s, err);
    }
    trail_reader_close(r);
    if (rc >= 0 && out->found) {
        out->n_ws = s.n;
        bool root_terminal = false;
        for (size_t i = 0; i < s.n; i++) {
            out->n_live += !s.ws[i].terminal;
            if (!strcmp(s.ws[i].id, out->root))
                root_terminal = s.ws[i].terminal;
        }
        /* A run that recorded no workspace (its supervisor died in its first moments) left
         * nothing to finish or resume: a new run may start on its trail. */
        out->unfinished = out->root[0] && !root_terminal;
        /* A live workspace the policy cannot start again would be left out of the rebuilt run
         * (or failed for it): the resume is refused instead, before anything is recorded. */
        for (size_t i = 0; policy && !out->unfit_ws[0] && i < s.n; i++) {
            const struct scan_ws *w = &s.ws[i];
            struct policy_role_view v;
            struct cerr ce = {0};
            if (w->terminal || !w->role || !w->agent)
                continue;
            if (policy_role_resolve(policy, w->role, &v, &ce) < 0)
                snprintf(out->unfit_what, sizeof(out->unfit_what), "role %.100s", w->role);
            else if (!policy_agent_find(policy, w->agent))
                snprintf(out->unfit_what, sizeof(out->unfit_what), "agent %.100s", w->agent);
            else
                continue;
            snprintf(out->unfit_ws, sizeof(out->unfit_ws), "%s", w->id);
        }
    }
    scan_forget(&s);
    free(s.ws);
    if (rc == -ENOMEM && !err->msg[0])
        cerr_set(err, ENOMEM, "out of memory scanning the trail");
    return rc < 0 ? rc : 0;
}

/* Process PID's parent (0: unknown), from /proc/PID/stat. */
static pid_t proc_parent(pid_t pid)
{
    char p[64], buf[1024] = {0};
    snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
    if (util_read_file(p, buf, sizeof(buf)) < 0)
        return 0;
    const char *r = strrchr(buf, ')'); /* after the command name, which may hold anything */
    int pp = 0;
    return r && sscanf(r + 1, " %*c %d", &pp) == 1 ? (pid_t)pp : 0;
}

bool recovery_supervisor_alive(const struct recovery_scan *s)
{
    /* The run directory's flock is the supervisor's own (rundir.c): held, it runs. Free (or
     * no directory to ask), its pid is asked too: a corral from before the lock holds none. */
    if (s->run_dir[0] && rundir_locked(s->run_dir) == 1)
        return true;
    if (s->pid <= 0 || s->pid == getpid() || (kill(s->pid, 0) < 0 && errno == ESRCH))
        return false;
    if (proc_parent(s->pid) == getpid())
        return false; /* a child of ours (the zygote) that has the dead run's pid */
    /* A recycled pid is not the run: its command line must be corral's. */
    char p[64], buf[256] = {0};
    snprintf(p, sizeof(p), "/proc/%d/cmdline", (int)s->pid);
    _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (n <= 0)
        return false;
    const char *base = strrchr(buf, '/');
    return !strcmp(base ? base + 1 : buf, "corral");
}

/* ---- quarantine (recovery spec 3.1) ---- */

/* What the rebuilt model does not take from: an entry of one of these types, lost, loses no state
 * the resume needs (a tool call's files: unknown from there, wacp_restore_quarantined). Every other
 * type (workspaces, checkpoints, envelopes, tasks, rights, gates, signals, processes...) is
 * critical. */
static bool quarantinable(const char *type)
{
    static const char *const ok[] = {"agent_log",     "budget_warning",   "denial",
                                     "liveness_warning", "network_closed", "network_connect",
                                     "protocol_error", "protocol_message", "resource_discrepancy",
                                     "tool_call",      "trail_access_denied"};
    for (size_t i = 0; type && i < ARRAY_SIZE(ok); i++)
        if (!strcmp(type, ok[i]))
            return true;
    return false;
}

static int keep_one(const struct trail_entry *e, void *data)
{
    struct recovery_quarantined *x = data;
    x->seq = e->seq;
    snprintf(x->id, sizeof(x->id), "%s", e->id ? e->id : "");
    snprintf(x->type, sizeof(x->type), "%s", e->type ? e->type : "");
    snprintf(x->workspace, sizeof(x->workspace), "%s", e->workspace ? e->workspace : "");
    return 1;
}

/* Each workspace's states as its entries chain them: created idle, then each change from the
 * state the one before reached. */
struct chain {
    struct chain_ws {
        char id[64], state[24];
    } *v;
    size_t n, cap;
    char *why;
    size_t len;
};

static struct chain_ws *chain_find(struct chain *c, const char *id)
{
    for (size_t i = c->n; id && i-- > 0;)
        if (!strcmp(c->v[i].id, id))
            return &c->v[i];
    return NULL;
}

static int on_chain(const struct trail_entry *e, void *data)
{
    struct chain *c = data;
    if (!e->workspace)
        return 0;
    struct chain_ws *s = chain_find(c, e->workspace);
    if (!strcmp(e->type, "workspace_created")) {
        if (s)
            return 0;
        if (c->n == c->cap) {
            size_t cap = c->cap ? c->cap * 2 : 16;
            struct chain_ws *p = realloc(c->v, cap * sizeof(*p));
            if (!p)
                return -ENOMEM;
            c->v = p;
            c->cap = cap;
        }
        s = &c->v[c->n++];
        snprintf(s->id, sizeof(s->id), "%s", e->workspace);
        snprintf(s->state, sizeof(s->state), "idle");
        return 0;
    }
    cJSON *b = cJSON_ParseWithLength(e->body, e->body_len);
    const char *from = body_str(b, "from"), *to = body_str(b, "to");
    int rc = 0;
    if (s && (!from || !to || strcmp(from, s->state))) {
        snprintf(c->why, c->len,
                 "entry %llu: workspace %s changes state from %s, but the state it last reached is %s "
                 "(a damaged entry may have been one of its state changes)",
                 (unsigned long long)e->seq, e->workspace, from ? from : "(none)", s->state);
        rc = 1;
    } else if (s) {
        snprintf(s->state, sizeof(s->state), "%s", to);
    }
    cJSON_Delete(b);
    return rc;
}

int recovery_quarantine_check(const char *path, uint64_t started_seq, const struct trail_damage *d,
                              struct recovery_quarantine *q, char *why, size_t len, struct cerr *err)
{
    memset(q, 0, sizeof(*q));
    if (d->other || d->more || !d->n) {
        if (d->more)
            snprintf(why, len, "more than %d entries are damaged", TRAIL_DAMAGED_MAX);
        else
            snprintf(why, len, "%s", d->other ? "a link of the chain is broken too" : "no entry is damaged");
        return 1;
    }
    struct trail_reader *r;
    int rc = trail_reader_open(path, &r, err);
    if (rc < 0)
        return rc;
    for (size_t i = 0; rc >= 0 && i < d->n && i < TRAIL_DAMAGED_MAX; i++) {
        struct trail_filter f = {.after_seq = d->seq[i] - 1, .limit = 1};
        struct recovery_quarantined *x = &q->e[q->n];
        rc = trail_query(r, &f, keep_one, x, err);
        if (rc < 0)
            break;
        rc = 0;
        if (x->seq != d->seq[i] || !quarantinable(x->type)) {
            snprintf(why, len,
                     "entry %llu is damaged and is recorded as %s, an entry the rebuilt run depends on",
                     (unsigned long long)d->seq[i], x->type[0] ? x->type : "(unreadable)");
            rc = 1;
            break;
        }
        q->n++;
    }
    /* The recorded type of a damaged entry is itself untrusted: had it been a state change, the
     * states would no longer chain (the one after it starts from a state never reached). */
    struct chain c = {.why = why, .len = len};
    static const char *const types[] = {"workspace_created", "workspace_state_changed"};
    for (size_t i = 0; rc == 0 && i < ARRAY_SIZE(types); i++) {
        struct trail_filter f = {.type = types[i], .after_seq = started_seq};
        rc = trail_query(r, &f, on_chain, &c, err);
    }
    free(c.v);
    trail_reader_close(r);
    if (rc == -ENOMEM && !err->msg[0])
        cerr_set(err, ENOMEM, "out of memory scanning the trail");
    return rc;
}

/* ---- replay ---- */

struct replay {
    const struct recovery_quarantine *q;
    size_t qi; /* the next quarantined entry, in sequence order */
    struct wacp *w;
    uint64_t n;
    int64_t last_us;
    char **cgroups; /* the dead run's agent cgroups, as process_started recorded them */
    size_t n_cg, cap_cg;
};

/* SIGKILL what DIR/cgroup.procs lists; whether it listed nothing. */
static bool procs_gone(const char *dir)
{
    char p[PATH_MAX + 16];
    snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
    FILE *f = fopen(p, "re");
    if (!f)
        return true;
    long pid;
    bool none = true;
    while (fscanf(f, "%ld", &pid) == 1)
        if (pid > 1) {
            kill((pid_t)pid, SIGKILL);
            none = false;
        }
    fclose(f);
    return none;
}

/* The dead run's sandboxes die with it (their init has PDEATHSIG), but not at once: before its
 * agents start again on the same files, whatever is left in the cgroups the dead supervisor
 * recorded (REL under each mounted hierarchy, and their nested command cgroups) is killed and
 * waited for, for 5 s at most. Only those cgroups: nothing the dead run did not create. The empty
 * cgroups are then removed by the sweep of the first sandbox the resumer makes (sandbox/cgroup.c). */
static void reap_dead(char *const *rels, size_t n)
{
    for (int tries = 0; tries < 500; tries++) {
        bool all_gone = true;
        DIR *top = opendir("/sys/fs/cgroup");
        struct dirent *m;
        while (top && (m = readdir(top))) {
            if (m->d_name[0] == '.' && m->d_name[1] && m->d_name[1] != '.')
                continue;
            if (!strcmp(m->d_name, ".."))
                continue;
            for (size_t i = 0; i < n; i++) {
                char d[PATH_MAX];
                int len = !strcmp(m->d_name, ".") ? snprintf(d, sizeof(d), "/sys/fs/cgroup%s", rels[i])
                                                  : snprintf(d, sizeof(d), "/sys/fs/cgroup/%s%s",
                                                             m->d_name, rels[i]);
                if (len <= 0 || len >= (int)sizeof(d))
                    continue;
                DIR *sub = opendir(d);
                if (!sub)
                    continue;
                struct dirent *c;
                while ((c = readdir(sub)))
                    if (c->d_type == DT_DIR && c->d_name[0] != '.') {
                        char cd[PATH_MAX + 256];
                        snprintf(cd, sizeof(cd), "%s/%s", d, c->d_name);
                        all_gone &= procs_gone(cd);
                    }
                closedir(sub);
                all_gone &= procs_gone(d);
            }
        }
        if (top)
            closedir(top);
        if (all_gone)
            return;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static int on_replay(const struct trail_entry *e, void *data)
{
    struct replay *rp = data;
    rp->n++;
    while (rp->q && rp->qi < rp->q->n && rp->q->e[rp->qi].seq < e->seq)
        rp->qi++;
    if (rp->q && rp->qi < rp->q->n && rp->q->e[rp->qi].seq == e->seq) {
        wacp_restore_quarantined(rp->w, e->type, e->workspace);
        return 0; /* nothing of it is trusted, not even its time */
    }
    rp->last_us = e->ts_us;
    cJSON *b = cJSON_ParseWithLength(e->body, e->body_len);
    const char *cg = b && !strcmp(e->type, "process_started") ? body_str(b, "cgroup") : NULL;
    if (cg && cg[0] == '/' && !strstr(cg, "/..") && strlen(cg) < PATH_MAX / 2) {
        if (rp->n_cg == rp->cap_cg) {
            size_t cap = rp->cap_cg ? rp->cap_cg * 2 : 16;
            char **p = realloc(rp->cgroups, cap * sizeof(*p));
            if (!p) {
                cJSON_Delete(b);
                return -ENOMEM;
            }
            rp->cgroups = p;
            rp->cap_cg = cap;
        }
        if (!(rp->cgroups[rp->n_cg] = strdup(cg))) {
            cJSON_Delete(b);
            return -ENOMEM;
        }
        rp->n_cg++;
    }
    int rc = b ? wacp_restore_entry(rp->w, e->type, e->workspace, e->ts_us, b) : 0;
    cJSON_Delete(b);
    return rc;
}

int recovery_replay(const char *path, uint64_t after_seq, const struct recovery_quarantine *q,
                    struct wacp *w, uint64_t *examined, int64_t *last_us, struct cerr *err)
{
    struct trail_reader *r;
    int rc = trail_reader_open(path, &r, err);
    if (rc < 0)
        return rc;
    struct replay rp = {.w = w, .q = q};
    /* From the run's own supervisor_started on (what it recorded is read from there). */
    struct trail_filter f = {.after_seq = after_seq ? after_seq - 1 : 0};
    rc = trail_query(r, &f, on_replay, &rp, err);
    trail_reader_close(r);
    if (rc >= 0)
        reap_dead(rp.cgroups, rp.n_cg);
    for (size_t i = 0; i < rp.n_cg; i++)
        free(rp.cgroups[i]);
    free(rp.cgroups);
    if (rc == -ENOMEM && !err->msg[0])
        cerr_set(err, ENOMEM, "out of memory rebuilding the run from its trail");
    else if (rc < 0 && !err->msg[0])
        cerr_set(err, -rc, "cannot read the trail %s", path);
    *examined = rp.n;
    *last_us = rp.last_us;
    return rc < 0 ? rc : 0;
}
