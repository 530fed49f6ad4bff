/* supervisor/runtime/run.c: `corral run`, the process side of a WACP session. Per workspace: a sandbox
 * derived from the agent's role, a pipe pair carrying JSON-RPC (tools and wacp requests), a
 * tool connection against the workspace's own directory, its stderr in a log file. The model
 * (wacp.h) decides; this file starts and stops what it decides, feeds it agent requests, agent
 * ends and the clock, and answers `corral ps` on the control socket. One thread, one loop. */
#include "supervisor/runtime/run.h"

#include "supervisor/conn/agent.h"
#include "supervisor/conn/dispatch.h"
#include "supervisor/listeners/handoff.h"
#include "supervisor/runtime/control.h"
#include "supervisor/runtime/control_human.h"
#include "supervisor/runtime/exec_record.h"
#include "supervisor/runtime/recovery.h"
#include "supervisor/runtime/role_tools.h"
#include "supervisor/runtime/rundir.h"
#include "supervisor/conn/loop.h"
#include "supervisor/conn/pool.h"
#include "supervisor/trail/scrub.h"
#include "supervisor/egress/hub.h"
#include "supervisor/egress/setup.h"
#include "supervisor/trail/trail.h"
#include "supervisor/wacp/wacp.h"
#include "tools/broker/broker.h"
#include "tools/session.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LOG_TAIL_MAX 65536                /* bytes of an agent's stderr kept in the trail at its end */
#define LOG_FILE_MAX ((uint64_t)16 << 20) /* RLIMIT_FSIZE of an agent: caps its log file */
#define RUN_FDS_PER_AGENT 8
#define RUN_FDS_RESERVE 64

struct run;

struct run_ws {
    struct run *r;
    char *id;
    char *role;
    char *log_path;
    struct policy_role_view view;
    struct sandbox_profile prof;
    struct sandbox_bind *binds;
    char **argv;
    char **envp;
    struct sandbox_child *child;
    struct agent *agent;
    int to_agent, from_agent; /* our ends of its stdin and stdout */
    int root_fd;
    struct role_tools tools;
    char *root_host_path; /* the model's dir, kept alive with ours for the commands' binds */
    struct tool_session *session;
    struct loop_watch pid_watch, grace_watch, wall_watch, live_watch;
    char *parent;                  /* the parent workspace, told of this one's silence */
    uint64_t live_lines, live_cpu; /* pipe lines and CPU at the last liveness check */
    int64_t live_since_us;         /* when they last changed (unix microseconds) */
    bool live_blocked;             /* liveness moved its workspace to blocked (not the agent) */
    bool exited, conn_ended, stopping, finalized;
    /* What happened to it while the trail could not be written (degraded mode): applied to the
     * model, in this order, once the trail is writable again. */
    bool wall_pending, abuse_pending, exit_pending;
    struct sandbox_result exit_res;
    struct egress_setup egress_setup; /* network "proxy": its rules and listeners */
    struct egress *egress;            /* its proxies, on the run's loop */
    struct egress_hub *egress_hub;    /* its command sandboxes' proxies */
    struct run_ws *next;
};

struct run {
    const struct run_opts *o;
    struct loop *loop;
    struct pool *pool;
    struct agent_host *host;
    struct trail *trail;
    struct trail_reader *reader; /* for wacp/trail.query, opened on first use */
    struct wacp *w;
    struct run_ws *list;
    struct loop_watch deadline_watch, sig_watch, timeout_watch, ctl_watch;
    struct control *ctl;
    struct handoff *cmd_denials; /* command sandboxes' seccomp listeners */
    uint64_t armed;              /* the deadline the timer is set for (UINT64_MAX: none) */
    int sig_fd;
    int run_fd, logs_fd; /* the run directory (made fresh, root's, 0700) and its logs/ */
    unsigned signals;
    bool shutting_down, timed_out;
    bool trail_failed; /* fatal: the model changed in a batch the trail lost, so the run stops */
    bool ending;       /* past the loop: nothing starts any more (a copy finishing in pool_free) */
    struct cerr trail_err;
    uint64_t model_seq; /* the last entry this run staged: lost if past the trail's head */
    /* The model's entries of the batch not yet committed, kept to be recorded again if its
     * commit fails (degraded mode without loss); bounded by RUN_KEPT_MAX bytes. */
    struct kept *kept, **kept_tail;
    size_t kept_bytes;
    uint64_t kept_lost_seq; /* the last model entry that could not be kept (0: none) */
    struct degraded {   /* degraded mode (docs/trail.md): the trail cannot be written */
        bool on;
        int64_t since_us;
        uint64_t since_ms;
        unsigned attempts;
        uint64_t refused_requests, tool_refusals_before;
        char why[400];
        struct loop_watch retry_watch;
    } dg;
    struct deferred *deferred; /* wacp requests waiting on a gate */
    uint64_t next_ref;
    uint64_t auth_failures; /* refused callers of the control socket, for the flood bound */
};

/* One entry of the model's in a batch not yet committed (degraded mode without loss). */
struct kept {
    uint64_t seq;
    char *ws, *actor, *type, *body; /* body: its JSON text */
    void *blob;                     /* the blob its body names, stored in the same batch */
    size_t blob_len, bytes;
    struct kept *next;
};

/* A request of an agent the model deferred (a gate holds it): answered by hook_reply. */
struct deferred {
    uint64_t ref;
    char *ws;
    cJSON *id;
    struct deferred *next;
};

/* A tool call held for a person (the tool_call gate): released by on_tool_decided. */
struct held_call {
    struct run *r;
    char *ws;
    cJSON *id, *args;
    char *tool;
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int64_t wall_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static struct run_ws *run_ws_find(struct run *r, const char *id)
{
    for (struct run_ws *s = r->list; s; s = s->next)
        if (!strcmp(s->id, id))
            return s;
    return NULL;
}

/* ---- the trail ------------------------------------------------------------------------------ */

/* Whether nothing can be recorded now: degraded mode, or a failure this turn noticed first. */
static bool trail_down(const struct run *r)
{
    return r->trail_failed || r->dg.on || trail_degraded(r->trail);
}

/* ---- the model's entries of the open batch, kept (degraded mode without loss) ----------------
 * The model records before it acts, then acts: when the batch's commit fails, its state has moved
 * on while the trail lost the entries. They are kept here until their batch commits, to be
 * recorded again, in order, when the trail is writable again (on_degraded_retry). The bound is on
 * one batch's model entries: a batch past it is lost as before (the run stops). */
#define RUN_KEPT_MAX (16u << 20)

static void kept_free(struct kept *k)
{
    free(k->ws);
    free(k->actor);
    free(k->type);
    free(k->body);
    free(k->blob);
    free(k);
}

/* Entries whose batch committed are no longer needed. */
static void kept_prune(struct run *r, uint64_t committed)
{
    while (r->kept && r->kept->seq <= committed) {
        struct kept *k = r->kept;
        r->kept = k->next;
        r->kept_bytes -= k->bytes;
        kept_free(k);
    }
    if (!r->kept)
        r->kept_tail = &r->kept;
}

static void kept_push(struct run *r, uint64_t seq, const char *ws, const char *actor,
                      const char *type, const cJSON *body, const void *blob, size_t blob_len)
{
    kept_prune(r, trail_head_seq(r->trail));
    struct kept *k = calloc(1, sizeof(*k));
    if (k) {
        k->seq = seq;
        k->ws = ws ? strdup(ws) : NULL;
        k->actor = strdup(actor);
        k->type = strdup(type);
        k->body = body ? cJSON_PrintUnformatted(body) : strdup("{}");
        k->blob = blob_len ? malloc(blob_len) : NULL;
        k->blob_len = blob_len;
        if (k->blob)
            memcpy(k->blob, blob, blob_len);
        k->bytes = sizeof(*k) + (k->body ? strlen(k->body) : 0) + blob_len;
    }
    if (!k || (ws && !k->ws) || !k->actor || !k->type || !k->body || (blob_len && !k->blob) ||
        r->kept_bytes + k->bytes > RUN_KEPT_MAX) {
        if (k)
            kept_free(k);
        r->kept_lost_seq = seq;
        return;
    }
    *r->kept_tail = k;
    r->kept_tail = &k->next;
    r->kept_bytes += k->bytes;
}

/* Whether every model entry past the trail's head is kept (or there is none). */
static bool kept_covers(struct run *r)
{
    return r->kept_lost_seq <= trail_head_seq(r->trail);
}

/* Records the kept entries again (the trail is writable again, the batch is open); how many. */
static int kept_replay(struct run *r, unsigned *n, struct cerr *e)
{
    uint64_t head = trail_head_seq(r->trail);
    *n = 0;
    for (struct kept *k = r->kept; k; k = k->next) {
        if (k->seq <= head)
            continue;
        char hex[65];
        if (k->blob && trail_blob_put(r->trail, k->blob, k->blob_len, hex, e) < 0)
            return -EIO;
        cJSON *b = cJSON_Parse(k->body);
        uint64_t seq = 0;
        int rc = b ? trail_append(r->trail, k->ws, k->actor, k->type, b, &seq, e)
                   : cerr_set(e, ENOMEM, "out of memory");
        cJSON_Delete(b);
        if (rc < 0)
            return rc;
        r->model_seq = seq;
        (*n)++;
    }
    return 0;
}

static void kept_clear(struct run *r)
{
    kept_prune(r, UINT64_MAX);
    r->kept_lost_seq = 0;
}

/* A failed append of the model's is no harm by itself: the model records before it acts, so the
 * request is refused. What matters is whether a later commit loses entries it staged: those are
 * kept until their batch commits. BLOB: a blob the body names, put in this batch. */
static int record_blob(struct run *r, const char *ws, const char *actor, const char *type,
                       const cJSON *body, const void *blob, size_t blob_len)
{
    if (trail_down(r))
        return -EIO;
    struct cerr e = {0};
    static const cJSON empty = {.type = cJSON_Object};
    uint64_t seq = 0;
    int rc = trail_append(r->trail, ws, actor, type, body ? body : &empty, &seq, &e);
    if (rc == 0) {
        if (seq > r->model_seq)
            r->model_seq = seq;
        kept_push(r, seq, ws, actor, type, body, blob, blob_len);
    } else if (rc == -EIO || trail_degraded(r->trail))
        r->trail_err = e;
    return rc;
}

static int record(struct run *r, const char *ws, const char *actor, const char *type, const cJSON *body)
{
    return record_blob(r, ws, actor, type, body, NULL, 0);
}

static int hook_record(void *data, const char *ws, const char *actor, const char *type,
                       const cJSON *body)
{
    return record(data, ws, actor, type, body);
}

static int hook_commit(void *data)
{
    struct run *r = data;
    struct cerr e = {0};
    if (trail_down(r))
        return -EIO;
    /* A failure loses entries the model staged: the loop's check stops the run (model_seq). */
    int rc = trail_commit(r->trail, &e);
    if (rc < 0)
        r->trail_err = e;
    return rc;
}

/* hooks.offload: the model's file work (copies, snapshots, integration's writes) on the pool
 * tool calls use. Not a long job: those wait for the slots commands share, and agents running
 * `sleep` for minutes would hold a copy back; file work is bounded (files.h limits) like a
 * file tool call, so it runs on any free thread. DONE runs
 * on the loop in the turn the pool reports it; what it records commits at that turn's end,
 * before the answer it stages is released. */
struct offload_job {
    struct pool_job pj;
    void (*work)(void *arg);
    void (*done)(void *arg);
    void *arg;
};

static void offload_run(struct pool_job *j)
{
    struct offload_job *o = (struct offload_job *)j;
    o->work(o->arg);
}

static void offload_done(struct pool_job *j)
{
    struct offload_job *o = (struct offload_job *)j;
    o->done(o->arg);
    free(o);
}

static int hook_offload(void *data, void (*work)(void *arg), void (*done)(void *arg), void *arg)
{
    struct run *r = data;
    struct offload_job *o = calloc(1, sizeof(*o));
    if (!o)
        return -ENOMEM;
    o->pj.run = offload_run;
    o->pj.done = offload_done;
    o->pj.background = true;
    o->work = work;
    o->done = done;
    o->arg = arg;
    pool_submit(r->pool, &o->pj);
    return 0;
}

/* ---- starting an agent ---------------------------------------------------------------------- */

static void run_ws_free(struct run_ws *s)
{
    if (!s)
        return;
    egress_hub_free(s->egress_hub);
    egress_free(s->egress); /* records the end of each connection still open */
    egress_setup_free(&s->egress_setup);
    sandbox_child_free(s->child);
    if (s->to_agent >= 0)
        close(s->to_agent);
    if (s->from_agent >= 0)
        close(s->from_agent);
    if (s->root_fd >= 0)
        close(s->root_fd);
    tool_session_free(s->session);
    free(s->root_host_path);
    for (size_t i = 0; s->argv && s->argv[i]; i++)
        free(s->argv[i]);
    free(s->argv);
    for (size_t i = 0; s->envp && s->envp[i]; i++)
        free(s->envp[i]);
    free(s->envp);
    for (size_t i = 0; s->binds && i < s->prof.n_binds; i++)
        if (i >= s->view.sandbox.n_binds)
            free((char *)s->binds[i].host);
    free(s->binds);
    free(s->id);
    free(s->parent);
    free(s->role);
    free(s->log_path);
    free(s);
}

/* argv of the agent with every argument that names an existing host file made absolute and
 * bound read-only at that path, so `python3 examples/agents/worker.py` works in the sandbox.
 * The policy is the admin's: these files are trusted code, visible but never writable. */
static int build_argv(struct run_ws *s, const struct policy_agent *ag, struct cerr *err)
{
    size_t n = ag->argc;
    s->argv = calloc(n + 1, sizeof(char *));
    s->binds = calloc(s->view.sandbox.n_binds + n, sizeof(*s->binds));
    if (!s->argv || !s->binds)
        return cerr_set(err, ENOMEM, "out of memory");
    size_t nb = 0;
    for (size_t i = 0; i < s->view.sandbox.n_binds; i++)
        s->binds[nb++] = s->view.sandbox.binds[i];
    for (size_t i = 0; i < n; i++) {
        const char *arg = ag->argv[i];
        struct stat st;
        char real[PATH_MAX];
        if (i > 0 && arg[0] != '-' && stat(arg, &st) == 0 && S_ISREG(st.st_mode) &&
            realpath(arg, real)) {
            char *h = strdup(real);
            s->argv[i] = strdup(real);
            if (!h || !s->argv[i]) {
                free(h);
                return cerr_set(err, ENOMEM, "out of memory");
            }
            s->binds[nb++] = (struct sandbox_bind){.host = h, .inside = NULL, .writable = false};
        } else if (!(s->argv[i] = strdup(arg))) {
            return cerr_set(err, ENOMEM, "out of memory");
        }
    }
    s->prof.binds = s->binds;
    s->prof.n_binds = nb;
    return 0;
}

/* Puts ENTRY ("KEY=VALUE", taken) in ENV, replacing an entry with the same key: the last word
 * wins, so a policy's PATH replaces the default one instead of standing behind it unseen. */
static void run_env_put(char **env, size_t *n, char *entry)
{
    const char *eq = entry ? strchr(entry, '=') : NULL;
    size_t kl = eq ? (size_t)(eq - entry) + 1 : 0;
    for (size_t i = 0; kl && i < *n; i++)
        if (env[i] && !strncmp(env[i], entry, kl)) {
            free(env[i]);
            env[i] = entry;
            return;
        }
    env[(*n)++] = entry;
}

/* The default environment, the policy's agent env on top, then the runtime's own variables
 * (which neither may override: they are the runtime's word on who the agent is). */
static int build_env(struct run_ws *s, const struct policy_agent *ag, struct cerr *err)
{
    size_t nd = 0;
    while (sandbox_default_env[nd])
        nd++;
    s->envp = calloc(nd + 8 + ag->n_env + 3, sizeof(char *));
    if (!s->envp)
        return cerr_set(err, ENOMEM, "out of memory");
    size_t n = 0;
    bool oom = false;
    char *v;
    for (size_t i = 0; i < nd; i++)
        if ((v = strdup(sandbox_default_env[i])))
            run_env_put(s->envp, &n, v);
        else
            oom = true;
    for (size_t i = 0; s->prof.net == SANDBOX_NET_PROXY && egress_env()[i] && i < 8; i++)
        if ((v = strdup(egress_env()[i])))
            run_env_put(s->envp, &n, v);
        else
            oom = true;
    for (size_t i = 0; i < ag->n_env; i++)
        if ((v = strdup(ag->env[i])))
            run_env_put(s->envp, &n, v);
        else
            oom = true;
    if (asprintf(&v, "CORRAL_WORKSPACE=%s", s->id) >= 0)
        run_env_put(s->envp, &n, v);
    else
        oom = true;
    if (asprintf(&v, "CORRAL_ROLE=%s", s->role) >= 0)
        run_env_put(s->envp, &n, v);
    else
        oom = true;
    if (oom)
        return cerr_set(err, ENOMEM, "out of memory");
    s->prof.envp = s->envp;
    return 0;
}

static void on_pid_end(void *data, uint32_t events);
static int on_tool_approval(struct agent *a, const cJSON *id, const char *tool, const cJSON *args,
                            void *data);
static void on_conn_end(struct agent *a, enum agent_end why, void *data);
static void on_wacp(struct agent *a, const struct rpc_msg *m, void *data);
static void on_wall_time(void *data, uint32_t events);
static void on_liveness(void *data, uint32_t events);

static int hook_start(void *data, const struct wacp_ws_info *info, struct cerr *err)
{
    struct run *r = data;
    if (r->ending)
        return cerr_set(err, ECANCELED, "the run is ending");
    const struct policy *pol = r->o->policy;
    const struct policy_agent *ag = policy_agent_find(pol, info->agent);
    if (!ag)
        return cerr_set(err, ENOENT, "the policy has no agent \"%.64s\"", info->agent);
    struct run_ws *s = calloc(1, sizeof(*s));
    if (!s)
        return cerr_set(err, ENOMEM, "out of memory");
    s->r = r;
    s->to_agent = s->from_agent = s->root_fd = -1;
    s->id = strdup(info->id);
    s->role = strdup(info->role);
    s->parent = info->parent ? strdup(info->parent) : NULL;
    if (!s->id || !s->role || (info->parent && !s->parent) ||
        asprintf(&s->log_path, "%s.log", info->id) < 0) {
        s->log_path = NULL;
        run_ws_free(s);
        return cerr_set(err, ENOMEM, "out of memory");
    }
    int rc = policy_role_resolve(pol, info->role, &s->view, err);
    if (rc < 0) {
        run_ws_free(s);
        return rc;
    }
    s->prof = s->view.sandbox;
    /* The budgets the model granted (never above the parent's) are the cgroup's limits. */
    if (info->budgets.memory)
        s->prof.limits.memory = info->budgets.memory;
    if (info->budgets.pids)
        s->prof.limits.pids = info->budgets.pids;
    if (info->budgets.cpus > 0)
        s->prof.limits.cpus = info->budgets.cpus;
    s->prof.limits.fsize = LOG_FILE_MAX;
    s->prof.hostname = "corral";
    /* Workers of one agent share a profile: the next one's sandbox is prepared in the
     * background while this one starts, so a creation costs the loop a start, not a sandbox. */
    s->prof.prepare_next = true;
    if (s->prof.net == SANDBOX_NET_PROXY) {
        if ((rc = egress_setup_init(&s->egress_setup, s->view.egress, NULL, 0, NULL, 0, NULL, 0, err)) <
            0) {
            run_ws_free(s);
            return rc;
        }
        egress_setup_profile(&s->egress_setup, &s->prof);
        s->prof.prepare_next = false; /* its listeners are made at its own start */
    }
    if ((rc = build_argv(s, ag, err)) < 0 || (rc = build_env(s, ag, err)) < 0) {
        run_ws_free(s);
        return rc;
    }

    /* Write-ahead: the sandbox is recorded, with its whole profile, before it exists. */
    cJSON *b = cJSON_CreateObject();
    cJSON *argv = cJSON_CreateArray();
    for (size_t i = 0; s->argv[i]; i++)
        cJSON_AddItemToArray(argv, cJSON_CreateString(s->argv[i]));
    bool ok = b && cJSON_AddStringToObject(b, "purpose", "agent") &&
              cJSON_AddStringToObject(b, "agent", info->agent) &&
              cJSON_AddStringToObject(b, "role", info->role) &&
              cJSON_AddStringToObject(b, "program", ag->binary) &&
              cJSON_AddItemToObject(b, "argv", argv) &&
              cJSON_AddItemToObject(b, "profile",
                                    exec_record_profile_json(&s->prof, info->budgets.wall_time));
    rc = ok ? record(r, info->id, "protocol", "sandbox_created", b) : -ENOMEM;
    cJSON_Delete(b);
    if (rc < 0) {
        run_ws_free(s);
        return cerr_set(err, EIO, "the trail cannot record the sandbox, so it is not created");
    }

    int in[2] = {-1, -1}, out[2] = {-1, -1};
    /* Beneath the run directory's own fd, made fresh: nothing another user planted is written through. */
    /* A recovered agent appends to the log its dead predecessor left. */
    _cleanup_close_ int logfd =
        openat(r->logs_fd, s->log_path,
               O_WRONLY | O_CREAT | (info->recovered ? 0 : O_EXCL) | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
               0600);
    if (logfd < 0 || pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
        int e = errno;
        if (in[0] >= 0) {
            close(in[0]);
            close(in[1]);
        }
        run_ws_free(s);
        return cerr_set(err, e, "cannot set up the agent's pipes or log %s: %s", s->log_path,
                        strerror(e));
    }
    struct sandbox_stdio stdio = {.in = in[0], .out = out[1], .err = logfd};
    rc = sandbox_spawn(&s->prof, ag->binary, s->argv, &stdio, &s->child, err);
    close(in[0]);
    close(out[1]);
    s->to_agent = in[1];
    s->from_agent = out[0];
    if (rc < 0) {
        run_ws_free(s);
        return rc;
    }
    cJSON *pb = cJSON_CreateObject();
    cJSON_AddNumberToObject(pb, "pid", sandbox_child_pid(s->child));
    cJSON_AddStringToObject(pb, "agent", info->agent);
    cJSON_AddStringToObject(pb, "cgroup", sandbox_child_cgroup(s->child));
    record(r, info->id, "protocol", "process_started", pb);
    cJSON_Delete(pb);
    struct egress_opts eo = {.trail = r->trail, .workspace = info->id, .actor = info->role};
    if (s->prof.net == SANDBOX_NET_PROXY &&
        ((rc = egress_setup_start(&s->egress_setup, r->loop, s->child, &eo, &s->egress, err)) < 0 ||
         (s->view.authority.commands &&
          (rc = egress_hub_new(r->loop, &s->egress_setup.policy, &s->egress_setup.spec, &eo,
                               &s->egress_hub, err)) < 0))) {
        sandbox_child_signal(s->child, SIGKILL);
        run_ws_free(s);
        return rc;
    }

    /* Its tools act on its own directory only: the kernel resolves every path beneath it. */
    /* The root's directory is the admin's project: the one the model opened at the start with no
     * link on its path, never its path again (a user owning a directory above may swap it). */
    s->root_fd = info->parent ? open(info->dir, O_PATH | O_DIRECTORY | O_CLOEXEC)
                              : openat(wacp_root_fd(r->w), ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (s->root_fd < 0 || tool_session_new(&s->session) < 0) {
        int e = errno;
        sandbox_child_signal(s->child, SIGKILL);
        run_ws_free(s);
        return cerr_set(err, e, "cannot open the workspace directory %s: %s", info->dir, strerror(e));
    }
    /* Commands bind the workspace by its host path: keep the model's string alive with ours. */
    s->root_host_path = strdup(info->dir);
    if (!s->root_host_path) {
        sandbox_child_signal(s->child, SIGKILL);
        run_ws_free(s);
        return cerr_set(err, ENOMEM, "out of memory");
    }
    struct role_tools_opts to = {.view = &s->view,
                                 .root_fd = s->root_fd,
                                 .root_host_path = s->root_host_path,
                                 .cgroup_parent = s->child,
                                 .session = s->session,
                                 .denials = r->cmd_denials,
                                 .tag = s->id,
                                 .egress_hub = s->egress_hub,
                                 .egress_spec = &s->egress_setup.spec,
                                 .storage_bytes = info->budgets.storage_bytes};
    /* Protected paths (the policy's, else the default .git list) and the storage budget bind
     * the agent's own tools; checkpoints and integration check them again in the model. */
    struct policy_session pss;
    policy_session_get(pol, &pss);
    to.protected_paths = pss.protected_paths;
    to.n_protected = pss.n_protected_paths;
    role_tools_init(&s->tools, &to);

    const struct tool_surface *surface = tool_surface_find(s->view.surface);
    struct agent_config ac = {
        .name = s->id,
        .in_fd = s->from_agent,
        .out_fd = s->to_agent,
        .surface = surface ? surface : tool_surface_find("wap"),
        .tools = &s->tools.ctx,
        .on_end = on_conn_end,
        .data = s,
        .wacp = on_wacp,
        .on_message = dispatch_message,
        .approve = on_tool_approval,
    };
    rc = agent_new(r->host, &ac, &s->agent, err);
    if (rc < 0 || loop_watch_add(r->loop, &s->pid_watch, sandbox_child_pidfd(s->child), EPOLLIN,
                                 on_pid_end, s) < 0) {
        agent_free(s->agent);
        sandbox_child_signal(s->child, SIGKILL);
        run_ws_free(s);
        return rc < 0 ? rc : cerr_set(err, EIO, "cannot watch the agent's sandbox");
    }
    if (info->budgets.wall_time > 0) /* after a recovery: what is left of it (the trail's times) */
        loop_timer_add(r->loop, &s->wall_watch,
                       info->budgets.wall_time > info->wall_elapsed
                           ? info->budgets.wall_time - info->wall_elapsed
                           : 0.001,
                       on_wall_time, s);
    if (s->view.budgets.liveness_interval > 0) {
        double first = s->view.budgets.liveness_interval;
        s->live_since_us = wall_now_us();
        /* Recovered: the interval runs from the agent's last recorded activity, not the restart
         * (recovery spec 3.4); one already run out was warned during the recovery. */
        if (info->recovered && info->last_activity_us > 0 && info->last_activity_us < s->live_since_us) {
            double ago = (double)(s->live_since_us - info->last_activity_us) / 1e6;
            s->live_since_us = info->last_activity_us;
            first = ago < first ? first - ago : 0.001;
        }
        loop_timer_add(r->loop, &s->live_watch, first, on_liveness, s);
    }
    s->next = r->list;
    r->list = s;
    return 0;
}

/* ---- stopping and ending -------------------------------------------------------------------- */

static void on_grace_end(void *data, uint32_t events)
{
    struct run_ws *s = data;
    (void)events;
    loop_watch_del(s->r->loop, &s->grace_watch);
    if (!s->exited)
        sandbox_child_signal(s->child, SIGKILL);
}

static void run_ws_stop(struct run_ws *s)
{
    if (s->stopping || s->exited)
        return;
    s->stopping = true;
    /* SIGTERM to everything in it (init forwards), SIGKILL of the whole sandbox after a grace. */
    sandbox_child_signal(s->child, SIGTERM);
    double grace = s->r->o->stop_grace > 0 ? s->r->o->stop_grace : 1.0;
    if (loop_timer_add(s->r->loop, &s->grace_watch, grace, on_grace_end, s) < 0)
        sandbox_child_signal(s->child, SIGKILL);
}

static void hook_stop(void *data, const char *ws, const char *why)
{
    struct run_ws *s = run_ws_find(data, ws);
    (void)why;
    if (s)
        run_ws_stop(s);
}

static int hook_notify(void *data, const char *ws, const char *method, cJSON *params)
{
    struct run_ws *s = run_ws_find(data, ws);
    if (s && s->agent && !s->conn_ended)
        agent_notify(s->agent, method, params);
    cJSON_Delete(params);
    return 0;
}

static void run_ws_maybe_finalize(struct run_ws *s)
{
    if (s->finalized || !s->exited || !s->conn_ended)
        return;
    s->finalized = true;
    agent_free(s->agent); /* deferred by the agent layer while a tool call still runs */
    s->agent = NULL;
    loop_watch_del(s->r->loop, &s->grace_watch);
    loop_watch_del(s->r->loop, &s->wall_watch);
    loop_watch_del(s->r->loop, &s->live_watch);
}

/* The tail of the agent's stderr, into the trail as one agent_log entry (size-capped). */
static void record_log_tail(struct run_ws *s)
{
    _cleanup_close_ int fd = openat(s->r->logs_fd, s->log_path,
                                    O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
        return;
    off_t from = st.st_size > LOG_TAIL_MAX ? st.st_size - LOG_TAIL_MAX : 0;
    char *buf = malloc(LOG_TAIL_MAX);
    ssize_t n = buf ? pread(fd, buf, LOG_TAIL_MAX, from) : -1;
    if (n > 0) {
        char hex[65];
        struct cerr e = {0};
        if (trail_blob_put(s->r->trail, buf, (size_t)n, hex, &e) == 0) {
            cJSON *b = cJSON_CreateObject();
            cJSON_AddStringToObject(b, "blob", hex);
            cJSON_AddNumberToObject(b, "bytes", (double)st.st_size);
            cJSON_AddBoolToObject(b, "truncated", from > 0);
            char *file = util_printf("%s/logs/%s", s->r->o->run_dir, s->log_path);
            cJSON_AddStringToObject(b, "file", file ? file : s->log_path);
            free(file);
            record_blob(s->r, s->id, "protocol", "agent_log", b, buf, (size_t)n);
            cJSON_Delete(b);
        }
    }
    free(buf);
}

/* The agent's end, into the trail and the model. */
static void exit_apply(struct run_ws *s, const struct sandbox_result *rp)
{
    struct run *r = s->r;
    struct sandbox_result res = *rp;
    record_log_tail(s);
    cJSON *b = cJSON_CreateObject();
    if (res.exited)
        cJSON_AddNumberToObject(b, "exit_code", res.exit_code);
    else
        cJSON_AddNumberToObject(b, "signal", res.signal);
    cJSON_AddBoolToObject(b, "oom", res.oom);
    cJSON_AddNumberToObject(b, "memory_peak", (double)res.memory_peak);
    cJSON_AddNumberToObject(b, "cpu_usec", (double)res.cpu_usec);
    cJSON_AddNumberToObject(b, "wall_sec", res.wall_sec);
    record(r, s->id, "protocol", "process_exited", b);
    cJSON_Delete(b);
    const char *reason = "agent_exited";
    if (res.oom || res.pids_limited) {
        reason = res.oom ? "budget_exceeded:memory" : "budget_exceeded:pids";
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "budget", res.oom ? "memory" : "pids");
        cJSON_AddNumberToObject(x, "limit",
                                (double)(res.oom ? s->prof.limits.memory : s->prof.limits.pids));
        record(r, s->id, "protocol", "budget_exceeded", x);
        cJSON_Delete(x);
    }
    bool clean = res.exited && res.exit_code == 0 && !res.oom && !res.pids_limited;
    wacp_agent_exited(r->w, s->id, clean, reason);
}

static void on_pid_end(void *data, uint32_t events)
{
    struct run_ws *s = data;
    struct run *r = s->r;
    (void)events;
    loop_watch_del(r->loop, &s->pid_watch);
    struct sandbox_result res = {0};
    struct cerr e = {0};
    sandbox_child_wait(s->child, &res, &e);
    s->exited = true;
    if (trail_down(r)) { /* no state transition without its entry: it waits for the trail */
        s->exit_res = res;
        s->exit_pending = true;
    } else
        exit_apply(s, &res);
    /* Its pipe may still hold its last words: the connection ends at EOF, which the exit gave. */
    run_ws_maybe_finalize(s);
}

static void on_conn_end(struct agent *a, enum agent_end why, void *data)
{
    struct run_ws *s = data;
    (void)a;
    s->conn_ended = true;
    if (why == AGENT_END_ABUSE && trail_down(s->r))
        s->abuse_pending = true;
    else if (why == AGENT_END_ABUSE)
        wacp_agent_ended(s->r->w, s->id, "protocol_abuse");
    /* An agent that closed its side of the channel is done talking: it gets its grace. */
    run_ws_stop(s);
    run_ws_maybe_finalize(s);
}

static void on_wall_time(void *data, uint32_t events)
{
    struct run_ws *s = data;
    (void)events;
    loop_watch_del(s->r->loop, &s->wall_watch);
    if (s->exited)
        return;
    if (trail_down(s->r)) { /* the budget holds; its record and transition wait for the trail */
        s->wall_pending = true;
        sandbox_child_signal(s->child, SIGKILL);
        return;
    }
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "budget", "wall_time");
    record(s->r, s->id, "protocol", "budget_exceeded", x);
    cJSON_Delete(x);
    wacp_agent_ended(s->r->w, s->id, "budget_exceeded:wall_time");
    sandbox_child_signal(s->child, SIGKILL);
}

/* Liveness (WACP Workspace spec 6 and recovery spec 2.1; docs/protocol-wacp.md): an agent that
 * sent nothing on its pipe and used no CPU (its cgroup's usage unchanged) for a whole interval
 * while its workspace expects work of it gets a liveness_warning in the trail and its parent a
 * wacp/liveness notification. An active workspace is then marked blocked by the runtime (the
 * agent stalled without saying so: the reversible signal, as the recovery spec asks of agents
 * themselves); if the next interval is silent too, it fails ("liveness_timeout") and its agent is
 * stopped. Pipe traffic or CPU time restarts the count and returns a workspace liveness blocked to
 * active, so an agent busy computing is never blocked. A workspace its agent blocked itself is
 * only warned about: it waits for its parent, silently by right. */
static void on_liveness(void *data, uint32_t events)
{
    struct run_ws *s = data;
    struct run *r = s->r;
    (void)events;
    loop_watch_del(r->loop, &s->live_watch);
    if (s->exited || s->stopping || !s->agent)
        return;
    double interval = s->view.budgets.liveness_interval;
    if (trail_down(r)) { /* nothing can be recorded: looked at again an interval later */
        loop_timer_add(r->loop, &s->live_watch, interval, on_liveness, s);
        return;
    }
    struct agent_stats st;
    agent_get_stats(s->agent, &st);
    struct sandbox_result u = {0};
    sandbox_child_usage(s->child, &u);
    const char *state = wacp_state_of(r->w, s->id);
    /* Only where the agent owes work: idle (its directive unacked), active or blocked. */
    bool expected = state &&
                    (!strcmp(state, "idle") || !strcmp(state, "active") || !strcmp(state, "blocked"));
    if (st.lines_in != s->live_lines || u.cpu_usec != s->live_cpu || !expected) {
        s->live_lines = st.lines_in;
        s->live_cpu = u.cpu_usec;
        s->live_since_us = wall_now_us();
        if (s->live_blocked && state && !strcmp(state, "blocked"))
            (void)wacp_agent_stirred(r->w, s->id, "liveness: the agent is busy again");
        s->live_blocked = false;
    } else {
        const char *action = "warned";
        if (s->live_blocked && !strcmp(state, "blocked"))
            action = "failed";
        else if (!strcmp(state, "active"))
            action = "blocked";
        char when[40];
        trail_format_time(s->live_since_us, when, sizeof(when));
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "workspace_id", s->id);
        cJSON_AddNumberToObject(b, "interval", interval);
        cJSON_AddStringToObject(b, "last_activity_timestamp", when);
        cJSON_AddStringToObject(b, "action", action);
        cJSON_AddNumberToObject(b, "cpu_usec", (double)u.cpu_usec);
        int rc = record(r, s->id, "system", "liveness_warning", b);
        struct run_ws *p = s->parent ? run_ws_find(r, s->parent) : NULL;
        if (rc == 0 && p && p->agent && !p->conn_ended)
            agent_notify(p->agent, "wacp/liveness", b);
        cJSON_Delete(b);
        char why[96];
        snprintf(why, sizeof(why), "liveness: no pipe traffic and no CPU for %g s", interval);
        if (rc == 0 && !strcmp(action, "blocked"))
            s->live_blocked = wacp_agent_stalled(r->w, s->id, why) == 0;
        else if (rc == 0 && !strcmp(action, "failed")) {
            wacp_agent_ended(r->w, s->id, "liveness_timeout");
            run_ws_stop(s);
            return;
        }
    }
    loop_timer_add(r->loop, &s->live_watch, interval, on_liveness, s);
}

/* ---- requests ------------------------------------------------------------------------------- */

struct query_out {
    cJSON *entries;
    const char *host_paths[4]; /* what an agent is never shown (trail/scrub.h) */
};

static int add_entry(const struct trail_entry *te, void *data)
{
    struct query_out *q = data;
    cJSON *j = trail_entry_to_json(te);
    if (!j)
        return -ENOMEM;
    trail_scrub_for_agent(j, q->host_paths, ARRAY_SIZE(q->host_paths));
    cJSON_AddItemToArray(q->entries, j);
    return 0;
}

/* hooks.trail_query (wacp/trail.query, a row of the WACP method table): the run holds the trail,
 * so it reads it, with a reader opened on first use. */
static int hook_trail_query(void *data, const char *ws, const char *type, uint64_t limit, cJSON *entries,
                            struct cerr *err)
{
    struct run *r = data;
    /* What this run committed is in the ahead log at once and in the file soon after: the
     * query sees all of it. */
    if (trail_sync(r->trail, err) < 0)
        return -EIO;
    if (!r->reader) {
        int rc = trail_reader_open(r->o->trail_path, &r->reader, err);
        if (rc < 0)
            return rc;
    }
    struct trail_filter f = {.workspace = ws, .type = type, .limit = limit};
    struct query_out q = {
        .entries = entries,
        .host_paths = {r->o->run_dir, r->o->workspace, r->o->trail_path, r->o->policy_path}};
    return trail_query(r->reader, &f, add_entry, &q, err);
}

/* hooks.evaluator and hooks.evaluate (semantic_contradiction): the integrating agent's role's
 * evaluator_command, the policy's command and not the agent's, in a command sandbox as the
 * embedding command runs (tools/voltagent/index.c): the role's command profile when it may run
 * commands, else the default one; no network; the role's command_timeout and output cap. It
 * runs on the pool, like a tool call's command: the loop serves every other agent meanwhile.
 * The handle is a copy of the agent's tool context, taken on the loop; what it points to (the
 * role's tools, the policy) lives as long as the run. */
struct evaluator {
    struct tool_ctx ctx;
    const char *cmd;
};

static void *hook_evaluator(void *data, const char *ws)
{
    struct run_ws *s = run_ws_find(data, ws);
    const char *cmd = s ? s->view.limits.evaluator_command : NULL;
    struct evaluator *ev = cmd && *cmd ? calloc(1, sizeof(*ev)) : NULL;
    if (ev) {
        ev->ctx = s->tools.ctx;
        ev->cmd = cmd;
    }
    return ev;
}

static int hook_evaluate(void *handle, const char *input, char **out, size_t *out_len,
                         struct cerr *err)
{
    const struct evaluator *ev = handle;
    const char *cmd = ev->cmd;
    struct tool_ctx c = ev->ctx;
    if (!c.allow_commands)
        c.command_profile = NULL;
    c.allow_commands = true;
    c.egress_spec = NULL;
    c.egress_env = NULL;
    c.adopt_egress = NULL;
    c.call = NULL;
    /* Its seccomp listener is not served (this runs on a worker, not the loop): the filter
     * answers EPERM itself instead (denials are not recorded for the evaluator). */
    c.adopt_listener = NULL;
    struct broker_command_opts o = {.command = cmd, .input = input, .input_len = strlen(input)};
    struct broker_command_result res = {0};
    struct broker_err be = {0};
    int rc = 0;
    if (broker_command(&c, &o, &res, &be) < 0)
        rc = cerr_set(err, EIO, "it could not run: %s", be.msg);
    else if (res.timed_out)
        rc = cerr_set(err, ETIMEDOUT, "it ran out of time (the role's limits.command_timeout)");
    else if (res.exit_code != 0)
        rc = cerr_set(err, EIO, "it exited with status %d: %.200s", res.exit_code,
                      res.err ? res.err : "");
    else if (res.truncated)
        rc = cerr_set(err, E2BIG, "it printed more than the role's limits.max_output_bytes");
    else {
        *out = res.out;
        *out_len = res.out_len;
        res.out = NULL;
    }
    broker_command_result_clear(&res);
    return rc;
}

static void on_wacp(struct agent *a, const struct rpc_msg *m, void *data)
{
    struct run_ws *s = data;
    cJSON *result = NULL;
    struct wacp_err e = {0};
    if (trail_down(s->r)) {
        /* Degraded mode: a request is a new operation, and none may happen unrecorded. */
        char msg[600];
        snprintf(msg, sizeof(msg),
                 "the trail cannot be written (%.400s), so the request was not processed; requests "
                 "are accepted again once it can",
                 trail_degraded_why(s->r->trail)[0] ? trail_degraded_why(s->r->trail) : s->r->dg.why);
        cJSON *d = cJSON_CreateObject();
        if (d)
            cJSON_AddStringToObject(d, "code", "trail_unavailable");
        agent_reply_error_data(a, m->id, RPC_INTERNAL_ERROR, msg, d);
        cJSON_Delete(d);
        s->r->dg.refused_requests++;
        return;
    }
    uint64_t ref = ++s->r->next_ref;
    int rc = wacp_call_ref(s->r->w, s->id, m->method, m->params, ref, &result, &e);
    if (rc == WACP_DEFERRED) {
        struct deferred *d = calloc(1, sizeof(*d));
        if (d && (d->ws = strdup(s->id)) && (d->id = cJSON_Duplicate(m->id, true))) {
            d->ref = ref;
            d->next = s->r->deferred;
            s->r->deferred = d;
        } else if (d) {
            free(d->ws);
            free(d);
        }
        return;
    }
    if (rc == 0) {
        agent_reply(a, m->id, result);
        cJSON_Delete(result);
        return;
    }
    if (rc == -ENOENT && !e.msg[0]) {
        char msg[200];
        snprintf(msg, sizeof(msg), "method not found: \"%.100s\"", m->method);
        agent_reply_error(a, m->id, RPC_METHOD_NOT_FOUND, msg);
        return;
    }
    /* A request refused by its rate limit counts toward the agent's abuse limit: a flood ends
     * the flooding agent alone. */
    if (!strcmp(e.code, "rate_limited"))
        agent_count_abuse(a);
    /* The trail failed during the request (its applier can fail between the check above and
     * the request's first entry): the answer names why, as the refusals above do. */
    if (!strcmp(e.code, "trail_unavailable") && trail_degraded_why(s->r->trail)[0])
        snprintf(e.msg, sizeof(e.msg), "the trail cannot be written (%.300s), so nothing was done",
                 trail_degraded_why(s->r->trail));
    cJSON *d = cJSON_CreateObject();
    if (d && e.code[0])
        cJSON_AddStringToObject(d, "code", e.code);
    agent_reply_error_data(a, m->id, e.rpc_code ? e.rpc_code : RPC_INTERNAL_ERROR,
                           e.msg[0] ? e.msg : "the request failed", d);
    cJSON_Delete(d);
}

/* ---- the human highway: deferred answers, held tool calls, people's requests ---------------- */

static void reply_to(struct run_ws *s, const cJSON *id, cJSON *result, const struct wacp_err *e)
{
    if (!s || !s->agent || s->conn_ended)
        return;
    if (result) {
        agent_reply(s->agent, id, result);
        return;
    }
    cJSON *d = cJSON_CreateObject();
    if (d && e && e->code[0])
        cJSON_AddStringToObject(d, "code", e->code);
    agent_reply_error_data(s->agent, id, e && e->rpc_code ? e->rpc_code : RPC_INTERNAL_ERROR,
                           e && e->msg[0] ? e->msg : "the request failed", d);
    cJSON_Delete(d);
}

static void hook_reply(void *data, const char *ws, uint64_t call_ref, cJSON *result,
                       const struct wacp_err *e)
{
    struct run *r = data;
    for (struct deferred **p = &r->deferred; *p; p = &(*p)->next) {
        struct deferred *d = *p;
        if (d->ref != call_ref || strcmp(d->ws, ws))
            continue;
        *p = d->next;
        reply_to(run_ws_find(r, ws), d->id, result, e);
        cJSON_Delete(d->id);
        free(d->ws);
        free(d);
        break;
    }
    cJSON_Delete(result);
}

static void held_free(struct held_call *h)
{
    free(h->ws);
    free(h->tool);
    cJSON_Delete(h->id);
    cJSON_Delete(h->args);
    free(h);
}

static void on_tool_decided(void *data, bool approved, const char *gate_id, const char *action,
                            const char *actor)
{
    struct held_call *h = data;
    if (!gate_id) { /* the run is over (wacp_free): the agents are gone already */
        held_free(h);
        return;
    }
    struct run_ws *s = run_ws_find(h->r, h->ws);
    (void)gate_id;
    (void)action;
    (void)actor;
    if (s && s->agent) {
        agent_tool_release(s->agent, h->id, h->tool, h->args, approved);
    } else if (!approved) {
        /* The agent is gone (it exited while the call waited), so no gate of the surface can
         * answer it; the refusal is still a denial, findable by its type like every other. */
        cJSON *d = cJSON_CreateObject();
        if (d && cJSON_AddStringToObject(d, "kind", "path") &&
            cJSON_AddStringToObject(d, "agent", h->ws) &&
            cJSON_AddStringToObject(d, "subject", h->tool) &&
            cJSON_AddStringToObject(d, "rule", "approval_required") &&
            cJSON_AddStringToObject(d, "reason", "agent_gone"))
            (void)record(h->r, h->ws, "protocol", "denial", d);
        cJSON_Delete(d);
    }
    held_free(h);
}

/* A tools/call under needs_approval: a gate shows the tool, its arguments and the workspace. */
static int on_tool_approval(struct agent *a, const cJSON *id, const char *tool, const cJSON *args,
                            void *data)
{
    struct run_ws *s = data;
    (void)a;
    struct held_call *h = calloc(1, sizeof(*h));
    if (!h || !(h->ws = strdup(s->id)) || !(h->tool = strdup(tool)) ||
        !(h->id = cJSON_Duplicate(id, true)) || (args && !(h->args = cJSON_Duplicate(args, true)))) {
        if (h)
            held_free(h);
        return -ENOMEM;
    }
    h->r = s->r;
    char gate[WACP_GATE_ID_LEN];
    struct wacp_err e;
    int rc = wacp_gate_tool(s->r->w, s->id, tool, args, on_tool_decided, h, gate, &e);
    if (rc == 1)
        return 0; /* held */
    held_free(h);
    if (rc == 0) /* the coordinator's own re-trigger (re-entry guard): through */
        return 1;
    return -EPERM;
}

static const struct policy_user *user_of(const struct run *r, uid_t uid)
{
    struct policy_session ps;
    policy_session_get(r->o->policy, &ps);
    for (size_t i = 0; i < ps.n_users; i++)
        if (ps.users[i].uid == uid)
            return &ps.users[i];
    return NULL;
}

static cJSON *answer(cJSON *result, const struct wacp_err *e)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "ok", result != NULL);
    if (result) {
        cJSON_AddItemToObject(o, "result", result);
        return o;
    }
    cJSON *x = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(x, "code", e->code[0] ? e->code : "failed");
    cJSON_AddStringToObject(x, "message", e->msg[0] ? e->msg : "the request failed");
    return o;
}

/* A person's request: who asks is the kernel's word (SO_PEERCRED), mapped through the policy's
 * users; an unknown uid is refused and recorded (security spec 3.3, 9). */
static cJSON *ps_json(void *data);

static cJSON *human_request(void *data, const struct control_peer *peer, const char *op,
                            const cJSON *req)
{
    struct run *r = data;
    const struct policy_user *u = user_of(r, peer->uid);
    struct wacp_err e = {0};
    /* A local user hammering the socket must not fill the trail: the first 64 refusals are
     * recorded one by one, then one in 64 with the count so far. */
    if (!u && (++r->auth_failures <= 64 || r->auth_failures % 64 == 0)) {
        cJSON *b = cJSON_CreateObject();
        char ent[32], src[64];
        snprintf(ent, sizeof(ent), "uid:%u", (unsigned)peer->uid);
        snprintf(src, sizeof(src), "control socket, pid %d", (int)peer->pid);
        cJSON_AddStringToObject(b, "entity", ent);
        cJSON_AddStringToObject(b, "context", "highway_access");
        cJSON_AddStringToObject(b, "reason", "unknown_identity");
        cJSON_AddStringToObject(b, "source", src);
        cJSON_AddStringToObject(b, "op", op);
        cJSON_AddNumberToObject(b, "failures_so_far", (double)r->auth_failures);
        record(r, NULL, "system", "authentication_failed", b);
        cJSON_Delete(b);
    }
    if (!u) {
        snprintf(e.code, sizeof(e.code), "unknown_identity");
        snprintf(
            e.msg, sizeof(e.msg),
            "uid %u is not in this run's policy \"users\": the highway answers only the people it names",
            (unsigned)peer->uid);
        return answer(NULL, &e);
    }
    /* A person the policy names sees the live tree; a deactivated one is refused below. */
    if (!strcmp(op, "ps") && !(u->state && !strcmp(u->state, "deactivated")))
        return ps_json(r);
    if (trail_down(r)) {
        snprintf(e.code, sizeof(e.code), "trail_unavailable");
        snprintf(e.msg, sizeof(e.msg),
                 "the trail cannot be written (%.300s), so the request was not processed",
                 trail_degraded_why(r->trail)[0] ? trail_degraded_why(r->trail) : r->dg.why);
        r->dg.refused_requests++;
        return answer(NULL, &e);
    }
    cJSON *res = NULL;
    int rc = wacp_human_call(r->w, u, op, req, &res, &e);
    if (rc < 0 || !res) {
        cJSON_Delete(res);
        if (!e.msg[0])
            snprintf(e.msg, sizeof(e.msg), "the request failed");
        return answer(NULL, &e);
    }
    return answer(res, &e);
}

/* Whether people other than the run's own user are named: they must reach the socket. */
static bool others_mapped(const struct run *r)
{
    struct policy_session ps;
    policy_session_get(r->o->policy, &ps);
    for (size_t i = 0; i < ps.n_users; i++)
        if (ps.users[i].uid != geteuid())
            return true;
    return false;
}

/* ---- control socket: `corral ps` ------------------------------------------------------------ */

static cJSON *ps_json(void *data)
{
    struct run *r = data;
    cJSON *tree = wacp_tree_json(r->w);
    cJSON *ws;
    cJSON_ArrayForEach (ws, tree) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(ws, "id");
        if (!cJSON_IsString(id))
            id = cJSON_GetObjectItemCaseSensitive(ws, "workspace_id");
        struct run_ws *s = cJSON_IsString(id) ? run_ws_find(r, id->valuestring) : NULL;
        if (!s)
            continue;
        cJSON *u = cJSON_AddObjectToObject(ws, "usage");
        cJSON_AddBoolToObject(u, "running", !s->exited);
        if (!s->exited) {
            struct sandbox_result res = {0};
            if (sandbox_child_usage(s->child, &res) == 0) {
                cJSON_AddNumberToObject(u, "memory_peak", (double)res.memory_peak);
                cJSON_AddNumberToObject(u, "cpu_usec", (double)res.cpu_usec);
            }
            cJSON_AddNumberToObject(u, "pid", sandbox_child_pid(s->child));
        }
        cJSON_AddNumberToObject(u, "memory_limit", (double)s->prof.limits.memory);
        cJSON_AddNumberToObject(u, "pids_limit", (double)s->prof.limits.pids);
        if (s->egress) {
            struct egress_stats es;
            egress_get_stats(s->egress, &es);
            cJSON *n = cJSON_AddObjectToObject(u, "egress");
            cJSON_AddNumberToObject(n, "open", (double)es.open);
            cJSON_AddNumberToObject(n, "allowed", (double)es.allowed);
            cJSON_AddNumberToObject(n, "refused", (double)es.refused);
            cJSON_AddNumberToObject(n, "bytes_out", (double)es.bytes_out);
            cJSON_AddNumberToObject(n, "bytes_in", (double)es.bytes_in);
        }
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "pid", getpid());
    cJSON_AddStringToObject(o, "policy", r->o->policy_path ? r->o->policy_path : "");
    cJSON_AddStringToObject(o, "trail", r->o->trail_path);
    cJSON_AddItemToObject(o, "workspaces", tree ? tree : cJSON_CreateArray());
    return o;
}

/* ---- the session ---------------------------------------------------------------------------- */

/* ---- degraded mode (WACP recovery spec 2.4; docs/trail.md) ------------------------------------
 * A commit failed (disk full, I/O error) and its batch held only the agents' tool calls and
 * messages, which were refused or withheld, so the model still matches the trail. Then the run
 * goes on: running agents and their calls in flight continue, every new operation (tool call,
 * WACP request, person's request, timer, agent exit) is refused or held, and the writer is tried
 * again with a bounded back-off. The first commit that succeeds is system_degraded, saying when,
 * for how long and what was refused; the held exits and budget kills are then applied. */
#define RUN_DEGRADED_FIRST_SEC 0.05
#define RUN_DEGRADED_MAX_SEC 2.0 /* the back-off's bound: the recovery is seen within it */

static void on_degraded_retry(void *data, uint32_t events);

static void degraded_arm(struct run *r)
{
    double sec = RUN_DEGRADED_FIRST_SEC;
    for (unsigned i = 0; i < r->dg.attempts && sec < RUN_DEGRADED_MAX_SEC; i++)
        sec *= 2;
    if (sec > RUN_DEGRADED_MAX_SEC)
        sec = RUN_DEGRADED_MAX_SEC;
    if (loop_timer_add(r->loop, &r->dg.retry_watch, sec, on_degraded_retry, r) < 0) {
        cerr_set(&r->trail_err, EIO, "%s; no timer to retry it", r->dg.why);
        r->trail_failed = true;
    }
}

static void degraded_enter(struct run *r)
{
    r->dg.on = true;
    r->dg.since_us = wall_now_us();
    r->dg.since_ms = now_ms();
    r->dg.attempts = 0;
    r->dg.refused_requests = 0;
    r->dg.tool_refusals_before = agent_host_trail_refusals(r->host);
    snprintf(r->dg.why, sizeof(r->dg.why), "%s", trail_degraded_why(r->trail));
    loop_watch_del(r->loop, &r->deadline_watch);
    r->armed = UINT64_MAX;
    fprintf(stderr,
            "corral run: the trail cannot be written (%s): degraded mode: new tool calls and requests "
            "are refused, running agents go on; retrying\n",
            r->dg.why);
    degraded_arm(r);
}

static void degraded_leave(struct run *r)
{
    r->dg.on = false;
    agent_host_trail_recovered(r->host);
    if (!r->o->quiet)
        fprintf(stderr,
                "corral run: the trail is writable again after %.1f s (%u attempts): system_degraded "
                "recorded, new operations go on\n",
                (double)(now_ms() - r->dg.since_ms) / 1000.0, r->dg.attempts);
    /* What waited, in the order it happened to each agent. */
    for (struct run_ws *s = r->list; s && !trail_down(r); s = s->next) {
        if (s->wall_pending) {
            s->wall_pending = false;
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "budget", "wall_time");
            record(r, s->id, "protocol", "budget_exceeded", x);
            cJSON_Delete(x);
            wacp_agent_ended(r->w, s->id, "budget_exceeded:wall_time");
        }
        if (s->abuse_pending) {
            s->abuse_pending = false;
            wacp_agent_ended(r->w, s->id, "protocol_abuse");
        }
        if (s->exit_pending) {
            s->exit_pending = false;
            exit_apply(s, &s->exit_res);
        }
    }
}

static void on_degraded_retry(void *data, uint32_t events)
{
    struct run *r = data;
    (void)events;
    loop_watch_del(r->loop, &r->dg.retry_watch);
    if (!r->dg.on || r->trail_failed)
        return;
    r->dg.attempts++;
    struct cerr e = {0};
    if (trail_retry(r->trail, &e) == 0) {
        char when[40];
        trail_format_time(r->dg.since_us, when, sizeof(when));
        unsigned held = 0;
        cJSON *b = cJSON_CreateObject(), *aff = cJSON_AddArrayToObject(b, "affected_workspaces");
        for (struct run_ws *s = r->list; s; s = s->next) {
            held += s->wall_pending + s->abuse_pending + s->exit_pending;
            if (!s->finalized || s->exit_pending)
                cJSON_AddItemToArray(aff, cJSON_CreateString(s->id));
        }
        cJSON_AddStringToObject(b, "reason", r->dg.why);
        cJSON_AddStringToObject(b, "scope", "trail_storage");
        cJSON_AddStringToObject(b, "coordinator_action", "wait");
        cJSON_AddStringToObject(b, "since", when);
        cJSON_AddNumberToObject(b, "duration_ms", (double)(now_ms() - r->dg.since_ms));
        cJSON_AddNumberToObject(b, "retry_attempts", r->dg.attempts);
        cJSON *blk = cJSON_AddObjectToObject(b, "blocked");
        cJSON_AddNumberToObject(
            blk, "tool_calls",
            (double)(agent_host_trail_refusals(r->host) - r->dg.tool_refusals_before));
        cJSON_AddNumberToObject(blk, "requests", (double)r->dg.refused_requests);
        cJSON_AddNumberToObject(blk, "held_events", held);
        /* The model's entries the failed batch lost follow it, in their order, recorded again. */
        unsigned lost = 0;
        for (struct kept *k = r->kept; k; k = k->next)
            lost += k->seq > trail_head_seq(r->trail);
        cJSON_AddNumberToObject(b, "replayed_entries", lost);
        uint64_t seq = 0, model_seq = r->model_seq;
        unsigned replayed = 0;
        int rc = trail_append(r->trail, NULL, "system", "system_degraded", b, &seq, &e);
        cJSON_Delete(b);
        r->model_seq = seq;
        if (rc == 0)
            rc = kept_replay(r, &replayed, &e);
        if (rc == 0 && trail_commit(r->trail, &e) == 0) {
            kept_clear(r);
            if (replayed && !r->o->quiet)
                fprintf(stderr,
                        "corral run: %u entr%s of WACP state changes the failed batch lost "
                        "recorded again after system_degraded\n",
                        replayed, replayed == 1 ? "y" : "ies");
            degraded_leave(r);
            return;
        }
        r->model_seq = model_seq; /* rolled back: the kept entries are still to be recorded */
    }
    degraded_arm(r);
}

static void shutdown_run(struct run *r, const char *why)
{
    if (r->shutting_down)
        return;
    r->shutting_down = true;
    if (r->dg.on && !r->trail_failed) {
        /* The model's stop transitions cannot be recorded: a forced shutdown (workspace spec
         * 10), the trail ends at its last committed entry. */
        fprintf(stderr,
                "corral run: stopping (%s) while the trail cannot be written (%s): the last "
                "transitions are not recorded\n",
                why, r->dg.why);
        r->trail_failed = true;
        loop_watch_del(r->loop, &r->dg.retry_watch);
    }
    wacp_shutdown(r->w, why);
    for (struct run_ws *s = r->list; s; s = s->next)
        run_ws_stop(s);
}

static void on_signal(void *data, uint32_t events)
{
    struct run *r = data;
    (void)events;
    struct signalfd_siginfo si;
    while (read(r->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (++r->signals > 1) /* a second signal: no more grace */
            for (struct run_ws *s = r->list; s; s = s->next)
                if (!s->exited)
                    sandbox_child_signal(s->child, SIGKILL);
        shutdown_run(r, "interrupted");
    }
}

static void on_run_timeout(void *data, uint32_t events)
{
    struct run *r = data;
    (void)events;
    loop_watch_del(r->loop, &r->timeout_watch);
    r->timed_out = true;
    shutdown_run(r, "timeout");
}

static void on_deadline(void *data, uint32_t events)
{
    struct run *r = data;
    (void)events;
    loop_watch_del(r->loop, &r->deadline_watch);
    r->armed = UINT64_MAX;
    if (!trail_down(r))
        wacp_tick(r->w, now_ms());
}

static void arm_deadline(struct run *r)
{
    /* Timers are absolute deadlines: the ones that pass in degraded mode fire after it. */
    uint64_t next = trail_down(r) ? UINT64_MAX : wacp_next_deadline(r->w);
    if (next == r->armed)
        return;
    loop_watch_del(r->loop, &r->deadline_watch);
    r->armed = next;
    if (next == UINT64_MAX)
        return;
    uint64_t now = now_ms();
    double sec = next > now ? (double)(next - now) / 1000.0 : 0.001;
    if (loop_timer_add(r->loop, &r->deadline_watch, sec, on_deadline, r) < 0)
        r->armed = UINT64_MAX;
}

static bool all_finalized(const struct run *r)
{
    for (const struct run_ws *s = r->list; s; s = s->next)
        if (!s->finalized)
            return false;
    return true;
}

/* `corral run --resume` (WACP recovery spec 3, after the integrity check cli/run.c did): the dead
 * run's model rebuilt from its trail, its live agents started again, `recovery_completed` last. */
static int resume_run(struct run *r, struct cerr *err)
{
    uint64_t examined = 0;
    int64_t last_us = 0;
    if (trail_sync(r->trail, err) < 0)
        return -EIO;
    int rc = recovery_replay(r->o->trail_path, r->o->resume_seq, r->o->quarantine, r->w, &examined,
                             &last_us, err);
    if (rc < 0)
        return rc;
    /* Before any agent starts again: a copy the crash cut short is removed, never used. */
    unsigned swept = wacp_workspace_sweep(r->w);
    if (swept && !r->o->quiet)
        fprintf(stderr, "corral run: --resume: %u half-made cop%s of the dead run removed\n", swept,
                swept == 1 ? "y" : "ies");
    struct wacp_resume_stats st;
    int64_t now = wall_now_us();
    if ((rc = wacp_resume(r->w, now, &st, err)) < 0)
        return rc;
    cJSON *b = cJSON_CreateObject();
    cJSON_AddNumberToObject(b, "downtime", last_us && now > last_us ? (double)(now - last_us) / 1e6 : 0);
    cJSON_AddNumberToObject(b, "workspaces_recovered", (double)st.workspaces_recovered);
    cJSON_AddNumberToObject(b, "workspaces_failed", (double)st.workspaces_failed);
    cJSON_AddNumberToObject(b, "envelopes_redelivered", (double)st.envelopes_redelivered);
    cJSON_AddNumberToObject(b, "signals_requeued", (double)st.signals_requeued);
    cJSON_AddNumberToObject(b, "timers_reconstructed", (double)st.timers_reconstructed);
    cJSON_AddNumberToObject(b, "trail_entries_examined", (double)examined);
    /* Damaged entries left out (recovery spec 3.1), named for the operator's review. */
    const struct recovery_quarantine *q = r->o->quarantine;
    cJSON_AddNumberToObject(b, "quarantined_entries", q ? (double)q->n : 0);
    cJSON *ql = q && q->n ? cJSON_AddArrayToObject(b, "quarantined") : NULL;
    for (size_t i = 0; ql && i < q->n; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "seq", (double)q->e[i].seq);
        cJSON_AddStringToObject(x, "id", q->e[i].id);
        cJSON_AddStringToObject(x, "type", q->e[i].type);
        if (q->e[i].workspace[0])
            cJSON_AddStringToObject(x, "workspace", q->e[i].workspace);
        cJSON_AddStringToObject(x, "reason", "hash_mismatch");
        cJSON_AddItemToArray(ql, x);
    }
    cJSON_AddNumberToObject(b, "partial_copies_removed", swept);
    cJSON_AddNumberToObject(b, "run_started_seq", (double)r->o->resume_seq);
    /* The dead supervisor's MAC key died with it: checkpoints and envelopes rebuilt from the
     * verified trail are sealed with this run's new key (docs/protocol-wacp.md). */
    cJSON_AddStringToObject(b, "integrity_key", "reissued");
    rc = record(r, NULL, "system", "recovery_completed", b);
    cJSON_Delete(b);
    if (rc < 0)
        return cerr_set(err, EIO, "the trail cannot record recovery_completed: %s", r->trail_err.msg);
    if (!r->o->quiet)
        fprintf(stderr,
                "corral run: --resume: %llu entries examined; %llu workspaces recovered, %llu failed, "
                "%llu envelopes redelivered\n",
                (unsigned long long)examined, (unsigned long long)st.workspaces_recovered,
                (unsigned long long)st.workspaces_failed, (unsigned long long)st.envelopes_redelivered);
    return 0;
}

int run_session(const struct run_opts *o, struct run_result *res, struct cerr *err)
{
    memset(res, 0, sizeof(*res));
    struct run r = {.o = o, .armed = UINT64_MAX, .sig_fd = -1, .logs_fd = -1};
    r.kept_tail = &r.kept;
    r.run_fd = o->resume ? rundir_reopen(o->run_dir, err) : rundir_create(o->run_dir, err);
    if (r.run_fd < 0)
        return r.run_fd;
    if ((r.logs_fd = o->resume ? rundir_subdir_reopen(r.run_fd, "logs", err)
                               : rundir_subdir(r.run_fd, "logs", err)) < 0) {
        close(r.run_fd);
        return r.logs_fd;
    }
    int rc = trail_open(o->trail_path, o->trail_full ? TRAIL_DURABILITY_FULL : TRAIL_DURABILITY_NORMAL,
                        &r.trail, err);
    if (rc < 0) {
        close(r.logs_fd);
        close(r.run_fd);
        return rc;
    }
    struct sigaction ign = {.sa_handler = SIG_IGN}, old_pipe;
    sigaction(SIGPIPE, &ign, &old_pipe);
    sigset_t sigs, old_mask;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    sigprocmask(SIG_BLOCK, &sigs, &old_mask);

    if ((rc = loop_new(&r.loop, err)) < 0)
        goto out;
    if ((rc = pool_new(r.loop, 0, &r.pool, err)) < 0)
        goto out;
    struct policy_session ps;
    policy_session_get(o->policy, &ps);
    struct agent_host_opts ho = {.max_message = ps.max_message, .tool_rate = ps.rates.tool_calls};
    if ((rc = agent_host_new(r.loop, r.pool, r.trail, &ho, &r.host, err)) < 0)
        goto out;
    if ((rc = handoff_new(r.loop, r.trail, &r.cmd_denials, err)) < 0)
        goto out;
    r.sig_fd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
    if (r.sig_fd < 0 || loop_watch_add(r.loop, &r.sig_watch, r.sig_fd, EPOLLIN, on_signal, &r) < 0) {
        rc = cerr_set(err, errno ? errno : EIO, "cannot watch signals: %s", strerror(errno));
        goto out;
    }
    if (o->control_path && (rc = control_new(r.loop, o->control_path, ps_json, human_request, &r,
                                             others_mapped(&r), &r.ctl, err)) < 0)
        goto out;
    if (o->timeout > 0 && loop_timer_add(r.loop, &r.timeout_watch, o->timeout, on_run_timeout, &r) < 0) {
        rc = cerr_set(err, EIO, "cannot arm the run's --timeout");
        goto out;
    }

    cJSON *sb = cJSON_CreateObject();
    cJSON_AddStringToObject(sb, "command", "run");
    cJSON_AddStringToObject(sb, "policy", o->policy_path ? o->policy_path : "");
    cJSON_AddStringToObject(sb, "workspace", o->workspace);
    cJSON_AddStringToObject(sb, "run_dir", o->run_dir);
    cJSON_AddNumberToObject(sb, "pid", getpid());
    cJSON_AddStringToObject(sb, "started_by", o->owner ? o->owner : "system");
    /* Its tool calls' end entries say how they left each file (a resume checks them). */
    cJSON_AddBoolToObject(sb, "tool_files", true);
    if (o->resume) { /* the same run, taken over (recovery.c reads it so) */
        cJSON_AddBoolToObject(sb, "resumed", true);
        cJSON_AddNumberToObject(sb, "run_started_seq", (double)o->resume_seq);
    }
    rc = record(&r, NULL, "system", "supervisor_started", sb);
    cJSON_Delete(sb);
    if (rc < 0 || (rc = trail_commit(r.trail, err)) < 0) {
        if (!err->msg[0])
            cerr_set(err, EIO, "the trail cannot be written: %s", r.trail_err.msg);
        goto out;
    }

    /* How many agents the open-file limit serves: RUN_FDS_PER_AGENT each (at rest 5: two pipes,
     * pidfd, control socket, workspace directory; the rest covers a command or a tool call in
     * flight) beyond RUN_FDS_RESERVE for the trail, the loop and the pool. A policy asking for
     * more workspaces than that is cut to it here, with a word, rather than failing at the
     * workspace the kernel refuses (EMFILE in the middle of a sandbox's set-up). */
    uint64_t max_ws = ps.max_workspaces;
    struct rlimit nf;
    if (getrlimit(RLIMIT_NOFILE, &nf) == 0 && nf.rlim_cur != RLIM_INFINITY) {
        uint64_t room = nf.rlim_cur > RUN_FDS_RESERVE
                            ? (nf.rlim_cur - RUN_FDS_RESERVE) / RUN_FDS_PER_AGENT
                            : 0;
        if (room < max_ws) {
            fprintf(stderr,
                    "corral run: the open-file limit (%llu) serves %llu agents at most, not the "
                    "policy's max_workspaces %llu: "
                    "workspaces past %llu are refused (raise the hard limit: ulimit -Hn, or "
                    "LimitNOFILE= in a unit)\n",
                    (unsigned long long)nf.rlim_cur, (unsigned long long)room,
                    (unsigned long long)max_ws, (unsigned long long)room);
            max_ws = room ? room : 1;
        } else if (!o->quiet)
            fprintf(
                stderr,
                "corral run: open files %llu: room for %llu agents (%d fds each); max_workspaces %llu\n",
                (unsigned long long)nf.rlim_cur, (unsigned long long)room, RUN_FDS_PER_AGENT,
                (unsigned long long)max_ws);
    }
    struct wacp_opts wo = {
        .policy = o->policy,
        .run_dir = o->run_dir,
        .root_dir = o->workspace,
        .root_owner = o->owner,
        .redelivery_base_ms = o->redelivery_base_ms,
        .max_workspaces = max_ws,
    };
    struct wacp_hooks wh = {.data = &r,
                            .record = hook_record,
                            .start = hook_start,
                            .stop = hook_stop,
                            .notify = hook_notify,
                            .trail_query = hook_trail_query,
                            .reply = hook_reply,
                            .commit = hook_commit,
                            .evaluator = hook_evaluator,
                            .evaluate = hook_evaluate,
                            .offload = hook_offload};
    if ((rc = wacp_new(&wo, &wh, &r.w, err)) < 0)
        goto out;
    const struct policy_agent *coord = policy_coordinator_agent(o->policy);
    if (!coord) {
        rc = cerr_set(err, EINVAL,
                      "policy %s names no agent with the coordinator role; add one under \"agents\"",
                      o->policy_path ? o->policy_path : "");
        goto out;
    }
    rc = o->resume ? resume_run(&r, err) : wacp_start(r.w, coord->name, err);
    if (rc < 0 || (rc = trail_commit(r.trail, err)) < 0)
        goto out;

    /* Until the root workspace is terminal and every agent's sandbox is gone. */
    for (;;) {
        if (!r.trail_failed && !r.dg.on && trail_degraded(r.trail)) {
            if (r.model_seq > trail_head_seq(r.trail) && !kept_covers(&r)) {
                /* The lost batch held more of the model's own entries than are kept, and the
                 * model has moved on: it cannot be trusted to match the trail any more. */
                cerr_set(&r.trail_err, EIO,
                         "%s; the lost entries recorded WACP state changes, more than the %u MiB "
                         "kept to record them again",
                         trail_degraded_why(r.trail), RUN_KEPT_MAX >> 20);
                r.trail_failed = true;
            } else
                degraded_enter(&r);
        }
        if (r.trail_failed && !r.shutting_down) {
            fprintf(stderr,
                    "corral run: the trail cannot be written (%s); stopping every agent rather than act "
                    "unrecorded\n",
                    r.trail_err.msg);
            shutdown_run(&r, "trail_failed");
        }
        if (wacp_done(r.w) && !r.shutting_down)
            shutdown_run(&r, "run_ended");
        /* The model's file work on the pool too: a copy that ends now is refused and recorded
         * (its creator is failed), never left half made. */
        if (r.shutting_down && all_finalized(&r) && agent_host_inflight(r.host) == 0 &&
            pool_inflight(r.pool) == 0)
            break;
        arm_deadline(&r);
        rc = loop_run_once(r.loop, -1, err);
        if (rc < 0)
            goto out;
    }
    rc = 0;
    /* Whatever the last turn staged (the final state changes) is committed before we report. */
    if (trail_pending(r.trail) > 0 && trail_commit(r.trail, err) < 0)
        rc = -EIO;

    struct wacp_summary sum;
    wacp_summary_get(r.w, &sum);
    cJSON *tree = wacp_tree_json(r.w);
    const cJSON *root = tree ? cJSON_GetArrayItem(tree, 0) : NULL;
    const cJSON *st = root ? cJSON_GetObjectItemCaseSensitive(root, "state") : NULL;
    snprintf(res->root_state, sizeof(res->root_state), "%s", cJSON_IsString(st) ? st->valuestring : "?");
    res->root_closed = !strcmp(res->root_state, "closed");
    res->timed_out = r.timed_out;
    cJSON_Delete(tree);
    if (!o->quiet) {
        printf("corral run: the coordinator's workspace is %s%s\n", res->root_state,
               r.timed_out ? " (the run's --timeout expired)" : "");
        printf(
            "  workspaces %llu (%llu closed, %llu failed)  tasks %llu (%llu done)  checkpoints %llu\n",
            (unsigned long long)sum.workspaces, (unsigned long long)sum.closed,
            (unsigned long long)sum.failed, (unsigned long long)sum.tasks,
            (unsigned long long)sum.tasks_done, (unsigned long long)sum.checkpoints);
        printf("  envelopes %llu  signals %llu  integrations %llu  conflicts %llu  denials %llu\n",
               (unsigned long long)sum.envelopes, (unsigned long long)sum.signals,
               (unsigned long long)sum.integrations, (unsigned long long)sum.conflicts,
               (unsigned long long)sum.denials);
        printf("  trail %s (%llu entries); agents' logs in %s/logs\n", o->trail_path,
               (unsigned long long)trail_head_seq(r.trail), o->run_dir);
    }
out:
    if (r.w && rc < 0 && !r.shutting_down) {
        /* A failed start or loop: nothing of ours may outlive us. */
        for (struct run_ws *s = r.list; s; s = s->next)
            if (!s->exited)
                sandbox_child_signal(s->child, SIGKILL);
    }
    for (struct run_ws *s = r.list; s; s = s->next) {
        loop_watch_del(r.loop, &s->pid_watch);
        loop_watch_del(r.loop, &s->grace_watch);
        loop_watch_del(r.loop, &s->wall_watch);
        agent_free(s->agent);
        s->agent = NULL;
    }
    r.ending = true;
    pool_free(r.pool); /* joins the last tool calls before their contexts go */
    handoff_free(r.cmd_denials);
    /* What handoff_free staged: the totals of command sandboxes not hung up yet. */
    if (r.trail && trail_pending(r.trail) > 0) {
        struct cerr e = {0};
        if (trail_commit(r.trail, &e) < 0 && rc == 0)
            rc = cerr_set(err, EIO, "%s", e.msg);
    }
    control_free(r.ctl);
    if (r.loop) {
        loop_watch_del(r.loop, &r.deadline_watch);
        loop_watch_del(r.loop, &r.dg.retry_watch);
        loop_watch_del(r.loop, &r.timeout_watch);
        loop_watch_del(r.loop, &r.sig_watch);
    }
    agent_host_free(r.host);
    for (struct run_ws *s = r.list, *next; s; s = next) {
        next = s->next;
        run_ws_free(s);
    }
    wacp_free(r.w);
    kept_clear(&r);
    for (struct deferred *d = r.deferred, *next; d; d = next) {
        next = d->next;
        cJSON_Delete(d->id);
        free(d->ws);
        free(d);
    }
    loop_free(r.loop);
    if (r.sig_fd >= 0)
        close(r.sig_fd);
    trail_reader_close(r.reader);
    trail_close(r.trail);
    close(r.logs_fd);
    close(r.run_fd);
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    return rc;
}
