/* bench/rt_driver.c: one driver for the round-trip benchmark, used the same way against corral
 * and against a peer MCP server: initialize, then N sequential tools/call of one tool, timing each
 * call from the write of the request to the read of its whole answer line.
 *   rt_driver N TOOL ARGS_JSON                 speak on stdin/stdout (an agent under corral exec)
 *   rt_driver N TOOL ARGS_JSON -- CMD [ARG...] start CMD and speak on its stdin/stdout
 *   rt_driver fdatasync FILE N                 p50/p99 of a 4 KiB write + fdatasync on FILE's disk
 * Prints one line on stderr:
 *   RESULT tool=T n=N init_us=I p50_us=P p99_us=Q mean_us=M max_us=X calls_per_s=R bytes=B errors=E */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int in_fd = 0, out_fd = 1;
static char *buf;
static size_t blen, bcap;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void put(const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(out_fd, s, n);
        if (w <= 0) {
            perror("rt_driver: write");
            exit(2);
        }
        s += w;
        n -= (size_t)w;
    }
}

/* The next line (without '\n'), valid until the next call. */
static char *get(size_t *len)
{
    static size_t consumed;
    if (consumed) {
        memmove(buf, buf + consumed, blen - consumed);
        blen -= consumed;
        consumed = 0;
    }
    size_t scanned = 0;
    for (;;) {
        char *nl = memchr(buf + scanned, '\n', blen - scanned);
        if (nl) {
            *nl = '\0';
            *len = (size_t)(nl - buf);
            consumed = *len + 1;
            return buf;
        }
        scanned = blen;
        if (bcap - blen < 65536) {
            bcap = bcap ? bcap * 2 : 1 << 20;
            buf = realloc(buf, bcap);
            if (!buf)
                exit(2);
        }
        ssize_t r = read(in_fd, buf + blen, bcap - blen - 1);
        if (r <= 0) {
            fprintf(stderr, "rt_driver: the server closed the channel\n");
            exit(2);
        }
        blen += (size_t)r;
    }
}

/* Reads lines until the answer to ID (servers may send notifications or logs in between). */
static char *answer(long id, size_t *len)
{
    char want[32];
    snprintf(want, sizeof(want), "\"id\":%ld", id);
    for (;;) {
        char *l = get(len);
        if (strstr(l, want))
            return l;
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* rt_driver fdatasync FILE N: p50 of one 4 KiB write + fdatasync on FILE's disk, the unit the
 * trail-full goal is stated in. */
static int fdatasync_p50(const char *path, long n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    double *lat = calloc((size_t)n, sizeof(double));
    char page[4096];
    memset(page, 'x', sizeof(page));
    if (fd < 0 || !lat)
        return 2;
    for (long i = 0; i < n; i++) {
        double a = now_us();
        if (pwrite(fd, page, sizeof(page), (off_t)(i % 256) * 4096) < 0 || fdatasync(fd) < 0)
            return 2;
        lat[i] = now_us() - a;
    }
    close(fd);
    unlink(path);
    qsort(lat, (size_t)n, sizeof(double), cmp);
    fprintf(stderr, "RESULT fdatasync n=%ld p50_us=%.1f p99_us=%.1f\n", n, lat[n / 2],
            lat[(size_t)((double)n * 0.99)]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "fdatasync"))
        return fdatasync_p50(argv[2], atol(argv[3]));
    if (argc < 4) {
        fprintf(stderr, "usage: rt_driver N TOOL ARGS_JSON [-- CMD ARG...]\n");
        return 2;
    }
    long n = atol(argv[1]);
    long gap_us = getenv("RT_GAP_US") ? atol(getenv("RT_GAP_US")) : 0;
    const char *tool = argv[2], *args = argv[3];
    double t0 = now_us();
    if (argc > 5 && !strcmp(argv[4], "--")) {
        int to[2], from[2];
        if (pipe(to) < 0 || pipe(from) < 0)
            return 2;
        signal(SIGPIPE, SIG_IGN);
        pid_t pid = fork();
        if (pid == 0) {
            dup2(to[0], 0);
            dup2(from[1], 1);
            close(to[0]), close(to[1]), close(from[0]), close(from[1]);
            execvp(argv[5], argv + 5);
            perror("rt_driver: exec");
            _exit(127);
        }
        close(to[0]);
        close(from[1]);
        out_fd = to[1];
        in_fd = from[0];
    }
    char req[65536];
    int k = snprintf(req, sizeof(req),
                     "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
                     "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":"
                     "\"rt_driver\",\"version\":\"1\"}}}\n");
    put(req, (size_t)k);
    size_t len;
    answer(0, &len);
    double init_us = now_us() - t0;
    const char *note = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
    put(note, strlen(note));

    double *lat = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    long errors = 0;
    size_t bytes = 0;
    /* A few calls first, not timed: page cache, lazy binding, JIT on the peer's side. */
    long warm = n >= 100 ? 50 : 0;
    double start = 0;
    for (long i = -warm; i < n; i++) {
        if (i == 0)
            start = now_us();
        long id = i + warm + 1;
        k = snprintf(req, sizeof(req),
                     "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/"
                     "call\",\"params\":{\"name\":\"%s\",\"arguments\":%s}}\n",
                     id, tool, args);
        double a = now_us();
        put(req, (size_t)k);
        char *l = answer(id, &len);
        double b = now_us();
        if (getenv("RT_TRACE")) /* a timeline to line up with a -DSPAWN_TRACE corral's */
            fprintf(stderr, "  driver: sent @%.3f answered @%.3f: %.3f ms\n", fmod(a / 1e3, 1e5),
                    fmod(b / 1e3, 1e5), (b - a) / 1e3);
        if (strstr(l, "\"isError\":true") || strstr(l, "\"error\":{"))
            errors++;
        if (i >= 0) {
            lat[i] = b - a;
            bytes += len;
        }
        if (i == n - 1 && errors)
            fprintf(stderr, "rt_driver: last answer: %.300s\n", l);
        if (gap_us > 0) /* RT_GAP_US: an agent's think time between calls, not timed */
            usleep((useconds_t)gap_us);
    }
    double total = now_us() - start;
    qsort(lat, (size_t)n, sizeof(double), cmp);
    double sum = 0;
    for (long i = 0; i < n; i++)
        sum += lat[i];
    if (n > 0)
        fprintf(stderr,
                "RESULT tool=%s n=%ld init_us=%.0f p50_us=%.1f p99_us=%.1f mean_us=%.1f max_us=%.1f "
                "calls_per_s=%.0f bytes=%zu errors=%ld\n",
                tool, n, init_us, lat[n / 2], lat[(size_t)((double)n * 0.99)], sum / (double)n,
                lat[n - 1], (double)n / (total / 1e6), bytes / (size_t)n, errors);
    if (out_fd != 1)
        close(out_fd);
    return errors ? 1 : 0;
}
