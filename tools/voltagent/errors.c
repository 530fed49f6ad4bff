/* tools/voltagent/errors.c: the VoltAgent surface's one error shape and its path rule, shared by
 * every toolkit below the surface's registry (voltagent.c), so they need not call up into it. */
#include "tools/voltagent/voltagent.h"

#include <stdio.h>
#include <string.h>

/* ---- the error shape ------------------------------------------------------------------------ */

cJSON *voltagent_error_text(const char *code, const char *text)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "error", text) || !cJSON_AddStringToObject(o, "code", code)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *voltagent_error(const struct broker_err *e)
{
    char text[sizeof(e->msg) + 16];
    snprintf(text, sizeof(text), "Error: %s", e->msg[0] ? e->msg : "the operation failed");
    return voltagent_error_text(broker_kind_name(e->kind), text);
}

int voltagent_path_check(const char *path, const char *field, cJSON **error)
{
    char text[256];
    *error = NULL;
    /* The traversal test comes first: "~/x" and "../x" are escapes, not typos. */
    bool tilde = path && strchr(path, '~') != NULL, dots = false;
    for (const char *p = path; p && *p && !dots; p++)
        dots = p[0] == '.' && p[1] == '.' && (p == path || p[-1] == '/' || p[-1] == '\\') &&
               (p[2] == '\0' || p[2] == '/' || p[2] == '\\');
    if (tilde || dots) {
        snprintf(text, sizeof(text),
                 "Error: Path traversal is not allowed: %s may not contain %s; use a path from the "
                 "workspace root, like '/src/app.ts'",
                 field, tilde ? "'~'" : "'..'");
        *error = voltagent_error_text(VOLTAGENT_E_TRAVERSAL, text);
        return -1;
    }
    if (!path || path[0] != '/') {
        snprintf(text, sizeof(text), "Error: %s must be a workspace path starting with '/'", field);
        *error = voltagent_error_text(broker_kind_name(BROKER_E_INVALID), text);
        return -1;
    }
    return 0;
}
