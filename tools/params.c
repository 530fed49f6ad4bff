/* tools/params.c: checks a call's arguments against a tool's parameter table and builds the
 * table's inputSchema; the surfaces (wap.c, file_tools.c, voltagent.c, kward.c) spell the faults. */
#include "tools/params.h"

#include "common/util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int bad_set(struct tool_param_bad *bad, enum tool_param_fault fault, const struct tool_param *p,
                   const cJSON *value)
{
    *bad = (struct tool_param_bad){.fault = fault, .param = p, .value = value, .item = -1};
    return -EINVAL;
}

/* A number (whole for the integer types) in [min, max]; the _TEXT types also take it as a short
 * string. */
static int check_number(const struct tool_param *p, const cJSON *v, double *out,
                        struct tool_param_bad *bad)
{
    double d;
    if (cJSON_IsNumber(v)) {
        d = v->valuedouble;
    } else if (p->type != TOOL_PARAM_INT && cJSON_IsString(v) && v->valuestring && v->valuestring[0] &&
               strnlen(v->valuestring, 32) < 32) {
        char *end;
        d = strtod(v->valuestring, &end);
        if (*end)
            return bad_set(bad, TOOL_PARAM_TYPE, p, v);
    } else {
        return bad_set(bad, TOOL_PARAM_TYPE, p, v);
    }
    if (!isfinite(d))
        return bad_set(bad, TOOL_PARAM_NOT_FINITE, p, v);
    if (p->type != TOOL_PARAM_NUMBER_TEXT && floor(d) != d)
        return bad_set(bad, TOOL_PARAM_NOT_WHOLE, p, v);
    if (d < p->min || d > p->max)
        return bad_set(bad, TOOL_PARAM_RANGE, p, v);
    *out = d;
    return 0;
}

static int check_one(const struct tool_param *p, const cJSON *v, unsigned flags, double *num,
                     tool_params_item_fn hook, void *arg, struct tool_param_bad *bad)
{
    switch (p->type) {
    case TOOL_PARAM_STRING:
    case TOOL_PARAM_STRING_NULL:
        if ((flags & TOOL_PARAMS_STRICT) && p->type == TOOL_PARAM_STRING_NULL && cJSON_IsNull(v))
            return 0;
        if (!cJSON_IsString(v) || !v->valuestring)
            return bad_set(bad, TOOL_PARAM_TYPE, p, v);
        if ((flags & TOOL_PARAMS_STRICT) && p->max > 0 && strnlen(v->valuestring, (size_t)p->max + 1) > p->max)
            return bad_set(bad, TOOL_PARAM_TOO_LONG, p, v);
        if (!p->choices)
            return 0;
        for (const char *const *c = p->choices; *c; c++)
            if (strcmp(*c, v->valuestring) == 0)
                return 0;
        return bad_set(bad, TOOL_PARAM_CHOICE, p, v);
    case TOOL_PARAM_BOOL: return cJSON_IsBool(v) ? 0 : bad_set(bad, TOOL_PARAM_TYPE, p, v);
    case TOOL_PARAM_INT:
    case TOOL_PARAM_INT_TEXT:
    case TOOL_PARAM_NUMBER_TEXT: return check_number(p, v, num, bad);
    case TOOL_PARAM_OBJECT_NULL:
        return cJSON_IsObject(v) || cJSON_IsNull(v) ? 0 : bad_set(bad, TOOL_PARAM_TYPE, p, v);
    case TOOL_PARAM_NUMBER:
        return cJSON_IsNumber(v) && !isnan(v->valuedouble) ? 0 : bad_set(bad, TOOL_PARAM_TYPE, p, v);
    case TOOL_PARAM_ARRAY: return cJSON_IsArray(v) ? 0 : bad_set(bad, TOOL_PARAM_TYPE, p, v);
    case TOOL_PARAM_OBJECT: return cJSON_IsObject(v) ? 0 : bad_set(bad, TOOL_PARAM_TYPE, p, v);
    case TOOL_PARAM_ANY: return cJSON_IsInvalid(v) ? bad_set(bad, TOOL_PARAM_TYPE, p, v) : 0;
    case TOOL_PARAM_NUMBER_OR_STRING:
        return cJSON_IsNumber(v) || cJSON_IsString(v) ? 0 : bad_set(bad, TOOL_PARAM_TYPE, p, v);
    case TOOL_PARAM_STRINGS:
    case TOOL_PARAM_ITEMS: {
        if (!cJSON_IsArray(v))
            return bad_set(bad, TOOL_PARAM_TYPE, p, v);
        int n = cJSON_GetArraySize(v);
        if (n < p->min || n > p->max)
            return bad_set(bad, TOOL_PARAM_COUNT, p, v);
        int i = 0;
        for (const cJSON *it = v->child; it; it = it->next, i++) {
            bool ok = p->type == TOOL_PARAM_STRINGS ? cJSON_IsString(it) : cJSON_IsObject(it);
            if (!ok || (p->type == TOOL_PARAM_ITEMS && hook && hook(p, i, it, arg) < 0)) {
                bad_set(bad, ok ? TOOL_PARAM_HOOK : TOOL_PARAM_ITEM, p, it);
                bad->item = i;
                return -EINVAL;
            }
        }
        return 0;
    }
    case TOOL_PARAM_STRMAP: {
        if (!cJSON_IsObject(v))
            return bad_set(bad, TOOL_PARAM_TYPE, p, v);
        int n = cJSON_GetArraySize(v);
        if (n < p->min || n > p->max)
            return bad_set(bad, TOOL_PARAM_COUNT, p, v);
        for (const cJSON *it = v->child; it; it = it->next)
            if (!cJSON_IsString(it)) {
                bad_set(bad, TOOL_PARAM_ITEM, p, it);
                bad->key = it->string ? it->string : "?";
                return -EINVAL;
            }
        return 0;
    }
    }
    return bad_set(bad, TOOL_PARAM_TYPE, p, v);
}

int tool_params_check(const struct tool_param *p, size_t n, const cJSON *args, const cJSON **v,
                      double *num, tool_params_item_fn item, void *arg, struct tool_param_bad *bad)
{
    return tool_params_check_flags(p, n, args, 0, v, num, item, arg, bad);
}

int tool_params_check_flags(const struct tool_param *p, size_t n, const cJSON *args, unsigned flags,
                            const cJSON **v, double *num, tool_params_item_fn item, void *arg,
                            struct tool_param_bad *bad)
{
    for (size_t i = 0; i < n; i++) {
        v[i] = NULL;
        if (num)
            num[i] = 0;
    }
    *bad = (struct tool_param_bad){.fault = TOOL_PARAM_OK, .item = -1};
    if (args && !cJSON_IsNull(args) && !cJSON_IsObject(args))
        return bad_set(bad, TOOL_PARAM_NOT_OBJECT, NULL, args);
    for (const cJSON *it = cJSON_IsObject(args) ? args->child : NULL; it; it = it->next) {
        size_t i;
        for (i = 0; i < n; i++)
            if (it->string && strcmp(it->string, p[i].name) == 0)
                break;
        if (i == n) {
            bad_set(bad, TOOL_PARAM_UNKNOWN, NULL, it);
            bad->key = it->string ? it->string : "";
            return -EINVAL;
        }
        if ((flags & TOOL_PARAMS_STRICT) && cJSON_GetObjectItemCaseSensitive(args, it->string) != it) {
            bad_set(bad, TOOL_PARAM_REPEATED, &p[i], it);
            bad->key = it->string;
            return -EINVAL;
        }
        if (!(flags & TOOL_PARAMS_STRICT) && cJSON_IsNull(it) && p[i].type != TOOL_PARAM_OBJECT_NULL &&
            p[i].type != TOOL_PARAM_ANY)
            continue;
        double d = 0;
        if (check_one(&p[i], it, flags, &d, item, arg, bad) < 0)
            return -EINVAL;
        v[i] = it;
        if (num)
            num[i] = d;
    }
    for (size_t i = 0; i < n; i++)
        if (p[i].required && !v[i])
            return bad_set(bad, TOOL_PARAM_REQUIRED, &p[i], NULL);
    return 0;
}

/* ---- schemas -------------------------------------------------------------------------------- */

static bool add_type(cJSON *s, const char *type)
{
    return cJSON_AddStringToObject(s, "type", type) != NULL;
}

static bool add_string_items(cJSON *s, const char *key)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "type", "string") || !cJSON_AddItemToObject(s, key, o)) {
        cJSON_Delete(o);
        return false;
    }
    return true;
}

static cJSON *param_schema(const struct tool_param *p, unsigned flags, tool_params_schema_fn items)
{
    bool all = flags & TOOL_PARAMS_ALL_BOUNDS, none = flags & TOOL_PARAMS_NO_BOUNDS;
    cJSON *s = p->type == TOOL_PARAM_ITEMS ? (items ? items(p) : NULL) : cJSON_CreateObject();
    bool ok = s != NULL;
    switch (p->type) {
    case TOOL_PARAM_STRING:
        ok = ok && add_type(s, "string");
        if (ok && p->choices) {
            cJSON *en = cJSON_AddArrayToObject(s, "enum");
            ok = en != NULL;
            for (const char *const *c = p->choices; ok && *c; c++)
                ok = cJSON_AddItemToArray(en, cJSON_CreateString(*c));
        }
        break;
    case TOOL_PARAM_STRING_NULL:
    case TOOL_PARAM_OBJECT_NULL: {
        cJSON *t = ok ? cJSON_CreateArray() : NULL;
        ok = t && cJSON_AddItemToObject(s, "type", t) &&
             cJSON_AddItemToArray(
                 t, cJSON_CreateString(p->type == TOOL_PARAM_OBJECT_NULL ? "object" : "string")) &&
             cJSON_AddItemToArray(t, cJSON_CreateString("null"));
        if (!ok && t && !cJSON_GetObjectItemCaseSensitive(s, "type"))
            cJSON_Delete(t);
        break;
    }
    case TOOL_PARAM_BOOL: ok = ok && add_type(s, "boolean"); break;
    case TOOL_PARAM_INT:
    case TOOL_PARAM_INT_TEXT:
    case TOOL_PARAM_NUMBER_TEXT:
        /* A bound at JSON's own limit says nothing, and past 2^53 cJSON prints inexactly. */
        ok = ok && add_type(s, p->type == TOOL_PARAM_NUMBER_TEXT ? "number" : "integer");
        if (ok && !none && (all || p->min > -TOOL_PARAMS_JSON_MAX))
            ok = cJSON_AddNumberToObject(s, "minimum", p->min);
        if (ok && !none && (all || p->max < TOOL_PARAMS_JSON_MAX))
            ok = cJSON_AddNumberToObject(s, "maximum", p->max);
        break;
    case TOOL_PARAM_STRINGS:
        ok = ok && add_type(s, "array") && add_string_items(s, "items");
        if (ok && all)
            ok = cJSON_AddNumberToObject(s, "minItems", p->min) &&
                 cJSON_AddNumberToObject(s, "maxItems", p->max);
        break;
    case TOOL_PARAM_STRMAP:
        ok = ok && add_type(s, "object") && add_string_items(s, "additionalProperties");
        break;
    case TOOL_PARAM_ITEMS: break;
    case TOOL_PARAM_NUMBER: ok = ok && add_type(s, "number"); break;
    case TOOL_PARAM_ARRAY: ok = ok && add_type(s, "array"); break;
    case TOOL_PARAM_OBJECT: ok = ok && add_type(s, "object"); break;
    case TOOL_PARAM_ANY: break;
    case TOOL_PARAM_NUMBER_OR_STRING: {
        cJSON *t = ok ? cJSON_CreateArray() : NULL;
        ok = t && cJSON_AddItemToObject(s, "type", t) && cJSON_AddItemToArray(t, cJSON_CreateString("number")) &&
             cJSON_AddItemToArray(t, cJSON_CreateString("string"));
        if (!ok && t && !cJSON_GetObjectItemCaseSensitive(s, "type"))
            cJSON_Delete(t);
        break;
    }
    }
    if (ok && p->desc && !cJSON_AddStringToObject(s, "description", p->desc))
        ok = false;
    if (!ok) {
        cJSON_Delete(s);
        return NULL;
    }
    return s;
}

cJSON *tool_params_entry(const char *name, const char *desc, const struct tool_param *p, size_t n,
                         unsigned flags, tool_params_schema_fn items)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *schema = NULL, *props = NULL, *req = NULL;
    bool ok = o && cJSON_AddStringToObject(o, "name", name) &&
              cJSON_AddStringToObject(o, "description", desc) &&
              (schema = cJSON_AddObjectToObject(o, "inputSchema")) && add_type(schema, "object") &&
              (props = cJSON_AddObjectToObject(schema, "properties")) && (req = cJSON_CreateArray());
    for (size_t k = 0; ok && k < n; k++) {
        cJSON *ps = param_schema(&p[k], flags, items);
        ok = ps && cJSON_AddItemToObject(props, p[k].name, ps);
        if (!ok)
            cJSON_Delete(ps);
        else if (p[k].required)
            ok = cJSON_AddItemToArray(req, cJSON_CreateString(p[k].name));
    }
    if (ok && (cJSON_GetArraySize(req) > 0 || (flags & TOOL_PARAMS_ALWAYS_REQUIRED))) {
        ok = cJSON_AddItemToObject(schema, "required", req);
        if (ok)
            req = NULL;
    }
    cJSON_Delete(req);
    if (ok && !cJSON_AddBoolToObject(schema, "additionalProperties", false))
        ok = false;
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *tool_params_list(const void *table, size_t n, size_t stride, unsigned flags,
                        tool_params_schema_fn items, bool (*shown)(const void *row, const void *data),
                        const void *data)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < n; i++) {
        const void *row = (const char *)table + i * stride;
        const struct tool_spec *t = row;
        if (shown && !shown(row, data))
            continue;
        cJSON *o = tool_params_entry(t->name, t->desc, t->params, t->n_params, flags, items);
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

const void *tool_params_find(const void *table, size_t n, size_t stride, const char *name)
{
    for (size_t i = 0; name && i < n; i++) {
        const void *row = (const char *)table + i * stride;
        if (!strcmp(((const struct tool_spec *)row)->name, name))
            return row;
    }
    return NULL;
}
