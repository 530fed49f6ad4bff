/* tools/voltagent/common.c: what the filesystem and sandbox toolkits share: arguments checked
 * against a tool's table, the growing text of an answer and its cap, and the error results
 * (docs/protocol-voltagent.md). */
#include "tools/broker/broker.h"
#include "tools/voltagent/internal.h"
#include "tools/voltagent/voltagent.h"
#include "tools/params.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arguments ------------------------------------------------------------------------------ */

const char *voltagent_arg_str(const struct args *a, size_t i, const char *dflt)
{
    return a->v[i] && cJSON_IsString(a->v[i]) ? a->v[i]->valuestring : dflt;
}
bool voltagent_arg_bool(const struct args *a, size_t i, bool dflt)
{
    return a->v[i] ? cJSON_IsTrue(a->v[i]) : dflt;
}
uint64_t voltagent_arg_u64(const struct args *a, size_t i, uint64_t dflt)
{
    return a->v[i] ? (uint64_t)a->n[i] : dflt;
}

/* The checker's fault in upstream's words. */
static int bad_args(const struct volt_tool *t, const struct tool_param_bad *b, struct broker_err *e)
{
    const struct tool_param *p = b->param;
    switch (b->fault) {
    case TOOL_PARAM_NOT_OBJECT:
        return broker_fail(e, BROKER_E_INVALID, "arguments", "arguments must be an object");
    case TOOL_PARAM_UNKNOWN:
        return broker_fail(e, BROKER_E_INVALID, NULL, "%s takes no argument \"%.60s\"", t->spec.name,
                           b->key);
    case TOOL_PARAM_REQUIRED:
        return broker_fail(e, BROKER_E_INVALID, p->name, "%s is required", p->name);
    case TOOL_PARAM_NOT_FINITE:
    case TOOL_PARAM_NOT_WHOLE:
    case TOOL_PARAM_RANGE:
        return broker_fail(e, BROKER_E_INVALID, p->name, "%s must be a whole number from %.0f", p->name,
                           p->min);
    case TOOL_PARAM_ITEM:
        if (p->type == TOOL_PARAM_STRMAP)
            return broker_fail(e, BROKER_E_INVALID, p->name, "%s.%.40s must be a string", p->name,
                               b->key);
        return broker_fail(e, BROKER_E_INVALID, p->name, "%s must hold strings only", p->name);
    default: /* TYPE, and COUNT, which reads the same */
        switch (p->type) {
        case TOOL_PARAM_BOOL:
            return broker_fail(e, BROKER_E_INVALID, p->name, "%s must be a boolean", p->name);
        case TOOL_PARAM_INT_TEXT:
            return broker_fail(e, BROKER_E_INVALID, p->name, "%s must be a number", p->name);
        case TOOL_PARAM_STRINGS:
            return broker_fail(e, BROKER_E_INVALID, p->name,
                               "%s must be an array of at most %.0f strings", p->name, p->max);
        case TOOL_PARAM_STRMAP:
            return broker_fail(e, BROKER_E_INVALID, p->name,
                               "%s must be an object of at most %.0f string values", p->name, p->max);
        default: return broker_fail(e, BROKER_E_INVALID, p->name, "%s must be a string", p->name);
        }
    }
}

/* Typed, then matched to the table. Unknown fields are refused (zod would drop them silently):
 * a typo such as "filepath" must not turn into a call on the default path. JSON null reads as
 * absent, as upstream's optional().nullable() does. */
int voltagent_parse_args(const struct volt_tool *t, const cJSON *args, struct args *a,
                         struct broker_err *e)
{
    struct tool_param_bad b;
    memset(a, 0, sizeof(*a));
    if (tool_params_check(t->spec.params, t->spec.n_params, args, a->v, a->n, NULL, NULL, &b) < 0)
        return bad_args(t, &b, e);
    return 0;
}

/* ---- result building ------------------------------------------------------------------------ */

/* Upstream's truncation marker (filesystem/utils.ts). */
const char voltagent_truncation_guidance[] =
    "... [results truncated, try being more specific with your parameters]";
void voltagent_text_add(struct text *t, const char *s, size_t n)
{
    if (t->failed)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1) {
            if (cap > SIZE_MAX / 2) {
                t->failed = true;
                return;
            }
            cap *= 2;
        }
        char *v = realloc(t->s, cap);
        if (!v) {
            t->failed = true;
            return;
        }
        t->s = v;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

__attribute__((format(printf, 2, 3))) void voltagent_text_printf(struct text *t, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->failed = true;
        return;
    }
    if ((size_t)n < sizeof(buf)) {
        voltagent_text_add(t, buf, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        t->failed = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    voltagent_text_add(t, big, (size_t)n);
    free(big);
}

void voltagent_text_str(struct text *t, const char *s)
{
    voltagent_text_add(t, s, strlen(s));
}

/* Upstream's truncateIfTooLong for a whole text: cut at MAX_TEXT (a character boundary), then
 * the guidance line. Returns whether it cut. */
bool voltagent_text_cap(struct text *t)
{
    if (t->failed || t->len <= MAX_TEXT)
        return false;
    t->len = broker_utf8_cut(t->s, t->len, MAX_TEXT);
    t->s[t->len] = '\0';
    voltagent_text_str(t, "\n");
    voltagent_text_str(t, voltagent_truncation_guidance);
    return true;
}

/* {"output": TEXT} with the text's ownership kept by the caller; NULL on ENOMEM. */
cJSON *voltagent_output_result(struct text *t)
{
    if (t->failed)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "output", t->s ? t->s : "")) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Short voltagent_echo of agent text in a message (upstream echoes it whole; corral caps it so a huge
 * old_string cannot double the size of every error). */
void voltagent_echo(char *buf, size_t size, const char *s)
{
    size_t n = strlen(s);
    if (n < size) {
        memcpy(buf, s, n + 1);
        return;
    }
    size_t cut = broker_utf8_cut(s, n, size - 4);
    memcpy(buf, s, cut);
    memcpy(buf + cut, "...", 4);
}

cJSON *voltagent_fail_broker(const struct broker_err *e, bool *is_error)
{
    *is_error = true;
    return voltagent_error(e);
}

__attribute__((format(printf, 3, 4))) cJSON *voltagent_fail_text(bool *is_error, const char *code,
                                                                 const char *fmt, ...)
{
    char buf[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    *is_error = true;
    return voltagent_error_text(code, buf);
}

cJSON *voltagent_fail_path(cJSON *err, bool *is_error)
{
    *is_error = true;
    return err;
}
