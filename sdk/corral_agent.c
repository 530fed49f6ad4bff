/* sdk/corral_agent.c: the C client of sdk/corral_agent.h. */
#include "corral_agent.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LINE ((size_t)256 << 20)

struct corral_agent {
    int in_fd, out_fd;
    char *buf;
    size_t len, cap;
    int64_t next_id;
    int err_code;
    char err[512];
};

struct corral_agent *corral_agent_new(int in_fd, int out_fd)
{
    struct corral_agent *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->in_fd = in_fd;
    a->out_fd = out_fd;
    a->next_id = 1;
    return a;
}

void corral_agent_free(struct corral_agent *a)
{
    if (!a)
        return;
    free(a->buf);
    free(a);
}

static void set_err(struct corral_agent *a, int code, const char *fmt, const char *arg)
{
    a->err_code = code;
    snprintf(a->err, sizeof(a->err), fmt, arg ? arg : "");
}

const char *corral_agent_error(const struct corral_agent *a) { return a->err; }
int corral_agent_error_code(const struct corral_agent *a) { return a->err_code; }

int corral_agent_send_raw(struct corral_agent *a, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(a->out_fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            set_err(a, 0, "write: %s", strerror(errno));
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

char *corral_agent_read_line(struct corral_agent *a, size_t *len)
{
    size_t scanned = 0;
    for (;;) {
        char *nl = a->len > scanned ? memchr(a->buf + scanned, '\n', a->len - scanned) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - a->buf);
            char *line = malloc(n + 1);
            if (!line) {
                set_err(a, 0, "out of memory%s", NULL);
                return NULL;
            }
            memcpy(line, a->buf, n);
            line[n] = '\0';
            memmove(a->buf, nl + 1, a->len - n - 1);
            a->len -= n + 1;
            if (len)
                *len = n;
            return line;
        }
        scanned = a->len;
        if (a->cap - a->len < 65536) {
            size_t ncap = a->cap ? a->cap * 2 : 131072;
            char *nb = ncap <= MAX_LINE ? realloc(a->buf, ncap) : NULL;
            if (!nb) {
                set_err(a, 0, "an answer longer than the client accepts%s", NULL);
                return NULL;
            }
            a->buf = nb;
            a->cap = ncap;
        }
        ssize_t n = read(a->in_fd, a->buf + a->len, a->cap - a->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            set_err(a, 0, "%s", n == 0 ? "the supervisor closed the channel" : strerror(errno));
            return NULL;
        }
        a->len += (size_t)n;
    }
}

static int send_msg(struct corral_agent *a, cJSON *msg)
{
    char *s = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);
    if (!s) {
        set_err(a, 0, "out of memory%s", NULL);
        return -1;
    }
    size_t n = strlen(s);
    s[n] = '\n'; /* overwrite the NUL: send the frame in one write */
    int r = corral_agent_send_raw(a, s, n + 1);
    free(s);
    return r;
}

static cJSON *envelope(const char *method, cJSON *params)
{
    cJSON *m = cJSON_CreateObject();
    if (!m || !cJSON_AddStringToObject(m, "jsonrpc", "2.0") || !cJSON_AddStringToObject(m, "method", method)) {
        cJSON_Delete(m);
        cJSON_Delete(params);
        return NULL;
    }
    if (params)
        cJSON_AddItemToObject(m, "params", params);
    return m;
}

int corral_agent_notify(struct corral_agent *a, const char *method, cJSON *params)
{
    cJSON *m = envelope(method, params);
    if (!m) {
        set_err(a, 0, "out of memory%s", NULL);
        return -1;
    }
    return send_msg(a, m);
}

cJSON *corral_agent_request(struct corral_agent *a, const char *method, cJSON *params)
{
    a->err[0] = '\0';
    a->err_code = 0;
    int64_t id = a->next_id++;
    cJSON *m = envelope(method, params);
    if (!m || !cJSON_AddNumberToObject(m, "id", (double)id)) {
        cJSON_Delete(m);
        set_err(a, 0, "out of memory%s", NULL);
        return NULL;
    }
    if (send_msg(a, m) < 0)
        return NULL;
    for (;;) {
        char *line = corral_agent_read_line(a, NULL);
        if (!line)
            return NULL;
        cJSON *resp = cJSON_Parse(line);
        free(line);
        if (!resp)
            continue;
        const cJSON *rid = cJSON_GetObjectItemCaseSensitive(resp, "id");
        const cJSON *err = cJSON_GetObjectItemCaseSensitive(resp, "error");
        /* Not ours: a notification from the supervisor, or an answer to something else. An error
         * with id null is about a line we sent that it could not read: that was this one. */
        bool ours = (cJSON_IsNumber(rid) && (int64_t)rid->valuedouble == id) || (cJSON_IsNull(rid) && err);
        if (!ours) {
            cJSON_Delete(resp);
            continue;
        }
        if (err) {
            const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
            const cJSON *msg = cJSON_GetObjectItemCaseSensitive(err, "message");
            set_err(a, cJSON_IsNumber(code) ? code->valueint : -32603, "%s",
                    cJSON_IsString(msg) ? msg->valuestring : "error without a message");
            cJSON_Delete(resp);
            return NULL;
        }
        cJSON *result = cJSON_DetachItemFromObjectCaseSensitive(resp, "result");
        cJSON_Delete(resp);
        if (!result)
            set_err(a, -32603, "%s", "an answer with neither result nor error");
        return result;
    }
}

int corral_agent_initialize(struct corral_agent *a, const char *name, const char *version, cJSON **result)
{
    cJSON *p = cJSON_CreateObject();
    cJSON *info = cJSON_CreateObject();
    if (!p || !info || !cJSON_AddStringToObject(p, "protocolVersion", "2025-06-18") ||
        !cJSON_AddObjectToObject(p, "capabilities") || !cJSON_AddStringToObject(info, "name", name) ||
        !cJSON_AddStringToObject(info, "version", version ? version : "0")) {
        cJSON_Delete(p);
        cJSON_Delete(info);
        set_err(a, 0, "out of memory%s", NULL);
        return -1;
    }
    cJSON_AddItemToObject(p, "clientInfo", info);
    cJSON *r = corral_agent_request(a, "initialize", p);
    if (!r)
        return -1;
    if (result)
        *result = r;
    else
        cJSON_Delete(r);
    return corral_agent_notify(a, "notifications/initialized", NULL);
}

cJSON *corral_agent_call(struct corral_agent *a, const char *tool, cJSON *args, bool *is_error)
{
    cJSON *p = cJSON_CreateObject();
    if (!p || !cJSON_AddStringToObject(p, "name", tool)) {
        cJSON_Delete(p);
        cJSON_Delete(args);
        set_err(a, 0, "out of memory%s", NULL);
        return NULL;
    }
    cJSON_AddItemToObject(p, "arguments", args ? args : cJSON_CreateObject());
    cJSON *r = corral_agent_request(a, "tools/call", p);
    if (!r)
        return NULL;
    cJSON *sc = cJSON_DetachItemFromObjectCaseSensitive(r, "structuredContent");
    if (is_error)
        *is_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "isError"));
    cJSON_Delete(r);
    if (!sc)
        set_err(a, -32603, "%s", "a tool result without structuredContent");
    return sc;
}
