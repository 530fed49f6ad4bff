/* tools/broker/command.c: executeCommand's engine. The command runs as `sh -c COMMAND` in a
 * command sandbox (sandbox/sandbox.h): the role's command profile, plus the workspace bound at
 * /workspace (writable only when the role may write), cwd inside it, no network, landlock,
 * nested in the agent's cgroup.
 * Output comes back through pipes, capped: at the cap the command is stopped (output that never
 * ends, like `yes`, must not run on to its timeout). Time is enforced with SIGTERM then SIGKILL;
 * a cancelled call (ctx->call) is killed at once.
 * Storage: a command writes behind the broker's back, so under a `storage_bytes` budget no file
 * it writes may grow past the room left (RLIMIT_FSIZE), the workspace is measured while it runs
 * (stopped once over) and after it; a command that passed the budget fails. */
#include "tools/broker/broker.h"
#include "tools/broker/storage.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define KILL_GRACE_SEC 2.0
#define STORAGE_CHECK_MIN_SEC 0.5 /* between measures of the workspace while a command runs, */
#define STORAGE_CHECK_FACTOR 20.0 /* or this many times what one measure took, if longer */
#define SANDBOX_SHELL "/bin/sh"

static int stdin_memfd(const char *data, size_t len)
{
    int fd = memfd_create("corral-stdin", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)w;
    }
    if (lseek(fd, 0, SEEK_SET) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void broker_command_result_clear(struct broker_command_result *r)
{
    if (!r)
        return;
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof(*r));
}

/* The sandbox's minimal environment (sandbox_default_env) with the request's KEY=VALUE entries on top (a request key replaces the
 * base entry of the same name). NULL-terminated; the strings are borrowed. */
static const char **build_env(const struct broker_command_opts *o, const char *const *proxy_env)
{
    const char *const *base_env = sandbox_default_env;
    size_t nb = 0;
    while (base_env[nb])
        nb++;
    size_t np = 0;
    while (proxy_env && proxy_env[np])
        np++;
    const char **env = calloc(nb + np + o->n_env + 1, sizeof(char *));
    if (!env)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < nb; i++) {
        size_t kl = (size_t)(strchr(base_env[i], '=') - base_env[i]);
        bool overridden = false;
        for (size_t k = 0; k < o->n_env && !overridden; k++)
            overridden = strncmp(o->env[k], base_env[i], kl + 1) == 0;
        if (!overridden)
            env[n++] = base_env[i];
    }
    for (size_t i = 0; i < np; i++) { /* the proxy variables, unless the call sets its own */
        size_t kl = (size_t)(strchr(proxy_env[i], '=') - proxy_env[i]);
        bool overridden = false;
        for (size_t k = 0; k < o->n_env && !overridden; k++)
            overridden = strncmp(o->env[k], proxy_env[i], kl + 1) == 0;
        if (!overridden)
            env[n++] = proxy_env[i];
    }
    for (size_t k = 0; k < o->n_env; k++)
        env[n++] = o->env[k];
    env[n] = NULL;
    return env;
}

struct sink {
    int fd;
    char *buf;
    size_t len, cap;
};

/* Reads what is there; keeps it while the shared budget lasts, drops the rest (the command must
 * never block on a full pipe). Past the budget it returns at once, so the caller stops the
 * command now: read on while the command writes, and it could finish and exit 0 first (seen:
 * 200000 bytes under a 1000-byte cap, exit 0, not 137). Returns false at EOF or error. */
static bool sink_drain(struct sink *s, size_t *budget, bool *truncated)
{
    char tmp[16384];
    for (;;) {
        ssize_t n = read(s->fd, tmp, sizeof(tmp));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno == EAGAIN;
        if (n == 0)
            return false;
        size_t keep = (size_t)n < *budget ? (size_t)n : *budget;
        if (keep < (size_t)n)
            *truncated = true;
        if (keep) {
            if (s->len + keep > s->cap) {
                size_t nc = s->cap ? s->cap * 2 : 16384;
                while (nc < s->len + keep)
                    nc *= 2;
                char *b = realloc(s->buf, nc);
                if (!b) {
                    *truncated = true;
                    return true;
                }
                s->buf = b;
                s->cap = nc;
            }
            memcpy(s->buf + s->len, tmp, keep);
            s->len += keep;
            *budget -= keep;
        }
        if (*truncated)
            return true;
    }
}

/* TEXT (valid UTF-8, LEN bytes) with each NUL byte as U+FFFD: the result travels as a C string
 * (cJSON), which would end at the first NUL and lose everything after it. Takes TEXT. */
static char *nul_to_replacement(char *text, size_t *len)
{
    size_t nuls = 0;
    for (size_t i = 0; i < *len; i++)
        nuls += text[i] == '\0';
    if (!nuls)
        return text;
    char *out = malloc(*len + 2 * nuls + 1);
    if (!out) {
        free(text);
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < *len; i++) {
        if (text[i]) {
            out[o++] = text[i];
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
        }
    }
    out[o] = '\0';
    free(text);
    *len = o;
    return out;
}

/* The workspace's bytes against its budget: 1 over it, 0 within, -errno when it cannot be
 * measured (too many entries or too deep counts as over: the budget cannot vouch for it). */
static int storage_over(const struct tool_ctx *ctx, uint64_t *used, double *took)
{
    double t0 = util_now();
    int r = broker_storage_used(ctx->root_fd, used);
    if (took)
        *took = util_now() - t0;
    if (r == -EFBIG)
        return 1;
    return r < 0 ? r : *used > ctx->storage_bytes;
}

int broker_command(const struct tool_ctx *ctx, const struct broker_command_opts *o,
                   struct broker_command_result *r, struct broker_err *e)
{
    memset(r, 0, sizeof(*r));
    if (!ctx->allow_commands)
        return broker_fail(e, BROKER_E_DENIED, "command", "this agent's role may not run commands");
    if (!o->command || !*o->command)
        return broker_fail(e, BROKER_E_INVALID, "command", "command is empty");

    /* The working directory goes through the same containment as any path, so a cwd outside
     * the workspace is refused here, not discovered inside the sandbox. */
    _cleanup_free_ char *rel = NULL;
    if (broker_path_clean(o->workdir ? o->workdir : "", "workingDirectory", &rel, e) < 0)
        return -1;
    {
        _cleanup_close_ int wd = broker_openat(ctx->root_fd, rel, O_PATH | O_DIRECTORY, 0,
                                               RESOLVE_NO_SYMLINKS, "workingDirectory", e);
        if (wd < 0)
            return -1;
    }
    _cleanup_free_ char *cwd = util_printf("/workspace%s%s", *rel ? "/" : "", rel);
    bool proxy = ctx->egress_spec && ctx->adopt_egress;
    _cleanup_free_ const char **env = build_env(o, proxy ? ctx->egress_env : NULL);
    /* No profile from the policy: the sandbox module's safe defaults (docs/sandbox.md, "What is visible inside"). */
    struct sandbox_profile dflt;
    const struct sandbox_profile *base = ctx->command_profile;
    if (!base) {
        sandbox_profile_default(&dflt);
        base = &dflt;
    }
    _cleanup_free_ struct sandbox_bind *binds = calloc(base->n_binds + 1, sizeof(*binds));
    if (!cwd || !env || !binds)
        return broker_fail(e, BROKER_E_IO, "command", "out of memory");
    if (base->n_binds)
        memcpy(binds, base->binds, base->n_binds * sizeof(*binds));
    /* The bind names the root fd itself, not the host path string: the sandbox gets exactly the
     * directory the broker serves, even if the path was renamed or replaced meanwhile. */
    char root_fd_path[64];
    snprintf(root_fd_path, sizeof(root_fd_path), "/proc/self/fd/%d", ctx->root_fd);
    binds[base->n_binds] = (struct sandbox_bind){
        .host = root_fd_path, .inside = "/workspace", .writable = !ctx->read_only};
    struct sandbox_profile p = *base;
    p.binds = binds;
    p.n_binds = base->n_binds + 1;
    p.cwd = cwd;
    p.envp = (char *const *)env;
    p.net = proxy ? SANDBOX_NET_PROXY : SANDBOX_NET_NONE;
    p.egress = proxy ? ctx->egress_spec : NULL;
    p.seccomp.network = proxy;
    p.landlock = true;
    p.cgroup_parent = ctx->cgroup_parent;
    /* The next command's sandbox is prepared in the background once this one ends
     * (sandbox/warm.c): an agent's commands are (they nest in its cgroup), and so are those of a
     * host with no agent sandbox to nest in (corral mcp), whose every command was a cold start. */
    p.prepare_next = true;
    p.seccomp.notify = ctx->adopt_listener != NULL;
    /* Under a storage budget no file the command writes may grow past the room left (the
     * kernel's RLIMIT_FSIZE: the write fails, SIGXFSZ); many files are caught by the measures
     * below. At least 1 byte: 0 would mean no limit. */
    bool guard = ctx->storage_bytes && !ctx->read_only;
    /* before: what the workspace held; brim: what it holds once the room left is used up */
    uint64_t used = 0, before = 0, brim = 0;
    double took = 0, check_every = STORAGE_CHECK_MIN_SEC;
    if (guard) {
        int over = storage_over(ctx, &used, &took);
        if (over < 0)
            return broker_fail(e, BROKER_E_IO, "command", "cannot measure the workspace: %s",
                               strerror(-over));
        uint64_t room = used < ctx->storage_bytes ? ctx->storage_bytes - used : 0;
        /* Rounded down to its top four bits (at most an eighth less), so that prepared
         * sandboxes, keyed by their profile, still serve the next commands. */
        unsigned sh = 0;
        for (uint64_t x = room; x > 15; x >>= 1)
            sh++;
        room = (room >> sh) << sh;
        if (room == 0)
            room = 1;
        if (!p.limits.fsize || p.limits.fsize > room)
            p.limits.fsize = room;
        before = used;
        brim = used + p.limits.fsize;
        if (took * STORAGE_CHECK_FACTOR > check_every)
            check_every = took * STORAGE_CHECK_FACTOR;
    }
    bool storage_stop = false;

    double timeout = o->timeout_sec > 0 ? o->timeout_sec : ctx->limits.command_timeout_sec;
    if (ctx->limits.command_timeout_max > 0 && timeout > ctx->limits.command_timeout_max)
        timeout = ctx->limits.command_timeout_max;
    if (timeout <= 0)
        timeout = 30.0;

    int outp[2] = {-1, -1}, errp[2] = {-1, -1};
    /* stdin: the caller's bytes from a sealed-size memfd (no pipe to keep fed while the output
     * is drained), or /dev/null. */
    _cleanup_close_ int devnull = o->input ? stdin_memfd(o->input, o->input_len)
                                           : open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0 || pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
        int err = errno;
        for (int i = 0; i < 2; i++) {
            if (outp[i] >= 0)
                close(outp[i]);
            if (errp[i] >= 0)
                close(errp[i]);
        }
        return broker_fail(e, BROKER_E_EXEC, "command", "cannot make pipes: %s", strerror(err));
    }
    struct sandbox_stdio stdio = {.in = devnull, .out = outp[1], .err = errp[1]};
    char *const argv[] = {"sh", "-c", (char *)o->command, NULL};
    struct sandbox_child *child = NULL;
    struct cerr cerr = {0};
    double start = util_now();
    /* A command that may write could change any file: its trail entry says so (a resume checks
     * only what file tools wrote after it: docs/protocol-wacp.md). */
    if (!ctx->read_only && ctx->call)
        ctx->call->changes_unknown = true;
    int rc = sandbox_spawn(&p, SANDBOX_SHELL, argv, &stdio, &child, &cerr);
    close(outp[1]);
    close(errp[1]);
    struct sink sinks[2] = {{.fd = outp[0]}, {.fd = errp[0]}};
    if (rc < 0) {
        close(outp[0]);
        close(errp[0]);
        return broker_fail(e, BROKER_E_EXEC, "command", "the command sandbox did not start: %s",
                           cerr.msg);
    }
    if (p.seccomp.notify) {
        int lfd = sandbox_child_take_notify_fd(child);
        if (lfd >= 0)
            ctx->adopt_listener(ctx->adopt_data, ctx->adopt_tag, lfd, &p.seccomp);
    }
    if (proxy) {
        /* Its listeners, and a pidfd to know when it ends, to the loop's proxies. */
        int fds[SANDBOX_EGRESS_MAX_FDS];
        size_t n = sandbox_egress_count(p.egress);
        int pfd = fcntl(sandbox_child_pidfd(child), F_DUPFD_CLOEXEC, 3);
        if (pfd >= 0 && sandbox_child_take_egress_fds(child, fds, n) == 0)
            ctx->adopt_egress(ctx->egress_data, fds, n, pfd);
        else if (pfd >= 0)
            close(pfd);
    }
    fcntl(outp[0], F_SETFL, O_NONBLOCK);
    fcntl(errp[0], F_SETFL, O_NONBLOCK);
    size_t budget = ctx->limits.max_output_bytes;
    bool open_out = true, open_err = true, ended = false, termed = false, killed = false;
    double deadline = start + timeout, kill_at = 0, check_at = start + check_every;
    int cancel_fd = ctx->call ? ctx->call->cancel_fd : -1;
    while (open_out || open_err || !ended) {
        struct pollfd pf[4];
        int np = 0, i_out = -1, i_err = -1, i_pid = -1, i_cancel = -1;
        if (cancel_fd >= 0 && !r->cancelled && !ended)
            pf[i_cancel = np++] = (struct pollfd){.fd = cancel_fd, .events = POLLIN};
        if (open_out)
            pf[i_out = np++] = (struct pollfd){.fd = outp[0], .events = POLLIN};
        if (open_err)
            pf[i_err = np++] = (struct pollfd){.fd = errp[0], .events = POLLIN};
        if (!ended)
            pf[i_pid = np++] = (struct pollfd){.fd = sandbox_child_end_fd(child), .events = POLLIN};
        double now = util_now();
        double until = killed ? now + 1.0 : termed ? kill_at : deadline;
        if (guard && !ended && !killed && check_at < until)
            until = check_at;
        int wait_ms = until > now ? (int)((until - now) * 1000.0) + 1 : 0;
        int n = poll(pf, (nfds_t)np, wait_ms);
        if (n < 0 && errno != EINTR)
            break;
        if (i_out >= 0 && pf[i_out].revents)
            open_out = sink_drain(&sinks[0], &budget, &r->truncated);
        if (i_err >= 0 && pf[i_err].revents)
            open_err = sink_drain(&sinks[1], &budget, &r->truncated);
        if (i_pid >= 0 && pf[i_pid].revents && sandbox_child_ended(child)) {
            ended = true;
            /* Every process of the sandbox but init is gone (init reaped them before it reported
             * the end; or init is gone itself, and they with it): what is left in the pipes is
             * all there will be. Init's own exit is not waited for (sandbox_child_free). */
            if (open_out)
                sink_drain(&sinks[0], &budget, &r->truncated);
            if (open_err)
                sink_drain(&sinks[1], &budget, &r->truncated);
            open_out = open_err = false;
        }
        if (ctx->call)
            ctx->call->output_bytes = ctx->limits.max_output_bytes - budget;
        /* Cancelled, or past the output cap: stop it now; what it wrote so far is the answer. */
        if (i_cancel >= 0 && pf[i_cancel].revents)
            r->cancelled = true;
        if (!ended && !killed && (r->cancelled || r->truncated)) {
            killed = true;
            sandbox_child_signal(child, SIGKILL);
        }
        now = util_now();
        if (guard && !ended && !killed && now >= check_at) {
            if (storage_over(ctx, &used, &took) == 1) {
                storage_stop = killed = true;
                sandbox_child_signal(child, SIGKILL);
            }
            now = util_now();
            check_at = now + (took * STORAGE_CHECK_FACTOR > check_every ? took * STORAGE_CHECK_FACTOR
                                                                         : check_every);
        }
        if (!ended && !termed && !killed && now >= deadline) {
            r->timed_out = true;
            termed = true;
            kill_at = now + (o->kill_grace_sec > 0 ? o->kill_grace_sec : KILL_GRACE_SEC);
            sandbox_child_signal(child, SIGTERM);
        } else if (!ended && termed && !killed && now >= kill_at) {
            killed = true;
            sandbox_child_signal(child, SIGKILL);
        }
    }
    close(outp[0]);
    close(errp[0]);
    struct sandbox_result res;
    rc = sandbox_child_wait_status(child, &res, &cerr); /* the answer reports no usage */
    sandbox_child_free(child);
    r->duration_ms = (uint64_t)((util_now() - start) * 1000.0 + 0.5);
    r->out = broker_utf8_sanitize(sinks[0].buf ? sinks[0].buf : "", sinks[0].len, 0, &r->out_len);
    r->err = broker_utf8_sanitize(sinks[1].buf ? sinks[1].buf : "", sinks[1].len, 0, &r->err_len);
    if (r->out)
        r->out = nul_to_replacement(r->out, &r->out_len);
    if (r->err)
        r->err = nul_to_replacement(r->err, &r->err_len);
    free(sinks[0].buf);
    free(sinks[1].buf);
    if (!r->out || !r->err) {
        broker_command_result_clear(r);
        return broker_fail(e, BROKER_E_IO, "command", "out of memory");
    }
    if (rc < 0) {
        broker_command_result_clear(r);
        return broker_fail(e, BROKER_E_EXEC, "command", "waiting for the command failed: %s", cerr.msg);
    }
    if (res.exec_failed) {
        broker_command_result_clear(r);
        return broker_fail(e, BROKER_E_EXEC, "command", "the shell could not be executed: %s",
                           strerror(res.exec_errno));
    }
    r->exit_code = res.exited ? res.exit_code : 128 + res.signal;
    /* What it left must fit: a command that grew the workspace past the budget (or wrote a file
     * as large as the room left: SIGXFSZ) fails, so the agent knows (one that only reads or
     * removes, in a workspace already over, does not); write tools and checkpoints stay
     * refused until it removes files. Nothing is rolled back: another call may be writing the
     * same workspace now, and undoing its files would be worse. */
    if (guard) {
        int over = storage_over(ctx, &used, NULL);
        /* SIGXFSZ, or a shell's report of it (status 128 + SIGXFSZ) */
        bool xfsz = res.exited ? res.exit_code == 128 + SIGXFSZ : res.signal == SIGXFSZ;
        /* A shell goes on after a program it ran hit the file size limit: a workspace filled
         * to the brim says the same. */
        if (over < 0 || storage_stop || xfsz || (used > before && (over == 1 || used >= brim))) {
            int code = r->exit_code;
            broker_command_result_clear(r);
            if (over < 0)
                return broker_fail(e, BROKER_E_IO, "command", "cannot measure the workspace: %s",
                                   strerror(-over));
            return broker_fail(e, BROKER_E_TOO_LARGE, "command",
                               "the command %s the workspace's storage budget of %ju bytes "
                               "(storage_bytes): it holds %ju bytes now%s; remove files to write "
                               "again (status %d)",
                               storage_stop ? "was stopped: it passed"
                               : over == 1  ? "passed"
                                            : "wrote a file as large as the room left in",
                               (uintmax_t)ctx->storage_bytes, (uintmax_t)used,
                               over == 1 && used <= ctx->storage_bytes ? " (too many entries to measure)" : "",
                               code);
        }
    }
    return 0;
}
