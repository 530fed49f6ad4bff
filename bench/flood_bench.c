/* bench/flood_bench.c: one well-behaved agent's readFile round trip while 64 hostile agents
 * flood their pipes, against its figure alone, through the supervisor's real connection layer
 * (supervisor/conn: the loop, the agent host, the worker pool, the WAP surface) and a real trail
 * (normal durability). Agents are processes on pipes, as under `corral run`; sandboxes are left
 * out (they change nothing on the loop). The hostile agents, in turn:
 *   garbage  lines that are not JSON, as fast as the pipe takes them (failed after 100)
 *   huge     lines of 9 MiB, over the 8 MiB message limit (discarded, failed after 100)
 *   storm    pipelined requests (ping, tools/list, readFile, unknown methods), answers drained
 *            by a second process, so back-pressure never stops it
 * Usage: flood_bench DIR N [HOSTILE]   (DIR: workspace and trail; N reads; HOSTILE default 64)
 * Prints: RESULT hostile=H n=N p50_us=.. p99_us=.. mean_us=.. */
#include "supervisor/conn/agent.h"
#include "supervisor/conn/dispatch.h"
#include "supervisor/conn/loop.h"
#include "supervisor/conn/pool.h"
#include "supervisor/trail/trail.h"
#include "tools/tool.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void put(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w <= 0)
            _exit(0); /* the supervisor cut us off */
        s += w;
        n -= (size_t)w;
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The well-behaved agent: initialize, then N sequential readFile calls of file4k.txt. */
static void good_agent(int in, int out, long n, int report)
{
    static char buf[1 << 20];
    size_t blen = 0;
    double *lat = calloc((size_t)n, sizeof(double));
    char req[512];
    for (long i = -50; i < n; i++) {
        int k = i == -50
                    ? snprintf(req, sizeof(req),
                               "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                               "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                               "\"clientInfo\":{\"name\":\"good\",\"version\":\"1\"}}}\n")
                    : snprintf(req, sizeof(req),
                               "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":"
                               "{\"name\":\"readFile\",\"arguments\":{\"path\":\"file4k.txt\"}}}\n",
                               i + 100);
        double a = now_us();
        put(out, req, (size_t)k);
        for (;;) { /* one answer line */
            char *nl = memchr(buf, '\n', blen);
            if (nl) {
                size_t used = (size_t)(nl - buf) + 1;
                memmove(buf, buf + used, blen - used);
                blen -= used;
                break;
            }
            ssize_t r = read(in, buf + blen, sizeof(buf) - blen);
            if (r <= 0)
                _exit(2);
            blen += (size_t)r;
        }
        if (i >= 0)
            lat[i] = now_us() - a;
    }
    qsort(lat, (size_t)n, sizeof(double), cmp);
    double sum = 0;
    for (long i = 0; i < n; i++)
        sum += lat[i];
    char line[256];
    int k = snprintf(line, sizeof(line), "p50_us=%.1f p99_us=%.1f mean_us=%.1f", lat[n / 2],
                     lat[(size_t)((double)n * 0.99)], sum / (double)n);
    put(report, line, (size_t)k);
    _exit(0);
}

/* In a forked agent: keep only its own two pipe ends (and stderr, and REPORT when >= 0), so
 * that no pipe stays open through another agent when the run ends, and die with the bench. */
static void agent_fds_only(int in, int out, int report)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (int fd = 3; fd < 4096; fd++)
        if (fd != in && fd != out && fd != report)
            close(fd);
    if (report < 0) { /* stdout may be a shell's command substitution: not ours to hold */
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, 1);
            close(null);
        }
    }
}

static void hostile_agent(int kind, int in, int out)
{
    agent_fds_only(in, out, -1);
    signal(SIGPIPE, SIG_DFL);
    /* Under corral run each agent's sandbox has a CPU budget (its cgroup): here SCHED_IDLE stands
     * for it, so that 128 spinning processes on a small machine measure the loop's fairness, not
     * the kernel scheduler's. FLOOD_CPU=free leaves them at normal priority. */
    const char *cpu = getenv("FLOOD_CPU");
    if (!cpu || strcmp(cpu, "free")) {
        struct sched_param sp = {0};
        sched_setscheduler(0, SCHED_IDLE, &sp);
    }
    if (kind == 0) { /* garbage */
        static const char g[] = "this is not json at all }{ \x01\x02\n";
        for (;;)
            put(out, g, sizeof(g) - 1);
    }
    if (kind == 1) { /* huge lines */
        size_t n = 9u << 20;
        char *b = malloc(n);
        memset(b, 'a', n);
        b[n - 1] = '\n';
        for (;;)
            put(out, b, n);
    }
    /* storm: a drainer process reads every answer, this one writes requests without pause */
    if (fork() == 0) {
        static char sink[65536];
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        while (read(in, sink, sizeof(sink)) > 0)
            ;
        _exit(0);
    }
    static const char *const reqs[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"readFile\","
        "\"arguments\":{\"path\":\"file4k.txt\"}}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"no/such/method\"}\n",
    };
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                       "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{"
                       "\"name\":\"storm\",\"version\":\"1\"}}}\n";
    put(out, init, strlen(init));
    for (unsigned i = 0;; i++)
        put(out, reqs[i % 4], strlen(reqs[i % 4]));
}

struct run {
    struct loop *loop;
    bool good_done;
    struct agent *good;
};

static void on_end(struct agent *a, enum agent_end why, void *data)
{
    struct run *r = data;
    if (a == r->good)
        r->good_done = true;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: flood_bench DIR N [HOSTILE]\n");
        return 2;
    }
    const char *dir = argv[1];
    long n = atol(argv[2]);
    int hostile = argc > 3 ? atoi(argv[3]) : 64;
    int total = hostile + 1;
    int(*to)[2] = calloc((size_t)total, sizeof(*to)), (*from)[2] = calloc((size_t)total, sizeof(*from));
    pid_t *pids = calloc((size_t)total, sizeof(pid_t));
    int rep[2];
    if (!to || !from || !pids || pipe(rep) < 0)
        return 2;
    /* Every agent process first, while this process has no thread. */
    for (int i = 0; i < total; i++) {
        if (pipe2(to[i], O_CLOEXEC) < 0 || pipe2(from[i], O_CLOEXEC) < 0)
            return 2;
        pids[i] = fork();
        if (pids[i] == 0) {
            if (i == 0)
                agent_fds_only(to[i][0], from[i][1], rep[1]);
            if (i == 0)
                good_agent(to[i][0], from[i][1], n, rep[1]);
            hostile_agent((i - 1) % 3, to[i][0], from[i][1]);
        }
        close(to[i][0]);
        close(from[i][1]);
    }
    close(rep[1]);
    signal(SIGPIPE, SIG_IGN);

    struct cerr err = {0};
    char path[4096];
    snprintf(path, sizeof(path), "%s/flood-%d.db", dir, hostile);
    unlink(path);
    struct trail *trail = NULL;
    struct loop *loop = NULL;
    struct pool *pool = NULL;
    struct agent_host *host = NULL;
    if (trail_open(path, TRAIL_DURABILITY_NORMAL, &trail, &err) < 0 || loop_new(&loop, &err) < 0 ||
        pool_new(loop, 0, &pool, &err) < 0 || agent_host_new(loop, pool, trail, NULL, &host, &err) < 0) {
        fprintf(stderr, "flood_bench: %s\n", err.msg);
        return 2;
    }
    struct tool_ctx ctx = {0};
    ctx.root_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    tool_limits_default(&ctx.limits);
    const struct tool_surface *wap = tool_surface_find("wap");
    struct run run = {.loop = loop};
    struct agent **agents = calloc((size_t)total, sizeof(*agents));
    for (int i = 0; i < total; i++) {
        char name[32];
        snprintf(name, sizeof(name), i ? "hostile-%d" : "good", i);
        struct agent_config c = {.name = name,
                                 .in_fd = from[i][0],
                                 .out_fd = to[i][1],
                                 .surface = wap,
                                 .tools = &ctx,
                                 .on_end = on_end,
                                 .data = &run,
                                 .on_message = dispatch_message};
        if (agent_new(host, &c, &agents[i], &err) < 0) {
            fprintf(stderr, "flood_bench: %s\n", err.msg);
            return 2;
        }
        if (i == 0)
            run.good = agents[0];
    }
    while (!run.good_done)
        if (loop_run_once(loop, -1, &err) < 0)
            break;
    char result[256] = "";
    ssize_t k = read(rep[0], result, sizeof(result) - 1);
    result[k > 0 ? k : 0] = '\0';
    for (int i = 1; i < total; i++)
        kill(pids[i], SIGKILL); /* ours: forked above */
    for (int i = 0; i < total; i++)
        agent_free(agents[i]);
    pool_free(pool);
    agent_host_free(host);
    loop_free(loop);
    trail_close(trail);
    for (int i = 0; i < total; i++) {
        close(from[i][0]);
        close(to[i][1]);
        waitpid(pids[i], NULL, 0);
    }
    unlink(path);
    printf("RESULT hostile=%d n=%ld %s\n", hostile, n, result);
    return result[0] ? 0 : 1;
}
