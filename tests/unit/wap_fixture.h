/* tests/unit/wap_fixture.h: a throwaway workspace for the WAP surface tests. TOP/ws is the
 * workspace, TOP/outside holds what an agent must never reach. Calls go through the surface's
 * own `call`, and every answer is checked for leaking the host path. */
#ifndef CORRAL_WAP_FIXTURE_H
#define CORRAL_WAP_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tools/broker/broker.h"
#include "tools/tool.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct fx {
    char top[64];
    char ws[96];
    char out[96];
    struct tool_ctx ctx;
    const struct tool_surface *s;
};

static int fx_rm(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)flag, (void)f;
    return remove(p);
}

static int fx_setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    snprintf(f->top, sizeof(f->top), "/tmp/corral-wap-XXXXXX");
    if (!mkdtemp(f->top))
        return -1;
    snprintf(f->ws, sizeof(f->ws), "%s/ws", f->top);
    snprintf(f->out, sizeof(f->out), "%s/outside", f->top);
    mkdir(f->ws, 0755);
    mkdir(f->out, 0755);
    tool_limits_default(&f->ctx.limits);
    f->ctx.root_fd = open(f->ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
    f->ctx.root_host_path = f->ws;
    f->s = tool_surface_find("wap");
    *state = f;
    return f->ctx.root_fd >= 0 && f->s ? 0 : -1;
}

static int fx_teardown(void **state)
{
    struct fx *f = *state;
    close(f->ctx.root_fd);
    nftw(f->top, fx_rm, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/* Host-side helpers: the test builds its trees with plain paths (it is not the agent). */
static inline void fx_put(struct fx *f, const char *rel, const char *content)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", f->ws, rel);
    /* parents */
    for (char *s = p + strlen(f->ws) + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs(content, fp);
    fclose(fp);
}

static inline void fx_put_bytes(struct fx *f, const char *rel, const void *b, size_t n)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", f->ws, rel);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fwrite(b, 1, n, fp);
    fclose(fp);
}

static inline char *fx_get(struct fx *f, const char *rel)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", f->ws, rel);
    FILE *fp = fopen(p, "r");
    if (!fp)
        return NULL;
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return buf;
}

static inline bool fx_exists_host(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Calls TOOL with the JSON text ARGS; returns the result (owned), sets *is_error. Fails the
 * test if the answer names the host directory anywhere. */
static inline cJSON *fx_call(struct fx *f, const char *tool, const char *args, bool *is_error)
{
    cJSON *a = args ? cJSON_Parse(args) : NULL;
    if (args)
        assert_non_null(a);
    cJSON *res = NULL;
    bool err = false;
    int r = tool_surface_call(f->s, &f->ctx, tool, a, &res, &err);
    cJSON_Delete(a);
    assert_int_equal(r, 0);
    assert_non_null(res);
    char *txt = cJSON_PrintUnformatted(res);
    /* (an agent that sends a host path may see its own string echoed as a workspace path) */
    if (strstr(txt, f->top) && !(args && strstr(args, f->top))) {
        print_error("host path leaked: %s\n", txt);
        fail();
    }
    free(txt);
    if (is_error)
        *is_error = err;
    return res;
}

static inline cJSON *fx_ok(struct fx *f, const char *tool, const char *args)
{
    bool err;
    cJSON *res = fx_call(f, tool, args, &err);
    if (err) {
        char *t = cJSON_PrintUnformatted(res);
        print_error("%s(%s) failed: %s\n", tool, args ? args : "", t);
        free(t);
        fail();
    }
    return res;
}

/* Expects an error with CODE (and, when not NULL, details.reason REASON); returns it. */
static inline void fx_err(struct fx *f, const char *tool, const char *args, const char *code,
                          const char *reason)
{
    bool err;
    cJSON *res = fx_call(f, tool, args, &err);
    char *t = cJSON_PrintUnformatted(res);
    if (!err) {
        print_error("%s(%s) should fail with %s, got %s\n", tool, args, code, t);
        fail();
    }
    const cJSON *c = cJSON_GetObjectItem(res, "code");
    const cJSON *m = cJSON_GetObjectItem(res, "error");
    const cJSON *d = cJSON_GetObjectItem(res, "details");
    if (!cJSON_IsString(c) || strcmp(c->valuestring, code) != 0 || !cJSON_IsString(m) ||
        !*m->valuestring || !cJSON_IsObject(d)) {
        print_error("%s(%s): want code %s, got %s\n", tool, args, code, t);
        fail();
    }
    if (reason) {
        const cJSON *rs = cJSON_GetObjectItem(d, "reason");
        if (!cJSON_IsString(rs) || strcmp(rs->valuestring, reason) != 0) {
            print_error("%s(%s): want reason %s, got %s\n", tool, args, reason, t);
            fail();
        }
    }
    free(t);
    cJSON_Delete(res);
}

static inline const cJSON *fx_item(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v) {
        print_error("missing field %s\n", k);
        fail();
    }
    return v;
}

static inline double fx_num(const cJSON *o, const char *k)
{
    return fx_item(o, k)->valuedouble;
}
static inline const char *fx_str(const cJSON *o, const char *k)
{
    const cJSON *v = fx_item(o, k);
    assert_true(cJSON_IsString(v));
    return v->valuestring;
}
static inline bool fx_bool(const cJSON *o, const char *k)
{
    const cJSON *v = fx_item(o, k);
    assert_true(cJSON_IsBool(v));
    return cJSON_IsTrue(v);
}

#define FX_TEST(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

#endif
