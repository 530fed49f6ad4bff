/* supervisor/conn/dispatch.c: the method table of the agent protocol. Each method says whether it is a
 * request or a notification and whether it is permitted before initialize; the table refuses what
 * is not permitted now, so no handler checks it again. */
#include "supervisor/conn/dispatch.h"
#include "tools/gate.h"

#include <stdio.h>
#include <string.h>

#define CORRAL_SERVER_NAME "corral"
#define CORRAL_SERVER_VERSION "0.1.0"
/* The stateless revision: requests carry their version in _meta and need no initialize. */
#define MCP_STATELESS_VERSION "2026-07-28"
#define MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"

const char *const dispatch_protocol_versions[] = {
    MCP_STATELESS_VERSION, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
};
const size_t dispatch_n_protocol_versions = ARRAY_SIZE(dispatch_protocol_versions);

enum method_flags {
    M_REQUEST = 1u << 0,      /* answered; sent as a notification it is ignored */
    M_NOTIFICATION = 1u << 1, /* never answered; sent with an id it is refused */
    M_BEFORE_INIT = 1u << 2,  /* permitted before initialize */
    M_ONCE = 1u << 3,         /* refused once the connection is initialized */
};

typedef void (*method_fn)(struct agent *a, const struct rpc_msg *m);

struct method {
    const char *name;
    method_fn fn;
    unsigned flags;
};

static cJSON *server_info(void)
{
    cJSON *o = cJSON_CreateObject();
    if (o && (!cJSON_AddStringToObject(o, "name", CORRAL_SERVER_NAME) ||
              !cJSON_AddStringToObject(o, "version", CORRAL_SERVER_VERSION))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *capabilities(void)
{
    cJSON *c = cJSON_CreateObject();
    cJSON *t = c ? cJSON_AddObjectToObject(c, "tools") : NULL;
    if (!t || !cJSON_AddBoolToObject(t, "listChanged", false)) {
        cJSON_Delete(c);
        return NULL;
    }
    return c;
}

static const char *instructions(const struct agent *a)
{
    (void)a;
    return "Tools act on the workspace served to you; paths are relative to its root. "
           "tools/list gives each tool's input schema.";
}

static void reply_taking(struct agent *a, const struct rpc_msg *m, cJSON *result)
{
    if (result)
        agent_reply(a, m->id, result);
    else
        agent_reply_error(a, m->id, RPC_INTERNAL_ERROR, "internal error: out of memory");
    cJSON_Delete(result);
}

static bool version_supported(const char *v)
{
    for (size_t i = 0; i < dispatch_n_protocol_versions; i++)
        if (!strcmp(v, dispatch_protocol_versions[i]))
            return true;
    return false;
}

static void m_initialize(struct agent *a, const struct rpc_msg *m)
{
    const cJSON *p = m->params;
    if (p && !cJSON_IsObject(p)) {
        agent_reply_error(a, m->id, RPC_INVALID_PARAMS, "invalid params: initialize takes an object");
        return;
    }
    const cJSON *v = p ? cJSON_GetObjectItemCaseSensitive(p, "protocolVersion") : NULL;
    if (v && !cJSON_IsString(v)) {
        agent_reply_error(a, m->id, RPC_INVALID_PARAMS,
                          "invalid params: protocolVersion must be a string");
        return;
    }
    /* The client's version when we speak it (the handshake needs one with initialize, so not the
     * stateless one); otherwise our newest, and the client decides whether to go on. */
    const char *chosen = dispatch_protocol_versions[1];
    if (v && version_supported(v->valuestring) && strcmp(v->valuestring, MCP_STATELESS_VERSION))
        chosen = v->valuestring;
    cJSON *r = cJSON_CreateObject();
    cJSON *caps = capabilities(), *info = server_info();
    if (!r || !caps || !info || !cJSON_AddStringToObject(r, "protocolVersion", chosen)) {
        cJSON_Delete(r), cJSON_Delete(caps), cJSON_Delete(info);
        reply_taking(a, m, NULL);
        return;
    }
    cJSON_AddItemToObject(r, "capabilities", caps);
    cJSON_AddItemToObject(r, "serverInfo", info);
    cJSON_AddStringToObject(r, "instructions", instructions(a));
    agent_set_initialized(a, chosen);
    reply_taking(a, m, r);
}

static void m_initialized(struct agent *a, const struct rpc_msg *m)
{
    (void)a, (void)m; /* the handshake is complete on our side once initialize was answered */
}

static void m_ignore(struct agent *a, const struct rpc_msg *m)
{
    (void)a, (void)m; /* notifications/cancelled: calls run to completion; the answer is still sent */
}

static void m_ping(struct agent *a, const struct rpc_msg *m)
{
    reply_taking(a, m, cJSON_CreateObject());
}

static void m_discover(struct agent *a, const struct rpc_msg *m)
{
    cJSON *r = cJSON_CreateObject();
    cJSON *vs = r ? cJSON_AddArrayToObject(r, "supportedVersions") : NULL;
    cJSON *caps = capabilities(), *info = server_info();
    if (!vs || !caps || !info) {
        cJSON_Delete(r), cJSON_Delete(caps), cJSON_Delete(info);
        reply_taking(a, m, NULL);
        return;
    }
    for (size_t i = 0; i < dispatch_n_protocol_versions; i++)
        cJSON_AddItemToArray(vs, cJSON_CreateString(dispatch_protocol_versions[i]));
    cJSON_AddItemToObject(r, "capabilities", caps);
    cJSON_AddItemToObject(r, "serverInfo", info);
    cJSON_AddStringToObject(r, "instructions", instructions(a));
    cJSON_AddStringToObject(r, "resultType", "complete");
    reply_taking(a, m, r);
}

static void m_tools_list(struct agent *a, const struct rpc_msg *m)
{
    /* Without the tools the policy disables (the gate's list, tools/gate.c). */
    cJSON *tools = tool_surface_list(agent_surface(a), agent_tools(a));
    cJSON *r = tools ? cJSON_CreateObject() : NULL;
    if (!r) {
        cJSON_Delete(tools);
        reply_taking(a, m, NULL);
        return;
    }
    cJSON_AddItemToObject(r, "tools", tools);
    reply_taking(a, m, r);
}

static void m_tools_call(struct agent *a, const struct rpc_msg *m)
{
    const cJSON *p = m->params;
    if (!cJSON_IsObject(p)) {
        agent_reply_error(a, m->id, RPC_INVALID_PARAMS,
                          "invalid params: tools/call takes an object {name, arguments}");
        return;
    }
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(p, "arguments");
    if (!cJSON_IsString(name) || !name->valuestring[0]) {
        agent_reply_error(a, m->id, RPC_INVALID_PARAMS,
                          "invalid params: \"name\" must be a tool name (a string)");
        return;
    }
    if (args && !cJSON_IsObject(args)) {
        agent_reply_error(a, m->id, RPC_INVALID_PARAMS,
                          "invalid params: \"arguments\" must be an object");
        return;
    }
    /* The gate's first rule, answered here at the protocol level: a disabled tool is not there
     * for this role (tools/list does not show it). The other rules come in tool_surface_call. */
    if (!tool_enabled(agent_tools(a), name->valuestring)) {
        if (agent_record_denial(a, "tool", name->valuestring, tool_rule_words(TOOL_RULE_DISABLED)) < 0) {
            agent_reply_error(a, m->id, RPC_INTERNAL_ERROR,
                              "internal error: the trail cannot be written, so the call was not made");
            return;
        }
        char msg[256];
        snprintf(msg, sizeof(msg),
                 "tool \"%.64s\" is disabled for this agent's role by the policy; "
                 "tools/list shows the tools it may call",
                 name->valuestring);
        agent_reply_error(a, m->id, RPC_INVALID_PARAMS, msg);
        return;
    }
    /* A flood of calls is refused before it is recorded or queued, and counts as abuse. */
    if (!agent_tool_rate_take(a)) {
        agent_reply_error(a, m->id, -32004,
                          "rate limited: more tool calls a second than the policy's "
                          "rate_limits.tool_calls allows; slow down");
        agent_count_abuse(a);
        return;
    }
    /* Under needs_approval with a highway to ask: held for a person, answered later. */
    if (agent_hold_for_approval(a, m->id, name->valuestring, args) == 0)
        return;
    int r = agent_call_tool(a, m->id, name->valuestring, args);
    if (r == -EIO)
        agent_reply_error(a, m->id, RPC_INTERNAL_ERROR,
                          "internal error: the trail cannot be written, so the call was not made");
    else if (r < 0)
        agent_reply_error(a, m->id, RPC_INTERNAL_ERROR, "internal error: out of memory");
}

/* Sorted by name (strcmp order) for bsearch. */
static const struct method methods[] = {
    {"initialize", m_initialize, M_REQUEST | M_BEFORE_INIT | M_ONCE},
    {"notifications/cancelled", m_ignore, M_NOTIFICATION | M_BEFORE_INIT},
    {"notifications/initialized", m_initialized, M_NOTIFICATION},
    {"ping", m_ping, M_REQUEST | M_BEFORE_INIT},
    {"server/discover", m_discover, M_REQUEST | M_BEFORE_INIT},
    {"tools/call", m_tools_call, M_REQUEST},
    {"tools/list", m_tools_list, M_REQUEST},
};

static int method_cmp(const void *key, const void *elem)
{
    return strcmp(key, ((const struct method *)elem)->name);
}

/* A request of the stateless revision names its version in params._meta instead of a handshake. */
static bool stateless_request(const struct rpc_msg *m)
{
    const cJSON *meta = cJSON_IsObject(m->params) ? cJSON_GetObjectItemCaseSensitive(m->params, "_meta")
                                                  : NULL;
    const cJSON *v = cJSON_IsObject(meta) ? cJSON_GetObjectItemCaseSensitive(meta, MCP_META_VERSION)
                                          : NULL;
    return cJSON_IsString(v) && !strcmp(v->valuestring, MCP_STATELESS_VERSION);
}

void dispatch_message(struct agent *a, const struct rpc_msg *m)
{
    const struct method *md = bsearch(m->method, methods, ARRAY_SIZE(methods), sizeof(methods[0]),
                                      method_cmp);
    char msg[200];
    if (!m->id) {
        /* Notifications are never answered, not even with an error (JSON-RPC 2.0, 4.1). */
        if (md && (md->flags & M_NOTIFICATION) && ((md->flags & M_BEFORE_INIT) || agent_initialized(a)))
            md->fn(a, m);
        else if (!md)
            agent_count_abuse(a);
        return;
    }
    if (!md && !strncmp(m->method, "wacp/", 5) && agent_serves_wacp(a)) {
        if (!agent_initialized(a) && !stateless_request(m)) {
            snprintf(msg, sizeof(msg), "not initialized: send initialize before %.64s", m->method);
            agent_reply_error(a, m->id, RPC_NOT_INITIALIZED, msg);
            return;
        }
        agent_call_wacp(a, m);
        return;
    }
    if (!md) {
        snprintf(msg, sizeof(msg), "method not found: \"%.100s\"", m->method);
        agent_reply_error(a, m->id, RPC_METHOD_NOT_FOUND, msg);
        return;
    }
    if (!(md->flags & M_REQUEST)) {
        snprintf(msg, sizeof(msg), "invalid request: %s is a notification; send it without an id",
                 md->name);
        agent_reply_error(a, m->id, RPC_INVALID_REQUEST, msg);
        return;
    }
    if (!(md->flags & M_BEFORE_INIT) && !agent_initialized(a) && !stateless_request(m)) {
        snprintf(msg, sizeof(msg), "not initialized: send initialize before %s", md->name);
        agent_reply_error(a, m->id, RPC_NOT_INITIALIZED, msg);
        return;
    }
    if ((md->flags & M_ONCE) && agent_initialized(a)) {
        snprintf(msg, sizeof(msg), "invalid request: %s was already done on this connection", md->name);
        agent_reply_error(a, m->id, RPC_INVALID_REQUEST, msg);
        return;
    }
    md->fn(a, m);
}
