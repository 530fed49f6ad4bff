/* tools/kward/shell.c: run_shell_command, in a command sandbox (docs/protocol-kward.md). */
#include "tools/broker/broker.h"
#include "tools/kward/internal.h"
#include "tools/kward/kward.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* ---- run_shell_command ---------------------------------------------------------------------- */

enum { SHELL_COMMAND, SHELL_TIMEOUT };
const struct tool_param kward_shell_params[] = {
    {"command", TOOL_PARAM_STRING, true,
     "Command to run (sh -c, from the workspace root, in a command sandbox).", NULL, 0, 0},
    {"timeout_seconds", TOOL_PARAM_INT, false, "Timeout seconds; default 30.", NULL, -MAX_INT, MAX_INT},
};

cJSON *kward_run_shell_command(struct call *c)
{
    const char *cmd_in = kward_arg_str(c, SHELL_COMMAND, "");
    while (isspace((unsigned char)*cmd_in))
        cmd_in++;
    size_t cl = strlen(cmd_in);
    while (cl && isspace((unsigned char)cmd_in[cl - 1]))
        cl--;
    if (!cl)
        return kward_fail(c, NULL, BROKER_E_INVALID, "command", "command is required");
    if (cl > MAX_COMMAND_BYTES)
        return kward_fail(c, NULL, BROKER_E_INVALID, "command", "command is longer than %d bytes",
                          MAX_COMMAND_BYTES);
    if (!c->ctx->allow_commands)
        return kward_fail(c, "commands_disabled", BROKER_E_DENIED, "command",
                          "this agent's role may not run commands");
    _cleanup_free_ char *cmd = strndup(cmd_in, cl);
    if (!cmd)
        return kward_oom(c);
    long long ts = 0;
    double timeout = c->ctx->limits.command_timeout_sec > 0 ? c->ctx->limits.command_timeout_sec : 30.0;
    if (kward_arg_int(c, SHELL_TIMEOUT, &ts) && ts > 0)
        timeout = (double)ts;
    if (c->ctx->limits.command_timeout_max > 0 && timeout > c->ctx->limits.command_timeout_max)
        timeout = c->ctx->limits.command_timeout_max;
    /* The seed's 128 KB output cap, or the policy's when lower. */
    struct tool_ctx cc = *c->ctx;
    size_t cap = KWARD_COMMAND_OUTPUT_BYTES;
    if (cc.limits.max_output_bytes && cc.limits.max_output_bytes < cap)
        cap = cc.limits.max_output_bytes;
    cc.limits.max_output_bytes = cap;
    struct broker_command_opts o = {
        .command = cmd, .timeout_sec = timeout, .kill_grace_sec = KWARD_KILL_GRACE_SEC};
    struct broker_command_result r;
    if (broker_command(&cc, &o, &r, &c->e) < 0)
        return NULL;
    struct sbuf out = {0};
    kward_sb_printf(&out, "Exit status: %d\n\nSTDOUT:\n", r.exit_code);
    kward_sb_put(&out, r.out, r.out_len);
    if (r.out_len && r.out[r.out_len - 1] != '\n')
        kward_sb_put(&out, "\n", 1);
    kward_sb_str(&out, "\nSTDERR:\n");
    kward_sb_put(&out, r.err, r.err_len);
    if (r.truncated)
        kward_sb_printf(&out, "\n... truncated to %zu bytes", cap);
    c->raw_bytes = out.len;
    c->raw_set = true;
    if (!out.oom && out.len > cap) {
        size_t keep = broker_utf8_cut(out.s, out.len, cap);
        out.len = keep;
        out.s[keep] = '\0';
        kward_sb_printf(&out, "\n... truncated to %zu bytes", cap);
    }
    cJSON *res = NULL;
    if (out.oom) {
        kward_oom(c);
    } else if (r.timed_out) {
        /* The seed's timeout error, with what the command printed before it was stopped. */
        kward_fail(c, "timeout", BROKER_E_TIMEOUT, "timeout_seconds",
                   "command timed out after %g seconds", timeout);
        c->err_extra = cJSON_CreateObject();
        if (c->err_extra)
            cJSON_AddStringToObject(c->err_extra, "output", out.s);
    } else if (!(res = kward_result_new(c, out.s)) ||
               !cJSON_AddNumberToObject(res, "exit_status", r.exit_code) ||
               !cJSON_AddBoolToObject(res, "truncated", r.truncated || c->raw_bytes > cap) ||
               !cJSON_AddNumberToObject(res, "duration_ms", (double)r.duration_ms)) {
        cJSON_Delete(res);
        res = kward_oom(c);
    }
    free(out.s);
    broker_command_result_clear(&r);
    return res;
}
