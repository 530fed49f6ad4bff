/* tests/fuzz/fuzz_voltagent_args.c: hostile tool calls straight into the VoltAgent surface. The
 * input is JSON {"tool": NAME, "arguments": ANY}; every call must come back as a result or an
 * {error, code} object, never crash, leak the host path, or reach outside the temp workspace. The
 * workspace is read-only here (a long run cannot fill the disk), with a session and the policy
 * rules in force, so argument decoding, the path rule, globs, regexes (and the unsafe-pattern
 * detectors) and the read-first and approval rules are all exercised. */
#include "tools/session.h"
#include "tools/tool.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct tool_ctx ctx;
static const struct tool_rule rules[] = {
    {.name = "edit_file", .enabled = true, .read_before_write = true},
    {.name = "delete_file", .enabled = true, .read_before_write = true},
    {.name = "rmdir", .enabled = true, .needs_approval = true},
};

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
    static char dir[] = "/tmp/corral-fuzz-volt-XXXXXX";
    if (!mkdtemp(dir))
        abort();
    char sub[600];
    snprintf(sub, sizeof(sub), "%s/src", dir);
    mkdir(sub, 0755);
    put(dir, "README.md", "# fuzz\nline two\n");
    put(sub, "app.ts", "export function a() { return 1; }\n// TODO: more\n");
    snprintf(sub, sizeof(sub), "%s/link", dir);
    (void)!symlink("../../etc/passwd", sub);
    tool_limits_default(&ctx.limits);
    ctx.limits.max_file_size = 65536;
    ctx.root_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    ctx.root_host_path = dir;
    ctx.read_only = true;
    ctx.allow_commands = false;
    ctx.rules = rules;
    ctx.n_rules = sizeof(rules) / sizeof(rules[0]);
    if (tool_session_new(&ctx.session) < 0)
        abort();
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
    const cJSON *tool = cJSON_GetObjectItemCaseSensitive(in, "tool");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(in, "arguments");
    const struct tool_surface *s = tool_surface_find("voltagent");
    if (cJSON_IsString(tool)) {
        cJSON *res = NULL;
        bool is_error = false;
        int r = tool_surface_call(s, &ctx, tool->valuestring, args, &res, &is_error);
        if (r == 0 && !res)
            abort(); /* a call that answers must answer with an object */
        if (r == 0 && is_error &&
            (!cJSON_GetObjectItemCaseSensitive(res, "code") ||
             !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(res, "error"))))
            abort(); /* the surface's one error shape */
        if (r == 0 && !is_error && !cJSON_GetObjectItemCaseSensitive(res, "output") &&
            !cJSON_GetObjectItemCaseSensitive(res, "success"))
            abort();
        if (res) {
            (void)s->denial(res);
            char *out = cJSON_PrintUnformatted(res);
            /* (an input that holds the path may see it echoed back as its own text) */
            if (out && strstr(out, ctx.root_host_path) && !strstr(text, "corral-fuzz"))
                abort(); /* the host path leaked */
            free(out);
        }
        cJSON_Delete(res);
    }
    cJSON_Delete(in);
    free(text);
    return 0;
}
