/* supervisor/wacp/core.c: what every WACP module uses: ids, time, trail records, errors and
 * recorded refusals, JSON helpers. */
#include "supervisor/wacp/core.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sodium.h>

void wacp_core_new_id(const char *prefix, char out[WACP_ID_LEN])
{
    unsigned char rnd[16];
    char hex[33];
    randombytes_buf(rnd, sizeof(rnd));
    sodium_bin2hex(hex, sizeof(hex), rnd, sizeof(rnd));
    snprintf(out, WACP_ID_LEN, "%s-%s", prefix, hex);
}

uint64_t wacp_core_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

uint64_t wacp_core_wall_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

int wacp_core_rec(struct wacp *w, const char *ws, const char *actor, const char *type, const cJSON *body)
{
    if (w->h.record(w->h.data, ws, actor, type, body) < 0)
        return -EIO;
    return 0;
}

int wacp_core_fail(struct wacp_err *e, int rpc, const char *code, const char *fmt, ...)
{
    e->rpc_code = rpc;
    snprintf(e->code, sizeof(e->code), "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    return -1;
}

int wacp_core_trail_err(struct wacp_err *e)
{
    return wacp_core_fail(e, -32603, "trail_unavailable",
                          "the trail cannot be written, so nothing was done");
}

int wacp_core_deny(struct wacp *w, const struct wacp_ws *caller, const char *method, struct wacp_err *e,
                   int rpc, const char *code, const char *fmt, ...)
{
    e->rpc_code = rpc;
    snprintf(e->code, sizeof(e->code), "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    cJSON *b = wacp_core_obj();
    if (b) {
        cJSON_AddStringToObject(b, "kind", "protocol");
        cJSON_AddStringToObject(b, "method", method);
        cJSON_AddStringToObject(b, "code", code);
        cJSON_AddStringToObject(b, "reason", e->msg);
    }
    int r = wacp_core_rec(w, caller ? caller->id : NULL, caller ? caller->role : "protocol", "denial",
                          b);
    cJSON_Delete(b);
    w->sum.denials++;
    if (r < 0)
        return wacp_core_trail_err(e);
    return -1;
}

bool wacp_core_hold(struct wacp *w, size_t len)
{
    if (len > w->max_payload_total || w->payload_total > w->max_payload_total - len)
        return false;
    w->payload_total += len;
    return true;
}

bool wacp_core_grow(void **v, size_t *cap, size_t n, size_t elem)
{
    if (n <= *cap)
        return true;
    size_t nc = *cap ? *cap : 8;
    while (nc < n) {
        if (nc > SIZE_MAX / 2)
            return false;
        nc *= 2;
    }
    if (nc > SIZE_MAX / elem)
        return false;
    void *p = realloc(*v, nc * elem);
    if (!p)
        return false;
    *v = p;
    *cap = nc;
    return true;
}

cJSON *wacp_core_obj(void)
{
    return cJSON_CreateObject();
}

void wacp_core_add_str(cJSON *o, const char *k, const char *v)
{
    if (!o)
        return;
    if (v && v[0])
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}
