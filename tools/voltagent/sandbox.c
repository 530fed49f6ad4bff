/* tools/voltagent/sandbox.c: the sandbox toolkit's execute_command, in a command sandbox
 * (docs/protocol-voltagent.md). */
#include "tools/broker/broker.h"
#include "tools/voltagent/internal.h"
#include "tools/voltagent/voltagent.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- execute_command (the sandbox toolkit) ------------------------------------------------- */

const struct tool_param voltagent_exec_params[] = {
    {"command", TOOL_PARAM_STRING, true, "Command to execute", NULL, 0, 0},
    {"args", TOOL_PARAM_STRINGS, false, "Command arguments", NULL, 0, MAX_ARGS},
    {"cwd", TOOL_PARAM_STRING, false, "Working directory for the command", NULL, 0, 0},
    {"timeout_ms", TOOL_PARAM_INT_TEXT, false, "Timeout in milliseconds", NULL, 0, MAX_INT},
    {"env", TOOL_PARAM_STRMAP, false, "Environment variables to set", NULL, 0, MAX_ENV},
    {"stdin", TOOL_PARAM_STRING, false,
     "Optional stdin input for the command (not supported by corral yet: must be empty)", NULL, 0, 0},
    {"max_output_bytes", TOOL_PARAM_INT_TEXT, false,
     "Maximum output bytes to capture per stream (stdout or stderr)", NULL, 0, MAX_INT},
    {"max_output_kb", TOOL_PARAM_INT_TEXT, false,
     "Maximum output to capture per stream, in KiB (the seed's name)", NULL, 0, MAX_INT},
};

/* Appends S to the command line in single quotes, so an argument reaches the program as one
 * word, whatever it holds (upstream passes args to spawn without a shell). */
static void shell_quote(struct text *t, const char *s)
{
    voltagent_text_str(t, " '");
    for (const char *q; (q = strchr(s, '\'')); s = q + 1) {
        voltagent_text_add(t, s, (size_t)(q - s));
        voltagent_text_str(t, "'\\''");
    }
    voltagent_text_str(t, s);
    voltagent_text_str(t, "'");
}

/* Upstream's per-stream capture cap: the stream cut at a character boundary. */
static bool cap_stream(char *s, size_t *len, size_t max)
{
    if (*len <= max)
        return false;
    *len = broker_utf8_cut(s, *len, max);
    s[*len] = '\0';
    return true;
}

static void stream_summary(struct text *t, const char *label, size_t bytes, bool cut)
{
    if (bytes)
        voltagent_text_printf(t, "\n%s: captured inline (%zu bytes%s)", label, bytes,
                              cut ? ", truncated" : "");
    else
        voltagent_text_printf(t, "\n%s: (empty)", label);
}

/* Upstream's result object for a command that could not start. */
static cJSON *exec_failed(const char *message, const char *code, bool *is_error)
{
    cJSON *o = cJSON_CreateObject();
    char summary[700];
    snprintf(summary, sizeof(summary), "Error executing command: %s", message);
    bool ok = o && cJSON_AddBoolToObject(o, "success", false) && cJSON_AddNullToObject(o, "exit_code") &&
              cJSON_AddNumberToObject(o, "duration_ms", 0) &&
              cJSON_AddBoolToObject(o, "timed_out", false) &&
              cJSON_AddBoolToObject(o, "aborted", false) && cJSON_AddStringToObject(o, "stdout", "") &&
              cJSON_AddStringToObject(o, "stderr", "") &&
              cJSON_AddBoolToObject(o, "stdout_truncated", false) &&
              cJSON_AddBoolToObject(o, "stderr_truncated", false) &&
              cJSON_AddStringToObject(o, "summary", summary) &&
              cJSON_AddStringToObject(o, "error", message) && cJSON_AddStringToObject(o, "code", code);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    *is_error = true;
    return o;
}

cJSON *voltagent_execute_command(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                                 bool *is_error)
{
    (void)t;
    const char *command = voltagent_arg_str(a, 0, ""), *cwd = voltagent_arg_str(a, 2, NULL),
               *in = voltagent_arg_str(a, 5, "");
    if (!ctx->allow_commands)
        return exec_failed(
            "this agent's role may not run commands (the policy grants no command authority)",
            VOLTAGENT_E_COMMANDS, is_error);
    cJSON *err;
    if (cwd && voltagent_path_check(cwd, "cwd", &err) < 0)
        return voltagent_fail_path(err, is_error);
    while (*command == ' ' || *command == '\t' || *command == '\n')
        command++;
    if (!*command)
        return exec_failed("Sandbox command is required", broker_kind_name(BROKER_E_INVALID), is_error);
    if (*in)
        return exec_failed("stdin is not supported by corral's command sandbox yet; write the input to "
                           "a file and redirect it",
                           broker_kind_name(BROKER_E_INVALID), is_error);
    /* operationTimeoutMs: the policy's command_timeout (default) and command_timeout_max
     * (ceiling, applied by the broker whatever the request says). 0 asks for no timeout,
     * which here means the ceiling. */
    double timeout = a->v[3] ? (double)voltagent_arg_u64(a, 3, 0) / 1000.0 : 0;
    if (a->v[3] && timeout <= 0)
        timeout = ctx->limits.command_timeout_max;
    size_t per_stream = ctx->limits.max_output_bytes;
    if (a->v[6] && voltagent_arg_u64(a, 6, 0) < per_stream)
        per_stream = (size_t)voltagent_arg_u64(a, 6, 0);
    if (a->v[7] && voltagent_arg_u64(a, 7, 0) < per_stream / 1024)
        per_stream = (size_t)voltagent_arg_u64(a, 7, 0) * 1024;
    struct text line = {0};
    voltagent_text_str(&line, command);
    for (const cJSON *it = a->v[1] ? a->v[1]->child : NULL; it; it = it->next)
        shell_quote(&line, it->valuestring);
    size_t n_env = a->v[4] ? (size_t)cJSON_GetArraySize(a->v[4]) : 0;
    char **env = calloc(n_env ? n_env : 1, sizeof(*env));
    size_t k = 0;
    bool env_ok = env != NULL;
    for (const cJSON *it = a->v[4] ? a->v[4]->child : NULL; env_ok && it; it = it->next) {
        if (!it->string || !*it->string || strchr(it->string, '=')) {
            for (size_t i = 0; i < k; i++)
                free(env[i]);
            free(env);
            free(line.s);
            return voltagent_fail_text(is_error, broker_kind_name(BROKER_E_INVALID),
                                       "Error: env names must be non-empty and hold no '='");
        }
        env_ok = asprintf(&env[k], "%s=%s", it->string, it->valuestring) >= 0;
        k += env_ok;
    }
    struct broker_command_opts o = {.command = line.s,
                                    .workdir = cwd,
                                    .timeout_sec = timeout,
                                    .env = (const char *const *)env,
                                    .n_env = k};
    struct broker_command_result r;
    struct broker_err e = {0};
    int rc = env_ok && !line.failed ? broker_command(ctx, &o, &r, &e) : -2;
    for (size_t i = 0; i < k; i++)
        free(env[i]);
    free(env);
    free(line.s);
    if (rc == -2)
        return NULL;
    if (rc < 0) {
        if (e.kind == BROKER_E_EXEC || e.kind == BROKER_E_IO)
            return exec_failed(e.msg, broker_kind_name(e.kind), is_error);
        return voltagent_fail_broker(&e, is_error);
    }
    size_t out_bytes = r.out_len, err_bytes = r.err_len;
    bool out_cut = cap_stream(r.out, &r.out_len, per_stream) || (r.truncated && r.out_len);
    bool err_cut = cap_stream(r.err, &r.err_len, per_stream) || (r.truncated && r.err_len);
    struct text sum = {0};
    voltagent_text_printf(&sum, "Exit code: %d\nDuration: %ju ms", r.exit_code,
                          (uintmax_t)r.duration_ms);
    if (r.timed_out)
        voltagent_text_str(&sum, "\nTimed out: true");
    if (out_cut)
        voltagent_text_str(&sum, "\nStdout truncated: true");
    if (err_cut)
        voltagent_text_str(&sum, "\nStderr truncated: true");
    stream_summary(&sum, "STDOUT", out_bytes, out_cut);
    stream_summary(&sum, "STDERR", err_bytes, err_cut);
    cJSON *res = cJSON_CreateObject();
    bool ok = res && !sum.failed &&
              cJSON_AddBoolToObject(res, "success", !r.timed_out && r.exit_code == 0) &&
              cJSON_AddNumberToObject(res, "exit_code", r.exit_code) &&
              cJSON_AddNumberToObject(res, "duration_ms", (double)r.duration_ms) &&
              cJSON_AddBoolToObject(res, "timed_out", r.timed_out) &&
              cJSON_AddBoolToObject(res, "aborted", false) &&
              cJSON_AddStringToObject(res, "stdout", r.out) &&
              cJSON_AddStringToObject(res, "stderr", r.err) &&
              cJSON_AddBoolToObject(res, "stdout_truncated", out_cut) &&
              cJSON_AddBoolToObject(res, "stderr_truncated", err_cut) &&
              cJSON_AddStringToObject(res, "summary", sum.s);
    free(sum.s);
    broker_command_result_clear(&r);
    if (!ok) {
        cJSON_Delete(res);
        return NULL;
    }
    return res;
}
