/* supervisor/report/internal.h: what the report's files share: the run as read from its trail
 * (model.c), and the writers of its parts (html.c, graph.c, timeline.c, assets.c). */
#ifndef CORRAL_REPORT_INTERNAL_H
#define CORRAL_REPORT_INTERNAL_H

#include "supervisor/report/report.h"
#include "supervisor/trail/trail.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Bounds that keep the page, and the memory that builds it, in proportion whatever the trail
 * holds: past them the page says what it left out and `corral trail` shows the rest. */
#define REPORT_MARKS_MAX 12000 /* timeline entries */
#define REPORT_BODY_MAX 2048   /* bytes of one entry's body shown */
#define REPORT_LOG_MAX 8192    /* bytes of an agent's stderr log shown (its end) */
#define REPORT_WS_MAX 2000     /* workspaces with a lane and a place in the tree */
#define REPORT_TASKS_MAX 400   /* tasks in the graph (Graphviz's dot is quadratic-ish) */
#define REPORT_RULES_MAX 200   /* distinct denial rules */
#define REPORT_EXAMPLES_MAX 8  /* examples kept per denial rule */
#define REPORT_OPEN_MAX 512    /* tool calls and processes waiting for their end */
#define REPORT_NET_MAX 2000    /* network connections listed */

/* A string -> index map (open addressing), for workspace and task ids. */
struct report_map {
    char **keys;
    size_t *vals;
    size_t cap, n;
};
/* Index of key, or SIZE_MAX. */
size_t report_map_get(const struct report_map *m, const char *key);
/* Adds key -> val (key copied); -ENOMEM. */
int report_map_put(struct report_map *m, const char *key, size_t val);
void report_map_free(struct report_map *m);

/* Timeline kinds: each has a colour, a legend entry and a toggle on the page. */
enum report_kind {
    REPORT_KIND_PROCESS,
    REPORT_KIND_TOOL,
    REPORT_KIND_ENVELOPE,
    REPORT_KIND_SIGNAL,
    REPORT_KIND_CHECKPOINT,
    REPORT_KIND_TASK,
    REPORT_KIND_GATE,
    REPORT_KIND_DENIAL,
    REPORT_KIND_BUDGET,
    REPORT_KIND_WORKSPACE,
    REPORT_KIND_NETWORK,
    REPORT_KIND_LOG,
    REPORT_KIND_MESSAGE,
    REPORT_KIND_OTHER,
    REPORT_KIND_COUNT
};
extern const char *const report_kind_names[REPORT_KIND_COUNT]; /* css class suffix and legend word */

struct report_mark {
    size_t lane; /* 0: the system lane; 1 + workspace index */
    enum report_kind kind;
    uint64_t seq;
    int64_t t_us, dur_us; /* from the run's start; dur_us 0: an instant */
    bool open;            /* a process or tool call whose end is not (yet) in the trail */
    char *label;          /* short: "tool_call readFile", owned */
    char *body;           /* the entry's body, pretty JSON, cut at REPORT_BODY_MAX, owned */
};

struct report_ws {
    char *id, *parent, *agent, *role, *state, *task, *owner;
    int64_t created_us, started_us, exited_us; /* run-relative; -1 unknown */
    /* granted (workspace_created.budgets; -1: not set) */
    double mem_limit, pids_limit, cpus_limit, wall_limit;
    /* used (process_exited; -1: unknown) */
    double mem_peak, cpu_sec, wall_sec;
    char *exit_text; /* "exit 0", "signal 15", "OOM" */
    unsigned warnings, exceeded, denials, tool_calls, checkpoints;
    char *log; /* the end of its stderr log (agent_log), owned */
    size_t log_bytes;
    bool log_cut;
    size_t depth; /* in the tree */
    size_t order; /* position in tree order (lane order) */
};

struct report_task {
    char *id, *name, *description, *status, *workspace, *parent;
    char **deps;
    size_t ndeps;
};

struct report_rule {
    char *rule;
    uint64_t count;
    char *kinds; /* "path, seccomp" */
    size_t nexamples;
    struct report_example {
        uint64_t seq;
        char *workspace, *subject, *reason;
    } examples[REPORT_EXAMPLES_MAX];
};

struct report_net {
    uint64_t seq;
    int64_t t_us;
    char *workspace, *summary, *body;
};

struct report_count {
    char *type;
    uint64_t n;
};

struct report_model {
    const char *db;
    /* summary */
    char *trail_id, *policy, *owner, *command, *stop_text, *durability;
    int64_t start_ts, end_ts; /* unix microseconds of the first and last entry */
    uint64_t entries;
    int verify_rc; /* 0 ok, 1 bad, <0 unreadable */
    char verify_msg[768];
    uint64_t verify_bad_seq, head_seq;
    char head_hex[2 * TRAIL_HASH_LEN + 1];
    /* parts */
    struct report_ws *ws;
    size_t nws;
    size_t ws_dropped;
    struct report_map ws_ids;
    size_t *lane_order; /* workspace indexes in tree order */
    struct report_task *tasks;
    size_t ntasks, tasks_dropped;
    struct report_map task_ids;
    struct report_mark *marks;
    size_t nmarks, marks_cap;
    uint64_t marks_dropped;
    struct report_rule *rules;
    size_t nrules;
    uint64_t denials, rules_dropped;
    struct report_net *net;
    size_t nnet;
    uint64_t net_dropped;
    struct report_count *counts;
    size_t ncounts;
};

/* Reads the trail into m (m->db set by the caller). 0 or a negative code with err. */
int report_model_load(struct report_model *m, struct cerr *err);
void report_model_free(struct report_model *m);

/* ---- writing the page ---------------------------------------------------------------------- */

/* Text for an HTML text node or a quoted attribute value: & < > " ' escaped, control characters
 * but tab and newline shown as U+FFFD, bytes that are not UTF-8 likewise. */
void report_put_text(FILE *f, const char *s);
void report_put_textn(FILE *f, const char *s, size_t n);
/* printf whose %s arguments are NOT escaped: only for our own constant markup and numbers. */
void report_putf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Length of the valid UTF-8 sequence at s (of at most n bytes), 0 if it is not one. */
size_t report_utf8_len(const unsigned char *s, size_t n);
/* Copies s (at most max bytes, cut on a UTF-8 boundary, "…" added when cut) with every byte that
 * is not valid UTF-8, and every control character but \n and \t, replaced by '?'. Owned. */
char *report_clean_utf8(const char *s, size_t len, size_t max);

/* The task graph as an inline <svg>, laid out by Graphviz's dot (libgvc), or a note saying why
 * there is none. */
void report_graph_write(FILE *f, const struct report_model *m);
/* True if an SVG's markup (the insides of its tags) holds nothing that could run, load or style:
 * no script, foreignObject, href, style, on...= attribute; text between tags is not looked at. */
bool report_svg_inert(const char *svg, size_t len);
/* The timeline: lane labels, the marks as an <svg>, controls and the detail panel. */
void report_timeline_write(FILE *f, const struct report_model *m);

/* The page's one style sheet and one script, and their CSP source expressions
 * ("'sha256-BASE64'"), computed once. */
extern const char report_css[];
extern const char report_js[];
void report_csp_hash(const char *text, char out[64]);

/* "1.5 MiB", "340 ms" */
void report_fmt_bytes(double v, char *buf, size_t cap);
void report_fmt_duration_us(int64_t us, char *buf, size_t cap);

#endif
