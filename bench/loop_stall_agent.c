/* bench/loop_stall_agent.c: the reader of bench/loop_stall.sh, a WACP worker under `corral run`:
 * after its directive it reads a 4 KiB file (readFile) one call at a time for MS milliseconds and
 * prints "RESULT n=N p50_us=X p99_us=Y max_us=Z" on stderr (its log), then exits. Built against
 * the SDK (sdk/corral_agent.c). */
#include "corral_agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int cmp(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    long ms = argc > 1 ? strtol(argv[1], NULL, 10) : 5000;
    struct corral_agent *a = corral_agent_new(0, 1);
    if (!a || corral_agent_initialize(a, "loop-stall", "1", NULL) < 0)
        return 1;
    cJSON *d = corral_agent_next_envelope(a, 30000);
    cJSON_Delete(d);
    size_t cap = 1 << 20, n = 0;
    long long *lat = malloc(cap * sizeof(*lat));
    long long end = now_us() + ms * 1000;
    while (lat && n < cap && now_us() < end) {
        cJSON *args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "path", "file4k.txt");
        bool is_err = false;
        long long t0 = now_us();
        cJSON *r = corral_agent_call(a, "readFile", args, &is_err);
        lat[n++] = now_us() - t0;
        if (!r || is_err) {
            fprintf(stderr, "readFile failed: %s\n", corral_agent_error(a));
            return 1;
        }
        cJSON_Delete(r);
    }
    qsort(lat, n, sizeof(*lat), cmp);
    if (n)
        fprintf(stderr, "RESULT n=%zu p50_us=%lld p99_us=%lld max_us=%lld\n", n, lat[n / 2],
                lat[n * 99 / 100], lat[n - 1]);
    free(lat);
    corral_agent_free(a);
    return 0;
}
