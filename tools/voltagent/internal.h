/* tools/voltagent/internal.h: what the filesystem and sandbox toolkits (filesystem.c, sandbox.c)
 * and the surface (voltagent.c) share, and nothing outside tools/voltagent/ includes: a tool's
 * table entry, its checked arguments, the growing text of an answer, the error results
 * (common.c), and each tool with its parameter table, which the surface lists. */
#ifndef CORRAL_VOLTAGENT_INTERNAL_H
#define CORRAL_VOLTAGENT_INTERNAL_H

#include "tools/broker/broker.h"
#include "tools/params.h"

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- arguments (common.c) ------------------------------------------------------------------- */

/* Upstream's zod schemas, as tool_param tables: integers are coerced from strings as
 * z.coerce.number does, and "glob" of grep is nullable. */
#define MAX_INT TOOL_PARAMS_JSON_MAX
#define MAX_ARGS 1000.0 /* execute_command's args */
#define MAX_ENV 256.0   /* execute_command's env */

#define MAX_PARAMS 8
struct args {
    const cJSON *v[MAX_PARAMS];
    double n[MAX_PARAMS]; /* TOOL_PARAM_INT_TEXT values (coerced, as z.coerce.number does) */
};

struct volt_tool;
typedef cJSON *(*volt_fn)(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                          bool *is_error);

struct volt_tool {
    struct tool_spec spec; /* first: tool_params_list / tool_params_find */
    volt_fn fn;
    bool writes; /* upstream's READ_ONLY_BLOCKED_TOOLS: hidden and refused in read-only mode */
};

const char *voltagent_arg_str(const struct args *a, size_t i, const char *dflt);
bool voltagent_arg_bool(const struct args *a, size_t i, bool dflt);
uint64_t voltagent_arg_u64(const struct args *a, size_t i, uint64_t dflt);
int voltagent_parse_args(const struct volt_tool *t, const cJSON *args, struct args *a,
                         struct broker_err *e);

/* ---- result building (common.c) ------------------------------------------------------------- */

/* Upstream's truncation marker (filesystem/utils.ts). */
extern const char voltagent_truncation_guidance[];
/* Upstream's cap on a tool's text (TOOL_RESULT_TOKEN_LIMIT * 4 characters). */
#define MAX_TEXT 80000

/* A growing text buffer; on ENOMEM it goes "failed" and every later append is a no-op. */
struct text {
    char *s;
    size_t len, cap;
    bool failed;
};

void voltagent_text_add(struct text *t, const char *s, size_t n);
__attribute__((format(printf, 2, 3))) void voltagent_text_printf(struct text *t, const char *fmt, ...);
void voltagent_text_str(struct text *t, const char *s);
bool voltagent_text_cap(struct text *t);
cJSON *voltagent_output_result(struct text *t);
void voltagent_echo(char *buf, size_t size, const char *s);
cJSON *voltagent_fail_broker(const struct broker_err *e, bool *is_error);
__attribute__((format(printf, 3, 4))) cJSON *voltagent_fail_text(bool *is_error, const char *code,
                                                                 const char *fmt, ...);
cJSON *voltagent_fail_path(cJSON *err, bool *is_error);

/* ---- the filesystem toolkit (filesystem.c) -------------------------------------------------- */

struct link_text {
    const char *pre, *post; /* upstream's message: PRE + path + POST */
};
extern const struct link_text voltagent_symlink_text;
cJSON *voltagent_no_symlink(struct tool_ctx *ctx, const char *path, const char *field,
                            const struct link_text *msg, bool *is_error);

extern const struct tool_param voltagent_ls_params[1];
extern const struct tool_param voltagent_stat_params[1];
extern const struct tool_param voltagent_read_params[3];
extern const struct tool_param voltagent_write_params[4];
extern const struct tool_param voltagent_edit_params[4];
extern const struct tool_param voltagent_delete_params[2];
extern const struct tool_param voltagent_mkdir_params[2];
extern const struct tool_param voltagent_rmdir_params[2];
extern const struct tool_param voltagent_tree_params[2];
extern const struct tool_param voltagent_glob_params[2];
extern const struct tool_param voltagent_grep_params[3];
cJSON *voltagent_ls(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                    bool *is_error);
cJSON *voltagent_stat(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                      bool *is_error);
cJSON *voltagent_read_file(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                           bool *is_error);
cJSON *voltagent_write_file(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                            bool *is_error);
cJSON *voltagent_edit_file(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                           bool *is_error);
cJSON *voltagent_delete_file(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                             bool *is_error);
cJSON *voltagent_mkdir(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                       bool *is_error);
cJSON *voltagent_rmdir(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                       bool *is_error);
/* list_tree and list_files, one tool under two names. */
cJSON *voltagent_list_tree(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                           bool *is_error);
cJSON *voltagent_glob(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                      bool *is_error);
cJSON *voltagent_grep(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                      bool *is_error);

/* ---- the sandbox toolkit (sandbox.c) -------------------------------------------------------- */

extern const struct tool_param voltagent_exec_params[8];
cJSON *voltagent_execute_command(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                                 bool *is_error);

#endif
