/* supervisor/runtime/exec_record.c: see exec_record.h. Bodies follow docs/trail.md. */
#include "supervisor/runtime/exec_record.h"

#include "policy/policy.h"
#include "supervisor/trail/trail.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void append(struct exec_record *r, const char *type, cJSON *body)
{
    if (!r->trail || r->failed) {
        cJSON_Delete(body);
        return;
    }
    struct cerr e = {0};
    if (!body || trail_append(r->trail, r->workspace, "protocol", type, body, NULL, &e) < 0) {
        r->failed = true;
        cerr_set(&r->err, EIO, "%s", e.msg[0] ? e.msg : "out of memory");
    }
    cJSON_Delete(body);
}

static int commit(struct exec_record *r)
{
    if (!r->trail)
        return 0;
    if (!r->failed && trail_commit(r->trail, &r->err) < 0)
        r->failed = true;
    return r->failed ? -EIO : 0;
}

static cJSON *strings(const char *const *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && v && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

static cJSON *profile_json(const struct sandbox_profile *p, double timeout)
{
    static const char *const ns[] = {"user", "mount", "pid", "ipc", "uts", "net", "cgroup"};
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "namespaces", strings(ns, ARRAY_SIZE(ns)));
    cJSON *m = cJSON_AddArrayToObject(o, "mounts");
    for (size_t i = 0; i < p->n_binds; i++) {
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "source", p->binds[i].host);
        cJSON_AddStringToObject(b, "target", p->binds[i].inside ? p->binds[i].inside : p->binds[i].host);
        cJSON_AddStringToObject(b, "flags",
                                p->binds[i].writable ? "rw,nosuid,nodev,idmap" : "ro,nosuid,nodev");
        cJSON_AddItemToArray(m, b);
    }
    cJSON *sc = cJSON_AddObjectToObject(o, "seccomp");
    cJSON_AddStringToObject(sc, "default_action",
                            p->seccomp.notify ? "user_notif(recorded, then errno(EPERM))"
                                              : "errno(EPERM)");
    cJSON *g = cJSON_AddArrayToObject(sc, "groups");
    for (uint32_t bit = 1; bit; bit <<= 1)
        if (p->seccomp.groups & bit && sandbox_seccomp_group_name(bit))
            cJSON_AddItemToArray(g, cJSON_CreateString(sandbox_seccomp_group_name(bit)));
    cJSON_AddItemToObject(sc, "allow", strings(p->seccomp.allow, p->seccomp.n_allow));
    cJSON_AddItemToObject(sc, "deny", strings(p->seccomp.deny, p->seccomp.n_deny));
    cJSON_AddStringToObject(sc, "sockets", p->seccomp.network ? "unix,inet,inet6" : "unix");
    cJSON *bu = cJSON_AddObjectToObject(o, "budgets");
    cJSON_AddNumberToObject(bu, "memory_bytes", (double)p->limits.memory);
    cJSON_AddNumberToObject(bu, "pids", (double)p->limits.pids);
    cJSON_AddNumberToObject(bu, "cpus", p->limits.cpus);
    cJSON_AddNumberToObject(bu, "timeout_sec", timeout);
    cJSON_AddNumberToObject(bu, "tmp_bytes", (double)p->limits.tmp_size);
    cJSON_AddStringToObject(o, "network",
                            p->net == SANDBOX_NET_LOOPBACK ? "loopback"
                            : p->net == SANDBOX_NET_PROXY  ? "proxy"
                                                           : "none");
    cJSON_AddBoolToObject(o, "landlock", p->landlock);
    cJSON_AddNumberToObject(o, "uid", p->uid);
    cJSON_AddNumberToObject(o, "host_uid", p->host_uid);
    return o;
}

cJSON *exec_record_profile_json(const struct sandbox_profile *p, double timeout)
{
    return profile_json(p, timeout);
}

int exec_record_start(struct exec_record *r, struct trail *t, const struct sandbox_profile *p,
                      const struct policy_role_view *v, const char *program, char *const argv[],
                      double timeout, struct cerr *err)
{
    memset(r, 0, sizeof(*r));
    r->trail = t;
    r->timeout = timeout;
    r->role = v->name;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(r->workspace, sizeof(r->workspace), "exec-%ld-%lld", (long)getpid(),
             (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "purpose", "agent");
    cJSON_AddStringToObject(b, "role", v->name);
    cJSON_AddStringToObject(b, "program", program);
    size_t argc = 0;
    while (argv[argc])
        argc++;
    cJSON_AddItemToObject(b, "argv", strings((const char *const *)argv, argc));
    cJSON_AddItemToObject(b, "profile", profile_json(p, timeout));
    append(r, "sandbox_created", b);
    if (commit(r) < 0)
        return cerr_set(err, EIO,
                        "trail: cannot record the sandbox before creating it, so it is not created: %s",
                        r->err.msg);
    return 0;
}

void exec_record_spawned(struct exec_record *r, pid_t pid)
{
    r->pid = pid;
    cJSON *b = cJSON_CreateObject();
    cJSON_AddNumberToObject(b, "pid", pid);
    cJSON_AddStringToObject(b, "purpose", "agent");
    append(r, "process_started", b);
}

void exec_record_failed(struct exec_record *r, const char *why)
{
    cJSON *b = cJSON_CreateObject();
    cJSON_AddNullToObject(b, "pid");
    cJSON_AddNullToObject(b, "status");
    cJSON_AddNullToObject(b, "signal");
    cJSON_AddBoolToObject(b, "timed_out", false);
    cJSON_AddStringToObject(b, "error", why);
    append(r, "process_exited", b);
}

static void budget(struct exec_record *r, const char *dim, double consumed, double limit)
{
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "workspace_id", r->workspace);
    cJSON_AddStringToObject(b, "budget_dimension", dim);
    cJSON_AddNumberToObject(b, "consumed", consumed);
    cJSON_AddNumberToObject(b, "limit", limit);
    append(r, "budget_exceeded", b);
}

static bool crossed(double used, double limit)
{
    return limit > 0 && used * 100.0 >= limit * EXEC_RECORD_WARN_PERCENT;
}

static int warn(struct exec_record *r, int i, const char *dim, double consumed, double limit)
{
    if (r->warned[i])
        return 0;
    r->warned[i] = true;
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "workspace_id", r->workspace);
    cJSON_AddStringToObject(b, "budget_dimension", dim);
    cJSON_AddNumberToObject(b, "consumed", consumed);
    cJSON_AddNumberToObject(b, "limit", limit);
    cJSON_AddNumberToObject(b, "threshold_percent", EXEC_RECORD_WARN_PERCENT);
    append(r, "budget_warning", b);
    return 1;
}

int exec_record_sample(struct exec_record *r, const struct sandbox_result *u,
                       const struct sandbox_profile *p)
{
    if (!r->trail)
        return 0;
    int n = 0;
    /* The peak, not the usage of the moment: a spike between two samples still counts. */
    if (crossed((double)u->memory_peak, (double)p->limits.memory))
        n += warn(r, 0, "memory", (double)u->memory_peak, (double)p->limits.memory);
    if (crossed((double)u->pids_current, (double)p->limits.pids))
        n += warn(r, 1, "pids", (double)u->pids_current, (double)p->limits.pids);
    if (crossed(u->wall_sec, r->timeout))
        n += warn(r, 2, "time", u->wall_sec, r->timeout);
    return n;
}

void exec_record_exited(struct exec_record *r, const struct sandbox_result *res, bool timed_out,
                        const struct sandbox_profile *p)
{
    struct sandbox_result fin = *res;
    if (res->pids_limited)
        fin.pids_current = p->limits.pids; /* a fork was refused: usage reached the limit */
    exec_record_sample(r, &fin, p);
    if (res->oom)
        budget(r, "memory", (double)res->memory_peak, (double)p->limits.memory);
    if (res->pids_limited)
        budget(r, "pids", (double)p->limits.pids, (double)p->limits.pids);
    if (timed_out)
        budget(r, "time", res->wall_sec, r->timeout);
    cJSON *b = cJSON_CreateObject();
    cJSON_AddNumberToObject(b, "pid", r->pid);
    if (res->exited)
        cJSON_AddNumberToObject(b, "status", res->exit_code);
    else
        cJSON_AddNullToObject(b, "status");
    if (res->exited)
        cJSON_AddNullToObject(b, "signal");
    else
        cJSON_AddNumberToObject(b, "signal", res->signal);
    cJSON_AddBoolToObject(b, "timed_out", timed_out);
    cJSON *u = cJSON_AddObjectToObject(b, "usage");
    cJSON_AddNumberToObject(u, "cpu_us", (double)res->cpu_usec);
    cJSON_AddNumberToObject(u, "memory_peak_bytes", (double)res->memory_peak);
    cJSON_AddNumberToObject(u, "wall_us", res->wall_sec * 1e6);
    append(r, "process_exited", b);
}

void exec_record_recovered(void *data)
{
    struct exec_record *r = data;
    r->failed = false;
}

int exec_record_finish(struct exec_record *r)
{
    return commit(r);
}
