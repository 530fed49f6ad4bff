/* tests/unit/test_zygote.c: the sandbox fork server. Its request body round-trips; a body cut
 * short, padded, with a count it cannot hold, a string without its NUL or with one inside, or
 * a bind fd it did not bring is refused with a message; and sandboxes started through a real
 * zygote from several threads at once run, are this process's own children (waitable, as with
 * a direct clone), hold none of this process's fds, and see a workspace passed by fd. The
 * egress listener spec of a "proxy" sandbox round-trips, a malformed one is refused, and a
 * proxy sandbox is cloned by the zygote too, its listeners handed up. A command sandbox's end
 * (init's report) means nothing of it runs, and an init stopped between its report and its exit
 * (a SIGSTOP from a host process of its uid) does not hold the background thread. */
#include "sandbox/zygote.h"

#include <fcntl.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include <cmocka.h>

static unsigned char *encode_sample(size_t *len, int *bind_fds, size_t *nb)
{
    struct sandbox_profile p;
    sandbox_profile_default(&p);
    static const struct sandbox_bind binds[] = {
        {.host = "/srv/data", .inside = "/data", .writable = true},
        {.host = "/proc/self/fd/7", .inside = "/workspace", .writable = true},
        {.host = "/opt", .optional = true},
    };
    static char *const env[] = {"A=1", "B=two", NULL};
    p.binds = binds;
    p.n_binds = 3;
    p.envp = env;
    p.cwd = "/workspace";
    char *const argv[] = {"sh", "-c", "echo hi", NULL};
    unsigned char *buf = NULL;
    struct cerr e;
    assert_int_equal(zygote_encode(&p, "/bin/sh", argv, &buf, len, bind_fds, nb, &e), 0);
    return buf;
}

static void body_round_trips(void **state)
{
    (void)state;
    size_t len, nb;
    int bfds[8];
    unsigned char *buf = encode_sample(&len, bfds, &nb);
    assert_int_equal(nb, 1);
    assert_int_equal(bfds[0], 7);
    struct zygote_decoded d;
    struct cerr e;
    int got[] = {42};
    assert_int_equal(zygote_decode(buf, len, got, 1, &d, &e), 0);
    assert_string_equal(d.program, "/bin/sh");
    assert_string_equal(d.argv[2], "echo hi");
    assert_null(d.argv[3]);
    assert_string_equal(d.p.envp[1], "B=two");
    assert_null(d.p.envp[2]);
    assert_string_equal(d.p.cwd, "/workspace");
    assert_string_equal(d.p.hostname, "corral");
    assert_int_equal(d.p.n_binds, 3);
    assert_string_equal(d.p.binds[0].host, "/srv/data");
    assert_true(d.p.binds[0].writable);
    assert_string_equal(d.p.binds[1].host, "/proc/self/fd/42"); /* the fd it received */
    assert_string_equal(d.p.binds[1].inside, "/workspace");
    assert_null(d.p.binds[2].inside);
    assert_true(d.p.binds[2].optional);
    assert_int_equal(d.p.host_uid, 65534);
    assert_int_equal(d.p.limits.nofile, 1024);
    assert_true(d.p.landlock);
    zygote_decoded_free(&d);
    free(buf);
}

static void malformed_bodies_refused(void **state)
{
    (void)state;
    size_t len, nb;
    int bfds[8];
    unsigned char *buf = encode_sample(&len, bfds, &nb);
    struct zygote_decoded d;
    struct cerr e;
    int got[] = {42};
    /* every truncation */
    for (size_t cut = 0; cut < len; cut++)
        assert_true(zygote_decode(buf, cut, got, 1, &d, &e) < 0);
    /* a byte too many */
    unsigned char *more = malloc(len + 1);
    memcpy(more, buf, len);
    more[len] = 0;
    assert_true(zygote_decode(more, len + 1, got, 1, &d, &e) < 0);
    assert_non_null(strstr(e.msg, "malformed"));
    free(more);
    /* the bind fd missing, or one too many */
    assert_true(zygote_decode(buf, len, got, 0, &d, &e) < 0);
    int two[] = {42, 43};
    assert_true(zygote_decode(buf, len, two, 2, &d, &e) < 0);
    /* a huge argument count: refused before any allocation */
    unsigned char *bad = malloc(len);
    memcpy(bad, buf, len);
    uint32_t huge = 0xfffffff0u;
    memcpy(bad + 4 * 6 + 8 * 3 + 4, &huge, 4); /* argc */
    assert_true(zygote_decode(bad, len, got, 1, &d, &e) < 0);
    assert_non_null(strstr(e.msg, "exceed"));
    /* a string whose NUL is missing, or with one inside */
    memcpy(bad, buf, len);
    size_t prog = 4 * 6 + 8 * 3 + 4 * 3; /* the program string's length field */
    bad[prog + 4 + strlen("/bin/sh")] = 'x';
    assert_true(zygote_decode(bad, len, got, 1, &d, &e) < 0);
    memcpy(bad, buf, len);
    bad[prog + 4 + 2] = '\0';
    assert_true(zygote_decode(bad, len, got, 1, &d, &e) < 0);
    /* an unknown network mode */
    memcpy(bad, buf, len);
    bad[0] = 9;
    assert_true(zygote_decode(bad, len, got, 1, &d, &e) < 0);
    free(bad);
    free(buf);
}

static const struct sandbox_egress sample_egress = {
    .http_port = 3128, .socks_port = 1080, .dns = true, .capture = {80, 443}, .n_capture = 2};

static unsigned char *encode_proxy(size_t *len, const struct sandbox_egress *g)
{
    struct sandbox_profile p;
    sandbox_profile_default(&p);
    p.net = SANDBOX_NET_PROXY;
    p.egress = g;
    char *const argv[] = {"true", NULL};
    unsigned char *buf = NULL;
    size_t nb;
    struct cerr e;
    assert_int_equal(zygote_encode(&p, "/bin/true", argv, &buf, len, NULL, &nb, &e), 0);
    return buf;
}

static void egress_spec_round_trips(void **state)
{
    (void)state;
    size_t len;
    unsigned char *buf = encode_proxy(&len, &sample_egress);
    struct zygote_decoded d;
    struct cerr e;
    assert_int_equal(zygote_decode(buf, len, NULL, 0, &d, &e), 0);
    assert_int_equal(d.p.net, SANDBOX_NET_PROXY);
    assert_ptr_equal(d.p.egress, &d.egress);
    assert_int_equal(d.egress.http_port, 3128);
    assert_int_equal(d.egress.socks_port, 1080);
    assert_true(d.egress.dns);
    assert_int_equal(d.egress.n_capture, 2);
    assert_int_equal(d.egress.capture[0], 80);
    assert_int_equal(d.egress.capture[1], 443);
    zygote_decoded_free(&d);
    free(buf);
    /* A spec on a profile that is not "proxy" is not sent (spawn.c ignores it there). */
    struct sandbox_profile p;
    sandbox_profile_default(&p);
    p.net = SANDBOX_NET_LOOPBACK;
    p.egress = &sample_egress;
    size_t nb;
    assert_int_equal(zygote_encode(&p, "/bin/true", NULL, &buf, &len, NULL, &nb, &e), 0);
    assert_int_equal(zygote_decode(buf, len, NULL, 0, &d, &e), 0);
    assert_null(d.p.egress);
    zygote_decoded_free(&d);
    free(buf);
}

/* The spec is the body's last 16 + 4 * n_capture bytes: http, socks, dns, n, the ports. */
static void set_u32(unsigned char *b, size_t off, uint32_t v)
{
    memcpy(b + off, &v, 4);
}

static void malformed_egress_refused(void **state)
{
    (void)state;
    size_t len;
    unsigned char *buf = encode_proxy(&len, &sample_egress);
    struct zygote_decoded d;
    struct cerr e;
    for (size_t cut = 0; cut < len; cut++)
        assert_true(zygote_decode(buf, cut, NULL, 0, &d, &e) < 0);
    unsigned char *bad = malloc(len + 4);
    size_t g = len - 24;
    struct {
        size_t off;
        uint32_t v;
        const char *why;
    } cases[] = {
        {0, SANDBOX_NET_LOOPBACK, "egress listeners come with"}, /* a spec without "proxy" */
        {4, 1u << 0, "egress listeners come with"},              /* "proxy" without a spec */
        {0, SANDBOX_NET_PROXY + 1, "unknown network mode"},
        {g, 70000, "egress"}, /* a port past 16 bits */
        {g + 4, 0x10000, "egress"},
        {g + 8, 2, "egress"},  /* dns neither 0 nor 1 */
        {g + 12, 3, "egress"}, /* a capture count the body cannot hold */
        {g + 12, 0xffffffffu, "egress"},
        {g + 12, SANDBOX_EGRESS_MAX_CAPTURE + 1, "egress"},
        {g + 16, 0, "egress"}, /* capture port 0 */
        {g + 20, 65536, "egress"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        memcpy(bad, buf, len);
        set_u32(bad, cases[i].off, cases[i].v);
        e.msg[0] = '\0';
        assert_true(zygote_decode(bad, len, NULL, 0, &d, &e) < 0);
        if (!strstr(e.msg, cases[i].why))
            fail_msg("case %zu: %s", i, e.msg);
    }
    /* A spec that asks for no listener at all. */
    memcpy(bad, buf, len);
    set_u32(bad, g, 0);
    set_u32(bad, g + 4, 0);
    set_u32(bad, g + 8, 0);
    set_u32(bad, g + 12, 0);
    assert_true(zygote_decode(bad, len - 8, NULL, 0, &d, &e) < 0);
    /* Bytes after the spec. */
    memcpy(bad, buf, len);
    set_u32(bad, len, 0);
    assert_true(zygote_decode(bad, len + 4, NULL, 0, &d, &e) < 0);
    free(bad);
    free(buf);
}

/* A "proxy" sandbox is cloned by the zygote like any other (no second spawn path in the
 * threaded supervisor), and its init's listeners still reach us. */
static void proxy_sandbox_cloned_by_the_zygote(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    static const struct sandbox_egress g = {
        .http_port = 3128, .socks_port = 1080, .capture = {8080}, .n_capture = 1};
    struct sandbox_profile p;
    sandbox_profile_default(&p);
    p.net = SANDBOX_NET_PROXY;
    p.egress = &g;
    char *const argv[] = {"true", NULL};
    unsigned long before = zygote_proxy_clone_count();
    struct sandbox_child *c = NULL;
    struct cerr e = {0};
    if (sandbox_spawn(&p, "/bin/true", argv, NULL, &c, &e) < 0)
        fail_msg("spawn: %s", e.msg);
    assert_int_equal(zygote_proxy_clone_count(), before + 1);
    int fds[3];
    assert_int_equal(sandbox_child_take_egress_fds(c, fds, 3), 0);
    static const uint16_t want[] = {3128, 1080, 8080};
    for (int i = 0; i < 3; i++) {
        int on = 0;
        socklen_t ol = sizeof(on);
        struct sockaddr_in a;
        socklen_t al = sizeof(a);
        assert_int_equal(getsockopt(fds[i], SOL_SOCKET, SO_ACCEPTCONN, &on, &ol), 0);
        assert_int_equal(on, 1);
        assert_int_equal(getsockname(fds[i], (struct sockaddr *)&a, &al), 0);
        assert_int_equal(ntohs(a.sin_port), want[i]);
        close(fds[i]);
    }
    struct sandbox_result r;
    assert_int_equal(sandbox_child_wait(c, &r, &e), 0);
    assert_true(r.exited && r.exit_code == 0);
    sandbox_child_free(c);
}

struct run {
    const char *ws;
    int status;
    char out[1024];
};

/* Init's open fds as "N(target) ", listed from /proc the moment the caller sees its program
 * started. */
static size_t list_init_fds(pid_t pid, char *out, size_t cap)
{
    char dir[64];
    snprintf(dir, sizeof(dir), "/proc/%ld/fd", (long)pid);
    size_t o = 0;
    out[0] = '\0';
    for (int fd = 0; fd < 64 && o < cap; fd++) {
        char path[96], target[128];
        snprintf(path, sizeof(path), "%s/%d", dir, fd);
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        if (n < 0)
            continue;
        target[n] = '\0';
        /* Only the number when it is init's own: /dev/null on 0-2, its status socket on 3. */
        bool expected = (fd < 3 && !strcmp(target, "/dev/null")) ||
                        (fd == 3 && !strncmp(target, "socket:", 7));
        o += (size_t)snprintf(out + o, cap - o, expected ? "%d " : "%d(%s) ", fd, target);
    }
    return o < cap ? o : cap - 1;
}

/* Several spawns in a row from one thread, each checked as soon as sandbox_spawn returns. */
enum { SPAWNS_PER_THREAD = 6 };

static void *spawn_one(void *arg)
{
    struct run *r = arg;
    struct sandbox_profile p;
    sandbox_profile_default(&p);
    int dfd = open(r->ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char host[64];
    snprintf(host, sizeof(host), "/proc/self/fd/%d", dfd);
    struct sandbox_bind b = {.host = host, .inside = "/workspace", .writable = true};
    p.binds = &b;
    p.n_binds = 1;
    r->status = -1;
    for (int round = 0; round < SPAWNS_PER_THREAD; round++) {
        int op[2], ip[2];
        if (pipe2(op, O_CLOEXEC) < 0 || pipe2(ip, O_CLOEXEC) < 0)
            break;
        struct sandbox_stdio io = {ip[0], op[1], -1};
        /* The workspace is the bound one; the program waits on stdin while init's fds are
         * listed. */
        char *const argv[] = {"sh", "-c", "cat /workspace/mark; read x", NULL};
        struct sandbox_child *c = NULL;
        struct cerr e = {0};
        r->status = -1;
        int sr = sandbox_spawn(&p, "/bin/sh", argv, &io, &c, &e);
        close(op[1]);
        close(ip[0]);
        if (sr < 0) {
            close(ip[1]);
            close(op[0]);
            snprintf(r->out, sizeof(r->out), "%s", e.msg);
            break;
        }
        /* What init holds once its program runs: /dev/null on 0-2 and its status socket on
         * 3, nothing of this process's (the workspace, another thread's pipes) and nothing of
         * its own set-up. */
        size_t o = list_init_fds(sandbox_child_pid(c), r->out, sizeof(r->out));
        close(ip[1]);
        ssize_t n = util_read_all(op[0], r->out + o, sizeof(r->out) - 1 - o);
        r->out[o + (n > 0 ? (size_t)n : 0)] = '\0';
        close(op[0]);
        struct sandbox_result res;
        if (sandbox_child_wait(c, &res, &e) == 0 && res.exited)
            r->status = res.exit_code;
        sandbox_child_free(c);
        if (r->status != 1 || strcmp(r->out, "0 1 2 3 marked") != 0)
            break; /* the first wrong one is reported */
    }
    close(dfd);
    return NULL;
}

static void spawns_from_threads_through_the_zygote(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    char ws[] = "/tmp/corral-zygote-test.XXXXXX";
    assert_non_null(mkdtemp(ws));
    chmod(ws, 0755);
    char mark[sizeof(ws) + 8];
    snprintf(mark, sizeof(mark), "%s/mark", ws);
    int mf = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    assert_int_equal(write(mf, "marked", 6), 6);
    close(mf);
    /* An fd of ours no sandbox may hold. */
    int secret = open("/etc/hostname", O_RDONLY);
    assert_true(secret >= 0);
    enum { N = 8 };
    pthread_t th[N];
    struct run runs[N];
    for (int i = 0; i < N; i++) {
        runs[i] = (struct run){.ws = ws};
        assert_int_equal(pthread_create(&th[i], NULL, spawn_one, &runs[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++) {
        /* init: 0 1 2 (/dev/null) and 3 (its status socket), nothing of ours */
        assert_string_equal(runs[i].out, "0 1 2 3 marked");
        assert_int_equal(runs[i].status, 1); /* read x at EOF */
    }
    close(secret);
    unlink(mark);
    rmdir(ws);
}

/* Output of `sh -c SCRIPT` in a command sandbox nested in AGENT's, with WS bound at /workspace
 * by fd, X=VAL in its environment; *init: the pid of its init. */
static char *run_in(struct sandbox_child *agent, const char *ws, const char *val, pid_t *init)
{
    struct sandbox_profile p;
    sandbox_profile_default(&p);
    int dfd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char host[64], env[64];
    snprintf(host, sizeof(host), "/proc/self/fd/%d", dfd);
    snprintf(env, sizeof(env), "X=%s", val);
    char *const envp[] = {env, "PATH=/usr/bin:/bin", NULL};
    struct sandbox_bind b = {.host = host, .inside = "/workspace", .writable = true};
    p.binds = &b;
    p.n_binds = 1;
    p.cgroup_parent = agent;
    p.cwd = "/workspace";
    p.envp = envp;
    int op[2];
    assert_int_equal(pipe2(op, O_CLOEXEC), 0);
    struct sandbox_stdio io = {-1, op[1], op[1]};
    char *const argv[] = {"sh", "-c", "cat mark; echo \" $X $(pwd)\"", NULL};
    struct sandbox_child *c = NULL;
    struct cerr e = {0};
    if (sandbox_spawn(&p, "/bin/sh", argv, &io, &c, &e) < 0)
        fail_msg("spawn: %s", e.msg);
    *init = sandbox_child_pid(c);
    close(op[1]);
    static char out[256];
    ssize_t n = util_read_all(op[0], out, sizeof(out) - 1);
    out[n > 0 ? n : 0] = '\0';
    close(op[0]);
    struct sandbox_result r;
    assert_int_equal(sandbox_child_wait(c, &r, &e), 0);
    sandbox_child_free(c);
    close(dfd);
    return out;
}

/* The inits of the prepared sandboxes nested in the cgroup CG (each alone in a cgroup of its
 * own beneath it; a command that ended leaves an empty one until it is removed). */
static int prepared_inits(const char *cg, pid_t *out, int max)
{
    int n = 0;
    DIR *d = opendir(cg);
    struct dirent *de;
    while (d && n < max && (de = readdir(d))) {
        if (de->d_type != DT_DIR || de->d_name[0] == '.')
            continue;
        char path[1024], buf[64];
        snprintf(path, sizeof(path), "%s/%s/cgroup.procs", cg, de->d_name);
        long pid = util_read_file(path, buf, sizeof(buf)) == 0 ? strtol(buf, NULL, 10) : 0;
        if (pid > 0)
            out[n++] = (pid_t)pid;
    }
    if (d)
        closedir(d);
    return n;
}

/* Waits (at most 60 s) until the cgroup CG holds exactly N prepared inits, their pids in OUT:
 * the pool has settled (each profile used has its prepared sandbox, none is under way). */
static int wait_prepared(const char *cg, int n, pid_t *out, int max)
{
    int k = 0;
    for (int tries = 0; tries < 3000; tries++) {
        if ((k = prepared_inits(cg, out, max)) == n)
            break;
        usleep(20 * 1000);
    }
    return k;
}

/* An agent sandbox (sleep) for commands to nest in; CG: its memory cgroup's directory (v1) or
 * its cgroup (v2), which must be gone once the agent has ended. */
static struct sandbox_child *spawn_agent(char *cg, size_t cap)
{
    struct sandbox_profile ap;
    sandbox_profile_default(&ap);
    char *const sargv[] = {"sleep", "100", NULL};
    struct sandbox_child *agent = NULL;
    struct cerr e;
    assert_int_equal(sandbox_spawn(&ap, "/bin/sleep", sargv, NULL, &agent, &e), 0);
    snprintf(cg, cap, "/sys/fs/cgroup/memory%s", sandbox_child_cgroup(agent));
    struct stat st;
    if (stat(cg, &st) < 0)
        snprintf(cg, cap, "/sys/fs/cgroup%s", sandbox_child_cgroup(agent));
    return agent;
}

static void prepared_sandboxes_match_their_profile(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    char a[] = "/tmp/corral-warm-a.XXXXXX", b[] = "/tmp/corral-warm-b.XXXXXX";
    assert_non_null(mkdtemp(a));
    assert_non_null(mkdtemp(b));
    char m[64];
    snprintf(m, sizeof(m), "%s/mark", a);
    int fd = open(m, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    assert_int_equal(write(fd, "A", 1), 1);
    close(fd);
    snprintf(m, sizeof(m), "%s/mark", b);
    fd = open(m, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    assert_int_equal(write(fd, "B", 1), 1);
    close(fd);
    chown(a, 65534, 65534);
    chown(b, 65534, 65534);
    char cg[512];
    struct sandbox_child *agent = spawn_agent(cg, sizeof(cg));
    struct stat cst;
    struct cerr e;
    assert_int_equal(stat(cg, &cst), 0);
    /* After a command ends, a sandbox of its profile is prepared when none is left; the next
     * command of that profile takes it. So once the pool has settled (one prepared per profile
     * used so far), every command of a profile used before runs in one of those prepared. */
    int warm = 0;
    bool used_a = false, used_b = false;
    static const char *const seq[] = {"a", "a", "b", "a", "b", "b", "a", "a"};
    for (size_t i = 0; i < ARRAY_SIZE(seq); i++) {
        char val[8];
        snprintf(val, sizeof(val), "v%zu", i);
        bool is_a = seq[i][0] == 'a';
        const char *ws = is_a ? a : b;
        pid_t before[64];
        int used = used_a + used_b, n = wait_prepared(cg, used, before, 64);
        if (n != used)
            fail_msg("run %zu: %d prepared sandboxes, not %d", i, n, used);
        pid_t init;
        char *out = run_in(agent, ws, val, &init);
        char want[64];
        /* Each sees its own workspace, environment and directory, prepared or not. */
        snprintf(want, sizeof(want), "%c v%zu /workspace\n", is_a ? 'A' : 'B', i);
        assert_string_equal(out, want);
        bool took = false;
        for (int k = 0; k < n; k++)
            took |= init == before[k];
        if (took != (is_a ? used_a : used_b))
            fail_msg("run %zu (%s): %s a prepared sandbox", i, seq[i], took ? "took" : "did not take");
        warm += took;
        *(is_a ? &used_a : &used_b) = true;
    }
    assert_int_equal(warm, 6); /* all but the first of each profile */
    /* The agent's end takes its prepared sandboxes and their cgroups with it. */
    sandbox_child_signal(agent, SIGKILL);
    struct sandbox_result r;
    assert_int_equal(sandbox_child_wait(agent, &r, &e), 0);
    sandbox_child_free(agent);
    struct stat st;
    assert_true(stat(cg, &st) < 0 && errno == ENOENT);
    unlink(m);
    snprintf(m, sizeof(m), "%s/mark", a);
    unlink(m);
    rmdir(a);
    rmdir(b);
}

/* The processes in the cgroup of C, but init (a cgroup v1 hierarchy or v2), as "pid pid ...". */
static void others_in(const struct sandbox_child *c, char *out, size_t cap)
{
    char path[512], buf[4096];
    snprintf(path, sizeof(path), "/sys/fs/cgroup/memory%s/cgroup.procs", sandbox_child_cgroup(c));
    struct stat st;
    if (stat(path, &st) < 0)
        snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cgroup.procs", sandbox_child_cgroup(c));
    out[0] = '\0';
    if (util_read_file(path, buf, sizeof(buf)) < 0)
        return;
    size_t o = 0;
    for (char *tok = strtok(buf, "\n"); tok; tok = strtok(NULL, "\n"))
        if (atol(tok) != sandbox_child_pid(c) && o < cap)
            o += (size_t)snprintf(out + o, cap - o, "%s ", tok);
}

/* Polls C's end the way the command broker does; the sandbox_child_ended that said yes. */
static void wait_ended(struct sandbox_child *c)
{
    for (int i = 0; i < 6000; i++) {
        struct pollfd pf = {.fd = sandbox_child_end_fd(c), .events = POLLIN};
        if (poll(&pf, 1, 10) > 0 && sandbox_child_ended(c))
            return;
    }
    fail_msg("the sandbox did not end in 60 s");
}

/* A command's answer goes out when init reports the end, before init's own exit: by then the
 * program and everything it left running (background jobs, a daemon that left its session) are
 * reaped, so nothing writes the workspace or the pipes after the answer. And a sandbox whose
 * init was killed (no report) still ends, by its pidfd. Its init and cgroup go in the
 * background, and before the agent's cgroup. */
static void ended_means_nothing_left_running(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    char agent_cg[512];
    struct sandbox_child *agent = spawn_agent(agent_cg, sizeof(agent_cg));
    struct cerr e;
    struct stat cst;
    for (int round = 0; round < 3; round++) { /* a fresh sandbox, then prepared ones */
        struct sandbox_profile p;
        sandbox_profile_default(&p);
        p.cgroup_parent = agent;
        int op[2];
        assert_int_equal(pipe2(op, O_CLOEXEC), 0);
        struct sandbox_stdio io = {-1, op[1], op[1]};
        /* Three left running: a background job, one in a subshell (reparented to init at
         * once), one in a session of its own; the pipe's write end stays with them. */
        char *const argv[] = {"sh", "-c",
                              "sleep 100 & (sleep 100 &); setsid sleep 100 & echo started; exit 3",
                              NULL};
        struct sandbox_child *c = NULL;
        if (sandbox_spawn(&p, "/bin/sh", argv, &io, &c, &e) < 0)
            fail_msg("spawn: %s", e.msg);
        close(op[1]);
        wait_ended(c);
        char left[256];
        others_in(c, left, sizeof(left));
        assert_string_equal(left, ""); /* before the fix: the three sleeps */
        char out[64];
        fcntl(op[0], F_SETFL, O_NONBLOCK);
        ssize_t n = read(op[0], out, sizeof(out) - 1);
        out[n > 0 ? n : 0] = '\0';
        assert_string_equal(out, "started\n");
        assert_int_equal(read(op[0], out, 1), 0); /* EOF: no writer left */
        close(op[0]);
        struct sandbox_result r;
        assert_int_equal(sandbox_child_wait_status(c, &r, &e), 0);
        assert_true(r.exited);
        assert_int_equal(r.exit_code, 3);
        sandbox_child_free(c);
    }
    /* Init killed: no report, the hang-up of its socket, then its pidfd. */
    struct sandbox_profile p;
    sandbox_profile_default(&p);
    p.cgroup_parent = agent;
    char *const argv[] = {"sh", "-c", "sleep 100", NULL};
    struct sandbox_child *c = NULL;
    assert_int_equal(sandbox_spawn(&p, "/bin/sh", argv, NULL, &c, &e), 0);
    assert_false(sandbox_child_ended(c));
    assert_int_equal(sandbox_child_signal(c, SIGKILL), 0);
    wait_ended(c);
    struct sandbox_result r;
    assert_int_equal(sandbox_child_wait_status(c, &r, &e), 0);
    assert_false(r.exited);
    assert_int_equal(r.signal, SIGKILL);
    sandbox_child_free(c);
    /* The agent's end waits for what the background still holds of its commands. */
    sandbox_child_signal(agent, SIGKILL);
    assert_int_equal(sandbox_child_wait(agent, &r, &e), 0);
    sandbox_child_free(agent);
    assert_true(stat(agent_cg, &cst) < 0 && errno == ENOENT);
}

/* Holds init (pid) just after its report is written: traced to the exit of its write on the
 * control socket (fd 3), then left in a job-control stop, as a SIGSTOP from a host process of
 * the sandbox's uid (65534, "other local users" in docs/security.md) can leave it. */
static bool stop_init_after_report(pid_t pid, int release_fd)
{
    if (ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACESYSGOOD) < 0) {
        close(release_fd);
        return false; /* ptrace is not allowed here (yama's ptrace_scope 3) */
    }
    assert_int_equal(ptrace(PTRACE_INTERRUPT, pid, 0, 0), 0);
    int st;
    assert_int_equal(waitpid(pid, &st, __WALL), pid);
    close(release_fd); /* the program ends; init, held, reaps it when we let it go */
    bool in_write = false;
    int sig = 0;
    for (int i = 0; i < 100000; i++) {
        assert_int_equal(ptrace(PTRACE_SYSCALL, pid, 0, sig), 0);
        assert_int_equal(waitpid(pid, &st, __WALL), pid);
        assert_true(WIFSTOPPED(st));
        sig = 0;
        if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
            struct __ptrace_syscall_info si;
            assert_true(ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof(si), &si) > 0);
            if (si.op == PTRACE_SYSCALL_INFO_ENTRY)
                in_write = si.entry.nr == SYS_write && si.entry.args[0] == 3;
            else if (si.op == PTRACE_SYSCALL_INFO_EXIT && in_write)
                break; /* the report is in the socket */
        } else if (st >> 16 == 0) {
            sig = WSTOPSIG(st); /* a signal for init (SIGCHLD): delivered as it would be */
        }
        assert_true(i < 99999);
    }
    kill(pid, SIGSTOP); /* taken on its way back from the write, once we let go */
    assert_int_equal(ptrace(PTRACE_DETACH, pid, 0, 0), 0);
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    for (int i = 0; i < 6000; i++) {
        const char *rp = util_read_file(path, buf, sizeof(buf)) < 0 ? NULL : strrchr(buf, ')');
        if (rp && rp[1] == ' ' && rp[2] == 'T')
            return true;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fail_msg("init did not stop after its report");
    return false;
}

/* Init has reported the end and has nothing left to do but exit, yet a host process of the
 * sandbox's uid may stop it in between. The background thread that reaps it must not wait on
 * it for ever: that would hold every agent's prepared sandboxes and releases, the end of the
 * agent (warm_drop_children) and the supervisor's exit (warm_stop). */
static void stopped_init_after_report_still_ends(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    char agent_cg[512];
    struct sandbox_child *agent = spawn_agent(agent_cg, sizeof(agent_cg));
    struct cerr e;
    struct stat cst;
    struct sandbox_profile p;
    sandbox_profile_default(&p);
    p.cgroup_parent = agent;
    int ip[2];
    assert_int_equal(pipe2(ip, O_CLOEXEC), 0);
    struct sandbox_stdio io = {ip[0], -1, -1};
    char *const argv[] = {"sh", "-c", "read x; exit 7", NULL};
    struct sandbox_child *c = NULL;
    if (sandbox_spawn(&p, "/bin/sh", argv, &io, &c, &e) < 0)
        fail_msg("spawn: %s", e.msg);
    close(ip[0]);
    pid_t pid = sandbox_child_pid(c);
    bool traced = stop_init_after_report(pid, ip[1]);
    wait_ended(c);
    struct sandbox_result r;
    assert_int_equal(sandbox_child_wait_status(c, &r, &e), 0);
    assert_true(r.exited);
    assert_int_equal(r.exit_code, 7);
    if (!traced) {
        sandbox_child_free(c);
        sandbox_child_signal(agent, SIGKILL);
        sandbox_child_wait(agent, &r, &e);
        sandbox_child_free(agent);
        skip();
    }
    int pfd = fcntl(sandbox_child_pidfd(c), F_DUPFD_CLOEXEC, 3);
    assert_true(pfd >= 0);
    sandbox_child_free(c); /* to the background thread */
    struct pollfd pf = {.fd = pfd, .events = POLLIN};
    int n = poll(&pf, 1, 30000);
    if (n != 1) {
        kill(pid, SIGCONT); /* let the thread go, or the rest of the run hangs */
        close(pfd);
        fail_msg("the background thread waits on a stopped init that reported its end");
    }
    close(pfd);
    sandbox_child_signal(agent, SIGKILL);
    assert_int_equal(sandbox_child_wait(agent, &r, &e), 0);
    sandbox_child_free(agent);
    assert_true(stat(agent_cg, &cst) < 0 && errno == ENOENT);
}

/* Init moves itself into its cgroup (v1: by the tasks files sent with the go byte; v2: born in
 * it), before its program exists: every hierarchy with a budget shows the sandbox's cgroup for
 * init and for the program, so the budgets bind both from their first instruction. */
static void sandbox_is_in_its_cgroup_in_every_hierarchy(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    struct sandbox_profile p;
    sandbox_profile_default(&p);
    int ip[2], op[2];
    assert_int_equal(pipe2(ip, O_CLOEXEC), 0);
    assert_int_equal(pipe2(op, O_CLOEXEC), 0);
    struct sandbox_stdio io = {ip[0], op[1], -1};
    char *const argv[] = {"sh", "-c", "echo $$; read x", NULL};
    struct sandbox_child *c = NULL;
    struct cerr e;
    if (sandbox_spawn(&p, "/bin/sh", argv, &io, &c, &e) < 0)
        fail_msg("spawn: %s", e.msg);
    close(ip[0]);
    close(op[1]);
    char out[32] = "";
    ssize_t n = read(op[0], out, sizeof(out) - 1);
    assert_true(n > 0); /* the program runs */
    struct stat st;
    bool v1 = stat("/sys/fs/cgroup/memory/cgroup.procs", &st) == 0;
    const char *want = sandbox_child_cgroup(c);
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)sandbox_child_pid(c),
             (int)sandbox_child_pid(c));
    assert_int_equal(util_read_file(path, buf, sizeof(buf)), 0);
    pid_t prog = (pid_t)atol(buf);
    assert_true(prog > 0);
    pid_t pids[2] = {sandbox_child_pid(c), prog};
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pids[k]);
        assert_int_equal(util_read_file(path, buf, sizeof(buf)), 0);
        int hits = 0;
        for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
            char *ctl = strchr(line, ':'), *cg = ctl ? strchr(ctl + 1, ':') : NULL;
            if (!cg)
                continue;
            bool budgeted = !v1 && ctl[1] == ':';
            for (char *t = ctl + 1; v1 && t < cg;) { /* "cpu,cpuacct" and the like */
                size_t l = strcspn(t, ",:");
                budgeted |= (l == 6 && !strncmp(t, "memory", 6)) || (l == 4 && !strncmp(t, "pids", 4)) ||
                            (l == 3 && !strncmp(t, "cpu", 3)) || (l == 7 && !strncmp(t, "cpuacct", 7));
                t += l + 1;
            }
            if (!budgeted)
                continue;
            /* v1: each hierarchy has corral's cgroup at a path of its own; the sandbox's is the
             * same name beneath it (v2: DIR/main). */
            const char *name = strrchr(want, '/') ? strrchr(want, '/') + 1 : want;
            char *leaf = strrchr(cg + 1, '/');
            if (leaf && !v1 && !strcmp(leaf, "/main")) {
                *leaf = '\0';
                leaf = strrchr(cg + 1, '/');
            }
            if (!leaf || strcmp(leaf + 1, name) != 0)
                fail_msg("%s %s: not in the sandbox's cgroup %s", k ? "the program" : "init", line, want);
            hits++;
        }
        assert_true(hits >= (v1 ? 3 : 1));
    }
    close(ip[1]);
    close(op[0]);
    struct sandbox_result r;
    assert_int_equal(sandbox_child_wait(c, &r, &e), 0);
    sandbox_child_free(c);
}

int main(void)
{
    /* Before any thread, as the supervisor does. */
    struct cerr e;
    if (zygote_start(&e) < 0) {
        fprintf(stderr, "zygote_start: %s\n", e.msg);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(body_round_trips),
        cmocka_unit_test(malformed_bodies_refused),
        cmocka_unit_test(egress_spec_round_trips),
        cmocka_unit_test(malformed_egress_refused),
        cmocka_unit_test(proxy_sandbox_cloned_by_the_zygote),
        cmocka_unit_test(spawns_from_threads_through_the_zygote),
        cmocka_unit_test(prepared_sandboxes_match_their_profile),
        cmocka_unit_test(ended_means_nothing_left_running),
        cmocka_unit_test(stopped_init_after_report_still_ends),
        cmocka_unit_test(sandbox_is_in_its_cgroup_in_every_hierarchy),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    zygote_stop();
    return r;
}
