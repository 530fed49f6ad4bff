/* tools/voltagent.c: the VoltAgent workspace surface (seed 003): registry, error shape, and the
 * filesystem and sandbox toolkits (placeholder until issue 7 lands them). */
#include "tools/voltagent.h"

cJSON *voltagent_error(const struct broker_err *e)
{
    cJSON *o = cJSON_CreateObject();
    if (o && !cJSON_AddStringToObject(o, "error", e->msg)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
