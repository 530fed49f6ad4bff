/* supervisor/trail/scrub.c: see scrub.h. A deny list of field names, because every one of them
 * is the runtime's own (the agents' words live in payloads and tool arguments, which name no host
 * path unless an agent wrote one), plus a scan of every string for the run's host paths. */
#include "supervisor/trail/scrub.h"

#include <stdbool.h>
#include <string.h>

static const char *const host_fields[] = {
    "pid",     "cgroup",   "program", "argv",     "file",     "run_dir", "policy",
    "profile", "host_uid", "trail",   "log_path", "root_dir", "binds",   "mounts",
};

static bool is_host_field(const char *k)
{
    for (size_t i = 0; k && i < sizeof(host_fields) / sizeof(host_fields[0]); i++)
        if (!strcmp(k, host_fields[i]))
            return true;
    return false;
}

static bool names_host_path(const char *s, const char *const *paths, size_t n)
{
    for (size_t i = 0; s && i < n; i++)
        if (paths[i] && paths[i][0] == '/' && strstr(s, paths[i]))
            return true;
    return false;
}

/* cJSON_ReplaceItemViaPointer leaves the replacement without its member's name: an object's
 * member came out keyed "" (wacp/trail.query answered entries with "" for "body"). */
static bool replace_member(cJSON *parent, cJSON *item, cJSON *with)
{
    if (item->string && !(with->string = strdup(item->string)))
        return false;
    return cJSON_ReplaceItemViaPointer(parent, item, with);
}

static void scrub(cJSON *j, const char *const *paths, size_t n, int depth)
{
    if (depth > 64)
        return;
    cJSON *c = j ? j->child : NULL;
    while (c) {
        cJSON *next = c->next;
        if (cJSON_IsObject(j) && is_host_field(c->string)) {
            cJSON_DetachItemViaPointer(j, c);
            cJSON_Delete(c);
        } else if (cJSON_IsString(c) && names_host_path(c->valuestring, paths, n)) {
            cJSON *r = cJSON_CreateString("(host path)");
            if (r && !replace_member(j, c, r))
                cJSON_Delete(r);
        } else if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
            scrub(c, paths, n, depth + 1);
        }
        c = next;
    }
}

void trail_scrub_for_agent(cJSON *j, const char *const *host_paths, size_t n)
{
    cJSON *body = cJSON_GetObjectItemCaseSensitive(j, "body");
    if (cJSON_IsRaw(body)) { /* stored canonical text: parsed to be scrubbed */
        cJSON *parsed = cJSON_Parse(body->valuestring);
        if (!parsed || !replace_member(j, body, parsed)) {
            cJSON_Delete(parsed);
            cJSON_ReplaceItemInObjectCaseSensitive(j, "body", cJSON_CreateObject());
            return;
        }
        body = parsed;
    }
    scrub(body, host_paths, n, 0);
    /* supervisor_started names the root workspace's host directory as "workspace". */
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
    if (cJSON_IsString(type) && !strcmp(type->valuestring, "supervisor_started"))
        cJSON_DeleteItemFromObjectCaseSensitive(body, "workspace");
}
