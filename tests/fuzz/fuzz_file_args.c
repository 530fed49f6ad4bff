/* tests/fuzz/fuzz_file_args.c: hostile tool calls straight into the File Tools surface. The
 * input is JSON {"tool": NAME, "arguments": ANY}; every call must come back as a result or a
 * {error, message} object, never crash, leak, or reach outside the temp workspace (it is
 * read-only here, so a long run cannot fill the disk; argument decoding, path cleaning, globs
 * and regexes are exercised, and the write tools up to the read-only refusal). */
#include "tools/tool.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct tool_ctx ctx;

static void put(const char *dir, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void setup(void)
{
    static char dir[] = "/tmp/corral-fuzz-file-XXXXXX";
    if (!mkdtemp(dir))
        abort();
    char sub[600];
    snprintf(sub, sizeof(sub), "%s/src", dir);
    mkdir(sub, 0755);
    put(dir, "README.md", "# fuzz\nline two\n");
    put(sub, "app.js", "function a() { return 1; }\n// TODO: more\n");
    snprintf(sub, sizeof(sub), "%s/link", dir);
    (void)!symlink("../../etc/passwd", sub);
    tool_limits_default(&ctx.limits);
    ctx.limits.max_file_size = 65536;
    ctx.root_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    ctx.root_host_path = dir;
    ctx.read_only = true;
    ctx.allow_commands = false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ctx.root_host_path)
        setup();
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    cJSON *in = cJSON_Parse(text);
    free(text);
    const cJSON *tool = cJSON_GetObjectItemCaseSensitive(in, "tool");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(in, "arguments");
    const struct tool_surface *s = tool_surface_find("file");
    if (cJSON_IsString(tool)) {
        cJSON *res = NULL;
        bool is_error = false;
        int r = tool_surface_call(s, &ctx, tool->valuestring, args, &res, &is_error);
        if (r == 0 && !res)
            abort(); /* a call that answers must answer with an object */
        if (r == 0 && is_error &&
            (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(res, "error")) ||
             !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(res, "message"))))
            abort(); /* the seed's error object, always */
        if (res) {
            char *out = cJSON_PrintUnformatted(res);
            if (out && strstr(out, ctx.root_host_path) && !strstr((const char *)data, "corral-fuzz"))
                abort(); /* the host path leaked */
            free(out);
        }
        cJSON_Delete(res);
    }
    cJSON_Delete(in);
    return 0;
}
