/* tools/kward/internal.h: what the files of the Kward surface share, and nothing outside
 * tools/kward/ includes: a call's state, the tool table's entry, the errors in the surface's words,
 * the argument and text helpers (common.c), the session's context budget counters, and each tool
 * with its parameter table (read.c, context.c, edit.c, shell.c), which the surface (kward.c)
 * lists. Lower files never call kward.c: context_budget_stats reads the tools' names through
 * call.table, which kward.c hands down. */
#ifndef CORRAL_KWARD_INTERNAL_H
#define CORRAL_KWARD_INTERNAL_H

#include "tools/broker/broker.h"
#include "tools/params.h"

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kward_outline;

#define MAX_PARAMS 6
#define MAX_COMMAND_BYTES 65536
#define MAX_TASK_BYTES 16384
#define MAX_PATHS 64
#define MAX_EDITS 256
#define MAX_INT TOOL_PARAMS_JSON_MAX /* integers: what a JSON number holds exactly */

struct call {
    struct tool_ctx *ctx;
    const struct kward_tool *t;
    const struct kward_tool *table; /* the surface's tools in T_* order (context_budget_stats) */
    const cJSON *v[MAX_PARAMS];
    struct broker_err e;
    const char *code; /* the error's code; NULL: from e.kind */
    cJSON *err_extra; /* fields merged into the error object (a timeout's partial output) */
    size_t raw_bytes; /* what an uncapped answer would have held (context_budget_stats) */
    bool raw_set;
};

typedef cJSON *(*kward_fn)(struct call *c);

struct kward_tool {
    struct tool_spec spec; /* first: tool_params_list / tool_params_find */
    kward_fn fn;
};

/* ---- errors (common.c) ---------------------------------------------------------------------- */

/* Records the error in C and returns NULL, the tools' failed answer. */
__attribute__((format(printf, 5, 6))) cJSON *kward_fail(struct call *c, const char *code,
                                                        enum broker_kind kind, const char *field,
                                                        const char *fmt, ...);
cJSON *kward_oom(struct call *c);
/* {error: "Error: ...", code, field?} of the error C holds. */
cJSON *kward_error_json(struct call *c);

/* ---- arguments (common.c) ------------------------------------------------------------------- */

const char *kward_arg_str(const struct call *c, size_t i, const char *dflt);
bool kward_arg_int(const struct call *c, size_t i, long long *out);
int kward_parse_args(struct call *c, const cJSON *args);

/* ---- text helpers (common.c) ---------------------------------------------------------------- */

struct sbuf {
    char *s;
    size_t len, cap;
    bool oom;
};

void kward_sb_put(struct sbuf *b, const char *s, size_t n);
void kward_sb_str(struct sbuf *b, const char *s);
__attribute__((format(printf, 2, 3))) void kward_sb_printf(struct sbuf *b, const char *fmt, ...);

/* Line starts of a text: start[i] for i < n, start[n] = len. A final newline ends the last line
 * rather than starting an empty one. */
struct lines {
    const char *s;
    size_t len, n;
    size_t *start;
};

int kward_lines_split(struct lines *l, const char *s, size_t len);
size_t kward_line_bytes(const struct lines *l, size_t i);
char *kward_shown_path(struct call *c, const char *path);
cJSON *kward_result_new(struct call *c, const char *output);
size_t kward_cap_file(const struct tool_ctx *ctx);
int kward_load_text(struct call *c, const char *path, const char *shown, struct broker_read_result *r);

/* ---- session state: context budget counters (common.c) -------------------------------------- */

enum { T_LIST, T_READ, T_SUMMARIZE, T_CONTEXT, T_STATS, T_WRITE, T_EDIT, T_SHELL, T_COUNT };

struct budget {
    uint64_t calls[T_COUNT], original[T_COUNT], returned[T_COUNT];
};

/* The session slot's constructor and destructor: the slot's key (tools/session.h). */
void *kward_budget_make(void);
void kward_budget_drop(void *p);
void kward_budget_note(struct tool_ctx *ctx, size_t tool, size_t original, size_t returned);

/* ---- the tools and their parameter tables ---------------------------------------------------- */

/* read.c */
extern const struct tool_param kward_list_params[1];
extern const struct tool_param kward_read_params[5];
extern const struct tool_param kward_summarize_params[1];
cJSON *kward_list_directory(struct call *c);
cJSON *kward_read_file(struct call *c);
cJSON *kward_summarize_file_structure(struct call *c);
/* The outline text of a file, the seed's summarize_file_structure answer (context.c uses it). */
char *kward_structure_text(struct call *c, const char *shown, const char *text, size_t len,
                           size_t n_lines, struct kward_outline *ol, bool *has);

/* context.c */
extern const struct tool_param kward_context_params[3];
cJSON *kward_context_for_task(struct call *c);
cJSON *kward_context_budget_stats(struct call *c);

/* edit.c; the gate reads the path argument too (kward.c) */
enum { WRITE_PATH, WRITE_CONTENT };
enum { EDIT_PATH, EDIT_EDITS };
extern const struct tool_param kward_write_params[2];
extern const struct tool_param kward_edit_params[2];
cJSON *kward_write_file(struct call *c);
cJSON *kward_edit_file(struct call *c);

/* shell.c */
extern const struct tool_param kward_shell_params[2];
cJSON *kward_run_shell_command(struct call *c);

#endif
