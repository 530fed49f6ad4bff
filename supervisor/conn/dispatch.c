/* supervisor/conn/dispatch.c: the method table of the agent protocol. Each method says whether it is a
 * request or a notification and whether it is permitted before initialize; the table refuses what
 * is not permitted now, so no handler checks it again. */
#include "supervisor/conn/dispatch.h"
#include "supervisor/conn/mcp.h"
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
    if (!t || !cJSON_AddBoolToObject(t, "listChanged", false) ||
        !cJSON_AddObjectToObject(c, "logging")) {
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
    agent_set_client_capabilities(a, p ? cJSON_GetObjectItemCaseSensitive(p, "capabilities") : NULL);
    agent_set_initialized(a, chosen);
    reply_taking(a, m, r);
}

static void m_initialized(struct agent *a, const struct rpc_msg *m)
{
    (void)a, (void)m; /* the handshake is complete on our side once initialize was answered */
}

static void m_roots_changed(struct agent *a, const struct rpc_msg *m)
{
    (void)a, (void)m; /* hosts that declare roots send it; the workspace is corral's to choose */
}

static void m_cancelled(struct agent *a, const struct rpc_msg *m)
{
    const cJSON *id = cJSON_IsObject(m->params)
                          ? cJSON_GetObjectItemCaseSensitive(m->params, "requestId")
                          : NULL;
    if (cJSON_IsString(id) || cJSON_IsNumber(id) || cJSON_IsRaw(id))
        agent_cancel_call(a, id);
}

static void m_set_level(struct agent *a, const struct rpc_msg *m)
{
    const cJSON *l = cJSON_IsObject(m->params) ? cJSON_GetObjectItemCaseSensitive(m->params, "level")
                                               : NULL;
    int level = cJSON_IsString(l) ? mcp_log_level_parse(l->valuestring) : -EINVAL;
    if (level < 0) {
        agent_reply_error(a, m->id, RPC_INVALID_PARAMS,
                          "invalid params: level must be one of debug, info, notice, warning, error, "
                          "critical, alert, emergency");
        return;
    }
    agent_set_log_level(a, level);
    reply_taking(a, m, cJSON_CreateObject());
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
    /* Without the tools the policy disables (the gate's list, tools/gate.c), each with its
     * MCP annotations and outputSchema. */
    cJSON *tools = tool_surface_list(agent_surface(a), agent_tools(a));
    cJSON *r = tools && mcp_tools_annotate(tools, agent_surface(a)) == 0 ? cJSON_CreateObject() : NULL;
    if (!r) {
        cJSON_Delete(tools);
        reply_taking(a, m, NULL);
        return;
    }
    cJSON_AddItemToObject(r, "tools", tools);
    reply_taking(a, m, r);
}

/* ---- approval through elicitation: the call waits for the person's answer ---- */

struct held_call {
    cJSON *id, *args, *progress;
    char *name;
};

static void held_call_free(struct held_call *c)
{
    if (!c)
        return;
    cJSON_Delete(c->id);
    cJSON_Delete(c->args);
    cJSON_Delete(c->progress);
    free(c->name);
    free(c);
}

static cJSON *gate_body(const struct held_call *c, const char *what)
{
    cJSON *b = cJSON_CreateObject();
    cJSON *id = cJSON_IsRaw(c->id) ? cJSON_CreateString(c->id->valuestring)
                                   : cJSON_Duplicate(c->id, false);
    if (!b || !id || !cJSON_AddStringToObject(b, "gate", "tool_approval") ||
        !cJSON_AddStringToObject(b, "tool", c->name) ||
        !cJSON_AddStringToObject(b, "by", "mcp elicitation") ||
        (what && !cJSON_AddStringToObject(b, "decision", what))) {
        cJSON_Delete(b);
        cJSON_Delete(id);
        return NULL;
    }
    cJSON_AddItemToObject(b, "request_id", id);
    return b;
}

static void approval_answered(struct agent *a, const cJSON *result, const cJSON *error, bool dropped,
                              void *data)
{
    struct held_call *c = data;
    enum mcp_decision d = dropped ? MCP_DECISION_CANCELLED : mcp_elicit_decision(result, error);
    int rec = agent_record(a, "gate_resolved", gate_body(c, mcp_decision_name(d)));
    /* Dropped: the host cancelled the call or went away; nobody waits for an answer. */
    if (!dropped && !agent_ended(a)) {
        if (rec < 0) {
            /* The decision is not on record, so nothing is done on it. */
            agent_reply_error(a, c->id, RPC_INTERNAL_ERROR,
                              "internal error: the trail cannot be written, so the call was not made");
        } else {
            /* Declined or dismissed, the call still goes through the gate, which refuses it in
             * the surface's own words and records the denial. */
            enum tool_approval ap = d == MCP_DECISION_APPROVED ? TOOL_APPROVAL_GRANTED
                                                               : TOOL_APPROVAL_DECLINED;
            int r = agent_call_tool(a, c->id, c->name, c->args, c->progress, ap);
            if (r == -EIO)
                agent_reply_error(
                    a, c->id, RPC_INTERNAL_ERROR,
                    "internal error: the trail cannot be written, so the call was not made");
            else if (r < 0)
                agent_reply_error(a, c->id, RPC_INTERNAL_ERROR, "internal error: out of memory");
        }
    }
    held_call_free(c);
}

static void ask_approval(struct agent *a, const struct rpc_msg *m, const char *name, const cJSON *args,
                         const cJSON *progress)
{
    struct held_call *c = calloc(1, sizeof(*c));
    cJSON *params = mcp_elicit_approval(agent_surface(a)->name, name, args);
    if (c) {
        c->id = cJSON_Duplicate(m->id, false);
        c->name = strdup(name);
        c->args = args ? cJSON_Duplicate(args, true) : cJSON_CreateObject();
        c->progress = progress ? cJSON_Duplicate(progress, false) : NULL;
    }
    if (!c || !params || !c->id || !c->name || !c->args || (progress && !c->progress)) {
        held_call_free(c);
        cJSON_Delete(params);
        agent_reply_error(a, m->id, RPC_INTERNAL_ERROR, "internal error: out of memory");
        return;
    }
    cJSON *b = gate_body(c, NULL);
    if (b)
        cJSON_AddItemToObject(
            b, "asked", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(params, "message"), false));
    if (agent_record(a, "gate_triggered", b) < 0) {
        held_call_free(c);
        cJSON_Delete(params);
        agent_reply_error(a, m->id, RPC_INTERNAL_ERROR,
                          "internal error: the trail cannot be written, so the call was not made");
        return;
    }
    int r = agent_request(a, "elicitation/create", params, m->id, approval_answered, c);
    if (r < 0) {
        (void)agent_record(a, "gate_resolved", gate_body(c, mcp_decision_name(MCP_DECISION_CANCELLED)));
        if (r == -EBUSY)
            agent_reply_error(a, m->id, RPC_INVALID_REQUEST,
                              "invalid request: 16 calls already wait for a person's approval; "
                              "wait for their answers first");
        else
            agent_reply_error(a, m->id, RPC_INTERNAL_ERROR, "internal error: out of memory");
        held_call_free(c);
    }
    cJSON_Delete(params);
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
    /* Arguments stay in memory while the call runs or waits for a person: a flood of big ones
     * is refused before it is kept, and counts as abuse. */
    if (!agent_tool_keep_ok(a, args)) {
        agent_reply_error(a, m->id, -32004,
                          "memory limit: the arguments of this agent's tool calls in flight "
                          "would pass what corral keeps for it; wait for answers first");
        agent_count_abuse(a);
        return;
    }
    const cJSON *progress = mcp_progress_token(p);
    const struct tool_rule *rule = tool_rule_find(agent_tools(a), name->valuestring);
    /* Under needs_approval: an MCP host that can elicit asks its person; else a highway that
     * can ask holds the call for a person (corral run), answered later; else the gate refuses. */
    if (rule && rule->needs_approval && agent_client_can_elicit(a)) {
        ask_approval(a, m, name->valuestring, args, progress);
        return;
    }
    if (agent_hold_for_approval(a, m->id, name->valuestring, args) == 0)
        return;
    int r = agent_call_tool(a, m->id, name->valuestring, args, progress, TOOL_APPROVAL_NONE);
    if (r == -EIO)
        agent_reply_error(a, m->id, RPC_INTERNAL_ERROR,
                          "internal error: the trail cannot be written, so the call was not made");
    else if (r < 0)
        agent_reply_error(a, m->id, RPC_INTERNAL_ERROR, "internal error: out of memory");
}

/* Sorted by name (strcmp order) for bsearch. */
static const struct method methods[] = {
    {"initialize", m_initialize, M_REQUEST | M_BEFORE_INIT | M_ONCE},
    {"logging/setLevel", m_set_level, M_REQUEST},
    {"notifications/cancelled", m_cancelled, M_NOTIFICATION | M_BEFORE_INIT},
    {"notifications/initialized", m_initialized, M_NOTIFICATION},
    {"notifications/roots/list_changed", m_roots_changed, M_NOTIFICATION},
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
