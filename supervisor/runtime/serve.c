/* supervisor/runtime/serve.c: serve_exec: the supervision loop of `corral exec` (the event loop
 * of supervisor/conn/loop.c): the sandbox's pidfd, forwarded signals, the timeout, budget
 * samples and the seccomp listener, and with --workspace DIR its one agent (pool, agent).
 * serve_host: the same loop and connection with an MCP host at the other end and no agent
 * process (`corral mcp`). */
#include "supervisor/runtime/serve.h"

#include "supervisor/egress/hub.h"
#include "supervisor/conn/agent.h"
#include "supervisor/conn/dispatch.h"
#include "supervisor/listeners/handoff.h"
#include "supervisor/conn/loop.h"
#include "supervisor/conn/pool.h"
#include "supervisor/listeners/listener.h"
#include "supervisor/runtime/role_tools.h"
#include "supervisor/trail/trail.h"
#include "tools/session.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

struct serve_state {
    struct loop *loop;
    struct sandbox_child *child;
    struct loop_watch pid_watch, timer_watch, grace_watch, sig_watch, notify_watch, sample_watch,
        warn_watch;
    const struct serve_exec_opts *o;
    bool notify_failed;
    int sig_fd;
    bool child_ended;
    bool timed_out;
    bool killed;
    struct agent *agent;
    const char *why; /* serve_host: what ended the session */
    struct agent_host *host;
    struct serve_degraded { /* degraded mode: the trail cannot be written (docs/trail.md) */
        bool on;
        unsigned attempts;
        int64_t since_us;
        struct timespec since;
        uint64_t refusals_before;
        char why[400];
        struct loop_watch retry_watch;
    } dg;
};

static void kill_sandbox(struct serve_state *s)
{
    if (!s->child || s->killed || s->child_ended)
        return;
    s->killed = true;
    sandbox_child_signal(s->child, SIGKILL);
}

static void on_child_end(void *data, uint32_t events)
{
    struct serve_state *s = data;
    s->child_ended = true;
    loop_watch_del(s->loop, &s->pid_watch);
}

static void on_timeout(void *data, uint32_t events)
{
    struct serve_state *s = data;
    loop_watch_del(s->loop, &s->timer_watch);
    s->timed_out = true;
    kill_sandbox(s);
}

/* ---- degraded mode (WACP recovery spec 2.4; docs/trail.md), as `corral run` has it: a commit
 * failed (disk full, I/O error). The agent goes on; its calls are refused (agent.c) while the
 * writer is tried again after 50 ms, doubling up to every 2 s; the first commit that succeeds
 * is system_degraded, then calls are accepted again. */
#define SERVE_DEGRADED_FIRST_SEC 0.05
#define SERVE_DEGRADED_MAX_SEC 2.0

static void on_degraded_retry(void *data, uint32_t events);

static void degraded_arm(struct serve_state *s)
{
    double sec = SERVE_DEGRADED_FIRST_SEC;
    for (unsigned i = 0; i < s->dg.attempts && sec < SERVE_DEGRADED_MAX_SEC; i++)
        sec *= 2;
    if (loop_timer_add(s->loop, &s->dg.retry_watch, sec > SERVE_DEGRADED_MAX_SEC ? SERVE_DEGRADED_MAX_SEC : sec,
                       on_degraded_retry, s) < 0)
        fprintf(stderr, "corral: trail: no timer to retry writing it; it stays unwritable\n");
}

static double since_sec(const struct timespec *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

/* After each turn: a trail that just failed puts the session in degraded mode. */
static void degraded_check(struct serve_state *s)
{
    struct trail *t = s->o->trail;
    if (!t || s->dg.on || !trail_degraded(t) || !s->host)
        return;
    s->dg.on = true;
    s->dg.attempts = 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    s->dg.since_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
    clock_gettime(CLOCK_MONOTONIC, &s->dg.since);
    s->dg.refusals_before = agent_host_trail_refusals(s->host);
    snprintf(s->dg.why, sizeof(s->dg.why), "%s", trail_degraded_why(t));
    fprintf(stderr,
            "corral: the trail cannot be written (%s): degraded mode: tool calls are refused, the "
            "agent goes on; retrying\n",
            s->dg.why);
    degraded_arm(s);
}

static void on_degraded_retry(void *data, uint32_t events)
{
    struct serve_state *s = data;
    (void)events;
    loop_watch_del(s->loop, &s->dg.retry_watch);
    struct trail *t = s->o->trail;
    s->dg.attempts++;
    struct cerr e = {0};
    if (trail_retry(t, &e) == 0) {
        char when[40];
        trail_format_time(s->dg.since_us, when, sizeof(when));
        cJSON *b = cJSON_CreateObject(), *aff = cJSON_AddArrayToObject(b, "affected_workspaces");
        cJSON_AddItemToArray(aff, cJSON_CreateString(s->o->workspace_id ? s->o->workspace_id : "agent"));
        cJSON_AddStringToObject(b, "reason", s->dg.why);
        cJSON_AddStringToObject(b, "scope", "trail_storage");
        cJSON_AddStringToObject(b, "coordinator_action", "wait");
        cJSON_AddStringToObject(b, "since", when);
        cJSON_AddNumberToObject(b, "duration_ms", since_sec(&s->dg.since) * 1000.0);
        cJSON_AddNumberToObject(b, "retry_attempts", s->dg.attempts);
        cJSON_AddNumberToObject(b, "replayed_entries", 0);
        cJSON *blk = cJSON_AddObjectToObject(b, "blocked");
        cJSON_AddNumberToObject(blk, "tool_calls",
                                (double)(agent_host_trail_refusals(s->host) - s->dg.refusals_before));
        cJSON_AddNumberToObject(blk, "requests", 0);
        cJSON_AddNumberToObject(blk, "held_events", 0);
        int rc = trail_append(t, NULL, "system", "system_degraded", b, NULL, &e);
        cJSON_Delete(b);
        if (rc == 0 && trail_commit(t, &e) == 0) {
            s->dg.on = false;
            agent_host_trail_recovered(s->host);
            if (s->o->trail_recovered)
                s->o->trail_recovered(s->o->trail_recovered_data);
            fprintf(stderr,
                    "corral: the trail is writable again after %.1f s (%u attempts): system_degraded "
                    "recorded, tool calls go on\n",
                    since_sec(&s->dg.since), s->dg.attempts);
            return;
        }
    }
    degraded_arm(s);
}

/* A denied syscall waits: recorded (committed here, before the answer) and answered at once,
 * a bounded batch per turn so a flood cannot starve the agent's pipes. */
static void on_notify(void *data, uint32_t events)
{
    struct serve_state *s = data;
    bool hup = false;
    struct cerr e = {0};
    if (listener_handle(s->o->notify, 64, &hup, &e) < 0 && !s->notify_failed) {
        s->notify_failed = true;
        fprintf(stderr, "corral: trail: cannot record a seccomp denial: %s\n", e.msg);
    }
    if (hup || (events & (EPOLLHUP | EPOLLERR)))
        loop_watch_del(s->loop, &s->notify_watch); /* no filtered process left */
}

static void on_sample(void *data, uint32_t events)
{
    struct serve_state *s = data;
    loop_watch_del(s->loop, &s->sample_watch);
    if (s->child_ended)
        return;
    s->o->sample(s->o->sample_data);
    if (loop_timer_add(s->loop, &s->sample_watch, s->o->sample_sec, on_sample, s) < 0)
        fprintf(stderr, "corral: cannot re-arm the budget sampling timer\n");
}

/* The wall-time budget's warning point (80% of the timeout), sampled on time. */
static void on_warn_time(void *data, uint32_t events)
{
    struct serve_state *s = data;
    loop_watch_del(s->loop, &s->warn_watch);
    if (!s->child_ended)
        s->o->sample(s->o->sample_data);
}

static void on_signal(void *data, uint32_t events)
{
    struct serve_state *s = data;
    struct signalfd_siginfo si;
    while (read(s->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (!s->child) {
            /* No agent to forward it to: the session ends, its running calls cancelled. */
            if (!s->why)
                s->why = si.ssi_signo == SIGTERM  ? "SIGTERM"
                         : si.ssi_signo == SIGINT ? "SIGINT"
                                                  : "SIGHUP";
            if (s->agent && !agent_ended(s->agent))
                agent_close(s->agent);
        } else if (!s->child_ended)
            sandbox_child_signal(s->child, (int)si.ssi_signo);
    }
}

/* The termination signals the caller has blocked (corral exec blocks them to forward them) are
 * forwarded to the sandbox while it is served, as they are without --workspace. */
static int watch_signals(struct serve_state *s)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    sigset_t blocked, fwd;
    sigemptyset(&fwd);
    if (sigprocmask(SIG_BLOCK, NULL, &blocked) < 0)
        return -errno;
    bool any = false;
    for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
        if (sigismember(&blocked, sigs[i]) == 1) {
            sigaddset(&fwd, sigs[i]);
            any = true;
        }
    if (!any)
        return 0;
    s->sig_fd = signalfd(-1, &fwd, SFD_NONBLOCK | SFD_CLOEXEC);
    if (s->sig_fd < 0)
        return -errno;
    return loop_watch_add(s->loop, &s->sig_watch, s->sig_fd, EPOLLIN, on_signal, s);
}

static void on_grace_end(void *data, uint32_t events)
{
    struct serve_state *s = data;
    loop_watch_del(s->loop, &s->grace_watch);
    kill_sandbox(s);
}

static void on_agent_end(struct agent *a, enum agent_end why, void *data)
{
    struct serve_state *s = data;
    if (!s->why)
        s->why = why == AGENT_END_EOF     ? "the host closed its end"
                 : why == AGENT_END_IO    ? "the host's pipe failed"
                 : why == AGENT_END_ABUSE ? "too many malformed messages"
                                          : "out of memory";
    if (!s->child)
        return;
    /* A failed connection fails the agent: it has no other way to ask for anything. An agent that
     * merely closed its pipes may still be finishing its own work: wait for its pidfd. */
    if (why == AGENT_END_ABUSE || why == AGENT_END_NOMEM) {
        fprintf(stderr, "corral: agent %s: connection failed (%s): stopping its sandbox\n",
                agent_name(a), why == AGENT_END_ABUSE ? "too many malformed messages" : "out of memory");
        /* A moment to read the last error, which says why; nothing it sends is read any more. */
        if (loop_timer_add(s->loop, &s->grace_watch, 1.0, on_grace_end, s) < 0)
            kill_sandbox(s);
    }
}

static int open_workspace(const char *path, struct cerr *err)
{
    if (!path || !*path)
        return cerr_set(err, EINVAL, "--workspace: no directory given");
    /* No link on the way: a link in a directory another user can write (/tmp/proj, or a
     * project under their home) could be swapped to lead into a root-only directory, which
     * the broker, as root, would then serve to the agent. */
    int fd = util_open_nolinks(path, O_PATH | O_DIRECTORY);
    if (fd < 0) {
        int e = -fd;
        if (e == ELOOP)
            return cerr_set(err, e,
                            "--workspace %s: the path goes through a symbolic link, which another "
                            "user could swap; give the directory's real path",
                            path);
        if (e == ENOTDIR)
            return cerr_set(err, e, "--workspace %s: not a directory; give the directory to serve",
                            path);
        return cerr_set(err, e, "--workspace %s: %s", path, strerror(e));
    }
    return fd;
}

static int serve(const struct serve_exec_opts *o, struct sandbox_child *child, int to_agent,
                 int from_agent, bool *timed_out, const char **why, struct cerr *err);

int serve_exec(const struct serve_exec_opts *o, struct sandbox_child *child, int to_agent,
               int from_agent, bool *timed_out, struct cerr *err)
{
    return serve(o, child, to_agent, from_agent, timed_out, NULL, err);
}

int serve_host(const struct serve_exec_opts *o, int in_fd, int out_fd, const char **why,
               struct cerr *err)
{
    return serve(o, NULL, out_fd, in_fd, NULL, why, err);
}

/* CHILD NULL: no agent process (serve_host); the session lasts as long as the connection. */
static int serve(const struct serve_exec_opts *o, struct sandbox_child *child, int to_agent,
                 int from_agent, bool *timed_out, const char **why, struct cerr *err)
{
    if (timed_out)
        *timed_out = false;
    const struct tool_surface *surface = NULL;
    _cleanup_close_ int root_fd = -1;
    _cleanup_(tool_session_freep) struct tool_session *session = NULL;
    if (o->workspace) {
        const char *surface_name = o->view->surface ? o->view->surface : "wap";
        surface = tool_surface_find(surface_name);
        if (!surface)
            return cerr_set(err, EINVAL, "tool surface \"%s\" is unknown (wap, file, voltagent, kward)",
                            surface_name);
        root_fd = open_workspace(o->workspace, err);
        if (root_fd < 0)
            return root_fd;
        int sr = tool_session_new(&session);
        if (sr < 0)
            return cerr_set(err, sr, "out of memory for the tool session");
    }
    struct role_tools tools;

    struct serve_state s = {.child = child, .sig_fd = -1, .o = o};
    /* A write to an agent that has gone must be an EPIPE for that agent, not the end of corral. */
    struct sigaction ign = {.sa_handler = SIG_IGN}, old_pipe;
    if (o->workspace)
        sigaction(SIGPIPE, &ign, &old_pipe);
    struct pool *pool = NULL;
    struct handoff *cmd_denials = NULL;
    struct agent_host *host = NULL;
    struct agent *agent = NULL;
    struct egress *egress = NULL;
    struct egress_hub *hub = NULL;
    int r = loop_new(&s.loop, err);
    if (r < 0) {
        if (o->workspace)
            sigaction(SIGPIPE, &old_pipe, NULL);
        return r;
    }
    if (o->egress &&
        (r = egress_setup_start(o->egress, s.loop, child, &o->egress_opts, &egress, err)) < 0)
        goto out;
    if (!o->workspace)
        goto supervise; /* no agent: the sandbox alone (signals, budgets, timeout, denials) */
    if (o->trail) {
        /* Command sandboxes' denied system calls are recorded too, in this agent's workspace. */
        r = handoff_new(s.loop, o->trail, &cmd_denials, err);
        if (r < 0)
            goto out;
    }
    /* Its command sandboxes get proxies of their own, by the same policy. */
    if (o->egress && o->view->authority.commands &&
        (r = egress_hub_new(s.loop, &o->egress->policy, &o->egress->spec, &o->egress_opts, &hub, err)) <
            0)
        goto out;
    struct role_tools_opts to = {.view = o->view,
                                 .root_fd = root_fd,
                                 .root_host_path = o->workspace,
                                 .cgroup_parent = child,
                                 .session = session,
                                 .denials = cmd_denials,
                                 .tag = o->workspace_id ? o->workspace_id : "agent",
                                 .egress_hub = hub,
                                 .egress_spec = o->egress ? &o->egress->spec : NULL};
    role_tools_init(&tools, &to);
    r = pool_new(s.loop, 0, &pool, err);
    if (r < 0)
        goto out;
    struct agent_host_opts ho = {.max_message = o->max_message};
    r = agent_host_new(s.loop, pool, o->trail, &ho, &host, err);
    if (r < 0)
        goto out;
    s.host = host;
    struct agent_config ac = {
        .name = o->workspace_id ? o->workspace_id : "agent",
        .in_fd = from_agent,
        .out_fd = to_agent,
        .surface = surface,
        .tools = &tools.ctx,
        .on_end = on_agent_end,
        .data = &s,
        .on_message = dispatch_message,
        .host = o->host,
    };
    r = agent_new(host, &ac, &agent, err);
    if (r < 0)
        goto out;
    s.agent = agent;
supervise:
    r = child
            ? loop_watch_add(s.loop, &s.pid_watch, sandbox_child_pidfd(child), EPOLLIN, on_child_end, &s)
            : 0;
    if (r < 0) {
        r = cerr_set(err, r, "watching the agent's sandbox: %s", strerror(-r));
        goto out;
    }
    r = watch_signals(&s);
    if (r < 0) {
        r = cerr_set(err, r, "forwarding signals to the agent's sandbox: %s", strerror(-r));
        goto out;
    }
    if (o->notify) {
        r = loop_watch_add(s.loop, &s.notify_watch, listener_fd(o->notify), EPOLLIN, on_notify, &s);
        if (r < 0) {
            r = cerr_set(err, r, "watching the sandbox's seccomp listener: %s", strerror(-r));
            goto out;
        }
    }
    if (o->sample && o->sample_sec > 0) {
        r = loop_timer_add(s.loop, &s.sample_watch, o->sample_sec, on_sample, &s);
        if (r < 0) {
            r = cerr_set(err, r, "setting the budget sampling timer: %s", strerror(-r));
            goto out;
        }
    }
    if (o->sample && o->sample_sec > 0 && o->timeout_sec > 0) {
        r = loop_timer_add(s.loop, &s.warn_watch, o->timeout_sec * 0.8, on_warn_time, &s);
        if (r < 0) {
            r = cerr_set(err, r, "setting the budget warning timer: %s", strerror(-r));
            goto out;
        }
    }
    if (o->timeout_sec > 0) {
        r = loop_timer_add(s.loop, &s.timer_watch, o->timeout_sec, on_timeout, &s);
        if (r < 0) {
            r = cerr_set(err, r, "setting the --timeout timer: %s", strerror(-r));
            goto out;
        }
    }
    /* Until the sandbox (or, without one, the connection) has ended and no tool call still
     * uses the workspace fd. */
    while ((child ? !s.child_ended : !agent_ended(agent)) || (host && agent_host_inflight(host) > 0)) {
        r = loop_run_once(s.loop, -1, err);
        if (r < 0) {
            kill_sandbox(&s);
            break;
        }
        r = 0;
        degraded_check(&s);
    }
out:
    loop_watch_del(s.loop, &s.dg.retry_watch);
    if (r < 0 && !s.child_ended)
        kill_sandbox(&s);
    loop_watch_del(s.loop, &s.pid_watch);
    loop_watch_del(s.loop, &s.timer_watch);
    loop_watch_del(s.loop, &s.grace_watch);
    loop_watch_del(s.loop, &s.sig_watch);
    loop_watch_del(s.loop, &s.notify_watch);
    loop_watch_del(s.loop, &s.sample_watch);
    loop_watch_del(s.loop, &s.warn_watch);
    if (s.sig_fd >= 0)
        close(s.sig_fd);
    agent_free(agent);
    /* agent_free defers to the last running call; the pool's join below finishes those. */
    pool_free(pool);
    handoff_free(cmd_denials); /* after the pool: no command is left to hand one over */
    egress_hub_free(hub);      /* likewise */
    agent_host_free(host);
    egress_free(egress); /* records the end of every connection still open */
    loop_free(s.loop);
    if (o->workspace)
        sigaction(SIGPIPE, &old_pipe, NULL);
    if (timed_out)
        *timed_out = s.timed_out;
    if (why)
        *why = s.why ? s.why : "the host closed its end";
    return r < 0 ? r : 0;
}
