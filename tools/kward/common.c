/* tools/kward/common.c: what every Kward tool shares: the errors in the surface's words, the
 * arguments checked against a tool's table, the text helpers and the session's context budget
 * counters (docs/protocol-kward.md). */
#include "tools/broker/broker.h"
#include "tools/kward/internal.h"
#include "tools/kward/kward.h"
#include "tools/params.h"
#include "tools/session.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- errors ---------------------------------------------------------------------------------- */

__attribute__((format(printf, 5, 6))) cJSON *kward_fail(struct call *c, const char *code,
                                                        enum broker_kind kind, const char *field,
                                                        const char *fmt, ...)
{
    c->code = code;
    c->e.kind = kind;
    snprintf(c->e.field, sizeof(c->e.field), "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->e.msg, sizeof(c->e.msg), fmt, ap);
    va_end(ap);
    return NULL;
}

cJSON *kward_oom(struct call *c)
{
    return kward_fail(c, "io_error", BROKER_E_IO, NULL, "out of memory");
}

/* The code of a broker failure, spelled the surface's way. */
static const char *kind_code(enum broker_kind k)
{
    switch (k) {
    case BROKER_E_NOT_FOUND: return "not_found";
    case BROKER_E_DENIED: return "permission_denied";
    case BROKER_E_TOO_LARGE: return "file_too_large";
    case BROKER_E_IS_DIR:
    case BROKER_E_NOT_REGULAR: return "not_a_file";
    case BROKER_E_NOT_DIR: return "not_a_directory";
    case BROKER_E_BINARY: return "not_a_text_file";
    case BROKER_E_EXISTS: return "exists";
    case BROKER_E_NO_MATCH: return "old_text_not_found";
    case BROKER_E_NOT_UNIQUE: return "old_text_not_unique";
    case BROKER_E_TIMEOUT: return "timeout";
    case BROKER_E_EXEC: return "command_failed";
    case BROKER_E_IO: return "io_error";
    default: return "invalid_argument";
    }
}

cJSON *kward_error_json(struct call *c)
{
    const char *code = c->code ? c->code : kind_code(c->e.kind);
    cJSON *o = cJSON_CreateObject();
    char *msg = util_printf("Error: %s", c->e.msg[0] ? c->e.msg : "the tool failed");
    if (!o || !msg || !cJSON_AddStringToObject(o, "error", msg) ||
        !cJSON_AddStringToObject(o, "code", code) ||
        (c->e.field[0] && !cJSON_AddStringToObject(o, "field", c->e.field))) {
        free(msg);
        cJSON_Delete(o);
        return NULL;
    }
    free(msg);
    for (cJSON *it = c->err_extra ? c->err_extra->child : NULL; it; it = it->next) {
        cJSON *d = cJSON_Duplicate(it, true);
        if (!d || !cJSON_AddItemToObject(o, it->string, d)) {
            cJSON_Delete(d);
            cJSON_Delete(o);
            return NULL;
        }
    }
    return o;
}

/* ---- arguments ------------------------------------------------------------------------------ */

const char *kward_arg_str(const struct call *c, size_t i, const char *dflt)
{
    return c->v[i] ? c->v[i]->valuestring : dflt;
}

bool kward_arg_int(const struct call *c, size_t i, long long *out)
{
    if (!c->v[i])
        return false;
    *out = (long long)c->v[i]->valuedouble;
    return true;
}

/* One {old_text, new_text} of edit_file's edits (the checker has seen it is an object). */
static int check_edit(const struct tool_param *p, int i, const cJSON *it, void *arg)
{
    struct call *c = arg;
    char f[64];
    for (const cJSON *k = it->child; k; k = k->next)
        if (!k->string || (strcmp(k->string, "old_text") && strcmp(k->string, "new_text"))) {
            snprintf(f, sizeof(f), "%s[%d]", p->name, i);
            kward_fail(c, NULL, BROKER_E_INVALID, f, "%s takes only old_text and new_text", f);
            return -1;
        }
    static const char *const keys[] = {"old_text", "new_text"};
    for (size_t k = 0; k < 2; k++) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(it, keys[k]);
        if (!cJSON_IsString(s) || !s->valuestring) {
            snprintf(f, sizeof(f), "%s[%d].%s", p->name, i, keys[k]);
            kward_fail(c, NULL, BROKER_E_INVALID, f, "%s must be a string", f);
            return -1;
        }
    }
    return 0;
}

/* The checker's fault in the seed's words. */
static void bad_args(struct call *c, const struct tool_param_bad *b)
{
    const struct tool_param *p = b->param;
    char f[64];
    switch (b->fault) {
    case TOOL_PARAM_NOT_OBJECT:
        kward_fail(c, NULL, BROKER_E_INVALID, "arguments", "arguments must be an object");
        return;
    case TOOL_PARAM_UNKNOWN:
        kward_fail(c, NULL, BROKER_E_INVALID, b->key, "%s takes no argument \"%.60s\"", c->t->spec.name,
                   b->key);
        return;
    case TOOL_PARAM_REQUIRED:
        kward_fail(c, NULL, BROKER_E_INVALID, p->name, "%s is required", p->name);
        return;
    case TOOL_PARAM_HOOK: return; /* check_edit said why */
    case TOOL_PARAM_CHOICE: {
        char list[128] = "";
        for (const char *const *ch = p->choices; *ch; ch++)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
                     ch == p->choices ? "" : ", ", *ch);
        kward_fail(c, NULL, BROKER_E_INVALID, p->name, "%s must be one of %s", p->name, list);
        return;
    }
    default: break;
    }
    switch (p->type) {
    case TOOL_PARAM_INT: /* not a number, not whole, or past what JSON holds exactly */
        kward_fail(c, NULL, BROKER_E_INVALID, p->name, "%s must be an integer", p->name);
        return;
    case TOOL_PARAM_STRINGS:
        if (b->fault == TOOL_PARAM_ITEM)
            kward_fail(c, NULL, BROKER_E_INVALID, p->name, "%s[%d] must be a string", p->name, b->item);
        else
            kward_fail(c, NULL, BROKER_E_INVALID, p->name, "%s must be an array of at most %.0f strings",
                       p->name, p->max);
        return;
    case TOOL_PARAM_ITEMS:
        if (b->fault == TOOL_PARAM_ITEM) {
            snprintf(f, sizeof(f), "%s[%d]", p->name, b->item);
            kward_fail(c, NULL, BROKER_E_INVALID, f, "%s must be an object {old_text, new_text}", f);
        } else if (b->fault == TOOL_PARAM_COUNT && cJSON_GetArraySize(b->value) > p->max) {
            kward_fail(c, NULL, BROKER_E_INVALID, p->name, "%s holds more than %.0f replacements",
                       p->name, p->max);
        } else {
            kward_fail(c, NULL, BROKER_E_INVALID, p->name, "%s must contain at least one replacement",
                       p->name);
        }
        return;
    default: kward_fail(c, NULL, BROKER_E_INVALID, p->name, "%s must be a string", p->name); return;
    }
}

/* Length-checked, typed, matched against the table; unknown fields are refused (the upstream
 * schemas say additionalProperties: false). JSON null reads as absent. */
int kward_parse_args(struct call *c, const cJSON *args)
{
    struct tool_param_bad b;
    if (tool_params_check(c->t->spec.params, c->t->spec.n_params, args, c->v, NULL, check_edit, c, &b) ==
        0)
        return 0;
    bad_args(c, &b);
    return -1;
}

/* ---- text helpers --------------------------------------------------------------------------- */

void kward_sb_put(struct sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 1024;
        while (nc < b->len + n + 1)
            nc *= 2;
        char *t = realloc(b->s, nc);
        if (!t) {
            b->oom = true;
            return;
        }
        b->s = t;
        b->cap = nc;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void kward_sb_str(struct sbuf *b, const char *s)
{
    kward_sb_put(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) void kward_sb_printf(struct sbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    kward_sb_put(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

int kward_lines_split(struct lines *l, const char *s, size_t len)
{
    l->s = s;
    l->len = len;
    l->n = 0;
    for (size_t i = 0; i < len; i++)
        l->n += s[i] == '\n';
    if (len && s[len - 1] != '\n')
        l->n++;
    if (!(l->start = malloc((l->n + 1) * sizeof(size_t))))
        return -1;
    size_t pos = 0;
    for (size_t i = 0; i < l->n; i++) {
        l->start[i] = pos;
        const char *nl = memchr(s + pos, '\n', len - pos);
        pos = nl ? (size_t)(nl - s) + 1 : len;
    }
    l->start[l->n] = len;
    return 0;
}

size_t kward_line_bytes(const struct lines *l, size_t i)
{
    return l->start[i + 1] - l->start[i];
}

/* The cleaned workspace-relative path ("src/a.rb", "." for the root) the texts show. */
char *kward_shown_path(struct call *c, const char *path)
{
    char *rel = NULL;
    if (broker_path_clean(path, "path", &rel, &c->e) < 0)
        return NULL;
    if (!*rel) {
        free(rel);
        return strdup(".");
    }
    return rel;
}

cJSON *kward_result_new(struct call *c, const char *output)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "output", output)) {
        cJSON_Delete(o);
        return kward_oom(c);
    }
    return o;
}

/* The policy may narrow a cap, never widen it past the seed's. */
size_t kward_cap_file(const struct tool_ctx *ctx)
{
    uint64_t m = ctx->limits.max_file_size;
    return m && m < KWARD_MAX_FILE_BYTES ? (size_t)m : KWARD_MAX_FILE_BYTES;
}

/* Reads a whole text file for read_file, summarize_file_structure and edit_file: the 256 KB cap
 * checked on the size before reading, NUL bytes refused. */
int kward_load_text(struct call *c, const char *path, const char *shown, struct broker_read_result *r)
{
    memset(r, 0, sizeof(*r));
    size_t cap = kward_cap_file(c->ctx);
    struct broker_meta m;
    if (broker_info(c->ctx, path, "path", &m, &c->e) < 0)
        return -1;
    bool dir = m.is_dir;
    uint64_t size = m.size;
    broker_meta_clear(&m);
    if (dir) {
        kward_fail(c, "not_a_file", BROKER_E_IS_DIR, "path", "not a file: %s", shown);
        return -1;
    }
    if (size > cap) {
        kward_fail(c, "file_too_large", BROKER_E_TOO_LARGE, "path",
                   "file too large: %s is %ju bytes; limit is %zu bytes", shown, (uintmax_t)size, cap);
        return -1;
    }
    struct broker_read_opts o = {.max_bytes = cap};
    if (broker_read(c->ctx, path, &o, r, &c->e) < 0) {
        if (c->e.kind == BROKER_E_BINARY)
            kward_fail(c, "not_a_text_file", BROKER_E_BINARY, "path", "not a text file: %s", shown);
        else if (c->e.kind == BROKER_E_IS_DIR || c->e.kind == BROKER_E_NOT_REGULAR)
            kward_fail(c, "not_a_file", c->e.kind, "path", "not a file: %s", shown);
        return -1;
    }
    if (r->truncated) { /* it grew past the cap since the size was taken */
        broker_read_result_clear(r);
        kward_fail(c, "file_too_large", BROKER_E_TOO_LARGE, "path",
                   "file too large: %s is over the limit of %zu bytes", shown, cap);
        return -1;
    }
    return 0;
}

/* ---- session state: context budget counters ------------------------------------------------- */

void *kward_budget_make(void)
{
    return calloc(1, sizeof(struct budget));
}
void kward_budget_drop(void *p)
{
    free(p);
}

void kward_budget_note(struct tool_ctx *ctx, size_t tool, size_t original, size_t returned)
{
    struct budget *b = tool_session_slot(ctx->session, kward_budget_make, kward_budget_drop);
    if (!b)
        return;
    tool_session_lock(ctx->session);
    b->calls[tool]++;
    b->original[tool] += original;
    b->returned[tool] += returned;
    tool_session_unlock(ctx->session);
}
