/* tools/kward/kward.h: the parts of the Kward workspace surface (seed 004, tools/kward/kward.c) that stand
 * alone and are tested alone: outlines (universal-ctags) and unified diffs (GNU diff), each run
 * in a command sandbox, and the in-process parsing of what those tools print. */
#ifndef CORRAL_KWARD_H
#define CORRAL_KWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The seed's limits. The policy may narrow the file and output caps, never widen them. */
#define KWARD_MAX_FILE_BYTES (256u * 1024)   /* larger files are neither read nor edited */
#define KWARD_READ_OUTPUT_BYTES (50u * 1024) /* a read answer's cap ... */
#define KWARD_READ_OUTPUT_LINES 2000u        /* ... whichever comes first */
#define KWARD_PREVIEW_LINES 120u             /* mode "preview" and the large-file answer */
#define KWARD_OUTLINE_ENTRIES 80u
#define KWARD_COMMAND_OUTPUT_BYTES (128u * 1024)
#define KWARD_DIFF_BYTES (8u * 1024)
#define KWARD_KILL_GRACE_SEC 0.2 /* SIGTERM, then SIGKILL this much later */

/* ---- outlines (outline.c) ------------------------------------------------------------- */

/* Outlines come from universal-ctags (Debian package universal-ctags), a maintained parser per
 * language, not from patterns of our own. ctags parses untrusted workspace bytes, so it never
 * runs in the supervisor: each outline is one command sandbox (broker_command, the workspace
 * read-only, no network), the text on its stdin, its JSON lines parsed here as untrusted. Cost:
 * one sandbox start per outline (see docs/protocol-kward.md for the measured figures). */

struct kward_outline_entry {
    uint32_t line, end_line; /* 1-based, inclusive; end_line == line for a one-line entry */
    unsigned indent;         /* columns of leading white space (a tab counts 4) */
    const char *kind;        /* "class", "function", "method", ... (static) */
    char *signature;         /* the declaration line without its indentation, at most 200 bytes */
};

struct kward_outline {
    struct kward_outline_entry *v;
    size_t n;     /* entries kept: the first `max` declarations of the file */
    size_t total; /* declarations found */
};

struct tool_ctx;
struct broker_err;

/* The language of a file by its name ("ruby", "javascript", "typescript", "go", "rust", "java",
 * "csharp", "c", "python"), or NULL when no outliner knows it. */
const char *kward_language(const char *path);
/* The declarations of TEXT (LEN bytes, UTF-8) in LANGUAGE, first MAX of them kept: ctags run on
 * the text in a command sandbox (the role's command profile when it may run commands, else the
 * sandbox module's default one; the policy's choice, not the agent's). An unknown language gives
 * an empty outline without running anything. 0, or -1 with E set (ctags missing: the message
 * names the package; it failed or ran out of time). */
int kward_outline_build(const struct tool_ctx *ctx, const char *language, const char *text, size_t len,
                        size_t max, struct kward_outline *out, struct broker_err *e);
/* The in-process half, exposed for tests and the fuzzer: TAGS (TAGS_LEN bytes, ctags'
 * --output-format=json lines, untrusted) mapped onto the seed's declaration kinds, the entries
 * sorted by line, one per line, their signature and indentation taken from TEXT, a missing end
 * line filled in from the next entry at the same or a lesser indentation. Lines past
 * KWARD_TAGS_MAX_LINES or longer than KWARD_TAGS_MAX_LINE bytes are ignored. 0 or -ENOMEM. */
#define KWARD_TAGS_MAX_LINES 200000u
#define KWARD_TAGS_MAX_LINE 4096u
int kward_outline_from_tags(const char *language, const char *tags, size_t tags_len, const char *text,
                            size_t len, size_t max, struct kward_outline *out);
void kward_outline_clear(struct kward_outline *o);
/* The seed's text of an outline, one entry a line:
 *   "line 3: class Foo (range 3-20, class)" / "line 9:   def bar (method)"
 * malloc'd, "" for an empty outline; NULL on ENOMEM. */
char *kward_outline_render(const struct kward_outline *o);

/* ---- the tools' runs (outline.c) ----------------------------------------------------- */

/* Runs the fixed shell COMMAND (ours, never the agent's) in a command sandbox as the policy
 * allows: the role's command profile when the role may run commands, else the sandbox module's
 * default one; the workspace bound read-only whatever the role; INPUT on stdin; ENV entries
 * "KEY=VALUE" added; up to KWARD_TOOL_OUTPUT_BYTES of output kept. A command that exits 127
 * (the tool is not installed) fails with a message naming PACKAGE. 0 with *r set (the caller
 * reads r->exit_code), or -1 with E set. */
#define KWARD_TOOL_OUTPUT_BYTES (8u << 20)
#define KWARD_TOOL_TIMEOUT_SEC 10.0
struct broker_command_result;
int kward_tool_run(const struct tool_ctx *ctx, const char *what, const char *package,
                   const char *command, const char *const *env, size_t n_env, const char *input,
                   size_t input_len, struct broker_command_result *r, struct broker_err *e);

/* ---- unified diffs (diff.c) ----------------------------------------------------------- */

/* Diffs come from GNU diff (Debian package diffutils): `diff -u` in a command sandbox, both
 * texts on its stdin (written to the sandbox's /tmp), so a diff is computed before the write is
 * committed, from exactly the text the supervisor read. Cost: one sandbox start per write or
 * edit. */

struct kward_diff_stats {
    size_t additions, deletions;
};
/* A unified diff (3 lines of context, "--- a/REL" / "+++ b/REL" headers; "--- /dev/null" when
 * OLD is NULL: a new file) from OLD (OLD_LEN bytes) to NEW (LEN bytes), malloc'd in *out (""
 * when they are equal), with its counts. 0, or -1 with E set (diff missing: the message names
 * the package; it failed, ran out of time, or printed more than the supervisor keeps). */
int kward_diff(const struct tool_ctx *ctx, const char *rel, const char *old, size_t old_len,
               const char *new_text, size_t len, char **out, size_t *out_len,
               struct kward_diff_stats *st, struct broker_err *e);
/* The in-process half: the additions and deletions of a unified diff's text (untrusted: GNU
 * diff's output, which echoes workspace lines), counted from its hunks' '+' and '-' lines and
 * checked against the hunk headers' counts. 0, or -EINVAL when it is not a unified diff. */
int kward_diff_count(const char *diff, size_t len, struct kward_diff_stats *st);
/* DIFF cut to CAP bytes at a line end, with the seed's summary line when cut:
 *   "... diff truncated to 8192 bytes; full diff stats: +A|-D. Use read_file to inspect current content."
 * malloc'd; NULL on ENOMEM. *cut (may be NULL) says whether it was cut. */
char *kward_diff_cap(const char *diff, size_t len, size_t cap, const struct kward_diff_stats *st,
                     bool *cut);

#endif
