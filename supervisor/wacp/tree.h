/* supervisor/wacp/tree.h: the workspace tree and its states: lookup, ancestry, visibility, the
 * state names and transition table of PROTOCOL 6.3, and the one place a state changes. What a
 * change sets off higher up (tasks follow, envelopes dropped) goes through w->tree_hooks. */
#ifndef CORRAL_WACP_TREE_H
#define CORRAL_WACP_TREE_H

#include "supervisor/wacp/internal.h"

const char *wacp_tree_state_name(enum ws_state s);
bool wacp_tree_transition_ok(enum ws_state from, enum ws_state to);
struct wacp_ws *wacp_tree_find(const struct wacp *w, const char *id);
struct wacp_ws *wacp_tree_root(const struct wacp *w);
bool wacp_tree_is_ancestor(const struct wacp_ws *a, const struct wacp_ws *d); /* a strictly above d */
/* Whether CALLER may see WS: the coordinator all, a delegate its subtree, others themselves. */
bool wacp_tree_visible(const struct wacp_ws *caller, const struct wacp_ws *ws);
cJSON *wacp_tree_ws_json(const struct wacp_ws *ws);
void wacp_tree_free(struct wacp_ws *ws);
/* A fresh fd (O_RDONLY directory, its own description: a worker may list it) of WS's files:
 * the root's reopened through the model's fd of DIR, never by its path; a child's copy by its
 * path in the root-only run directory. < 0 with ERR set. */
int wacp_tree_dir_open(const struct wacp *w, const struct wacp_ws *ws, struct cerr *err);
bool wacp_tree_is_coordinator(const struct wacp_ws *ws);
/* Closed or failed: nothing moves any more. */
bool wacp_tree_terminal(enum ws_state s);
/* Whether CALLER governs WS (abort, suspend, integrate): the coordinator any non-root, a
 * delegate its descendants. */
bool wacp_tree_governs(const struct wacp_ws *caller, const struct wacp_ws *ws);
/* Records (body gets from, to, reason) and applies one state change. For a terminal state it
 * also fails the children (cascade within ownership), updates the task and stops the agent. */
int wacp_tree_set_state(struct wacp *w, struct wacp_ws *ws, enum ws_state to, const char *actor,
                        const char *reason);

#endif
