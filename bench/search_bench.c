/* bench/search_bench.c: one WAP call through the surface's own `call`, as a command hyperfine
 * can time beside ripgrep. Prints the count the call reported, so the script can check both
 * tools agree before comparing times.
 *   search_bench search ROOT QUERY regex|literal   -> "totalMatches N"
 *   search_bench explore ROOT                      -> "totalFound N"
 *   search_bench read ROOT PATH                     -> "totalLines N"
 * With BENCH_REPEAT=N the call (and its serialization) is also timed N times in-process and the
 * median printed: the figure without process start-up. */
#include "tools/tool.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "search") == 0 && argc != 5)) {
        fprintf(stderr,
                "usage: search_bench search ROOT QUERY regex|literal | explore ROOT | read ROOT PATH\n");
        return 2;
    }
    struct tool_ctx ctx = {0};
    tool_limits_default(&ctx.limits);
    ctx.root_fd = open(argv[2], O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (ctx.root_fd < 0) {
        perror(argv[2]);
        return 1;
    }
    const struct tool_surface *s = tool_surface_find("wap");
    cJSON *args = cJSON_CreateObject();
    const char *tool, *count;
    if (strcmp(argv[1], "search") == 0) {
        tool = "searchFiles";
        count = "totalMatches";
        cJSON *paths = cJSON_AddArrayToObject(args, "paths");
        cJSON_AddItemToArray(paths, cJSON_CreateString("."));
        cJSON_AddStringToObject(args, "query", argv[3]);
        cJSON_AddStringToObject(args, "type", argv[4]);
        cJSON_AddBoolToObject(args, "recursive", true);
    } else if (strcmp(argv[1], "read") == 0 && argc == 4) {
        tool = "readFile";
        count = "totalLines";
        cJSON_AddStringToObject(args, "path", argv[3]);
    } else {
        tool = "exploreFiles";
        count = "totalFound";
        cJSON_AddStringToObject(args, "path", ".");
        cJSON_AddBoolToObject(args, "recursive", true);
        cJSON_AddNumberToObject(args, "maxDepth", 64);
    }
    cJSON *res = NULL;
    bool is_error = false;
    int r = tool_surface_call(s, &ctx, tool, args, &res, &is_error);
    if (r < 0 || is_error) {
        char *t = res ? cJSON_PrintUnformatted(res) : NULL;
        fprintf(stderr, "%s failed: %s\n", tool, t ? t : "?");
        return 1;
    }
    /* The answer is serialized too: an agent receives text, not a tree. */
    char *text = cJSON_PrintUnformatted(res);
    printf("%s %.0f (%zu bytes of JSON)\n", count, cJSON_GetObjectItem(res, count)->valuedouble,
           text ? strlen(text) : 0);
    free(text);
    cJSON_Delete(res);
    const char *rep = getenv("BENCH_REPEAT");
    int n = rep ? atoi(rep) : 0;
    if (n > 0) {
        double *t = calloc((size_t)n, sizeof(double));
        for (int i = 0; i < n; i++) {
            double t0 = util_now();
            tool_surface_call(s, &ctx, tool, args, &res, &is_error);
            char *j = cJSON_PrintUnformatted(res);
            t[i] = util_now() - t0;
            free(j);
            cJSON_Delete(res);
        }
        qsort(t, (size_t)n, sizeof(double), cmp_double);
        printf("in-process %s: median %.3f ms, min %.3f ms over %d calls\n", tool, t[n / 2] * 1000.0,
               t[0] * 1000.0, n);
        free(t);
    }
    cJSON_Delete(args);
    return 0;
}
