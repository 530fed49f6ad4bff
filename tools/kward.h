/* tools/kward.h: the parts of the Kward workspace surface (seed 004, tools/kward.c) that stand
 * alone and are tested alone: the line-pattern source outliner and the bounded unified diff. */
#ifndef CORRAL_KWARD_H
#define CORRAL_KWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The seed's limits. The policy may narrow the file and output caps, never widen them. */
#define KWARD_MAX_FILE_BYTES (256u * 1024)    /* larger files are neither read nor edited */
#define KWARD_READ_OUTPUT_BYTES (50u * 1024)  /* a read answer's cap ... */
#define KWARD_READ_OUTPUT_LINES 2000u         /* ... whichever comes first */
#define KWARD_PREVIEW_LINES 120u              /* mode "preview" and the large-file answer */
#define KWARD_OUTLINE_ENTRIES 80u
#define KWARD_COMMAND_OUTPUT_BYTES (128u * 1024)
#define KWARD_DIFF_BYTES (8u * 1024)
#define KWARD_KILL_GRACE_SEC 0.2              /* SIGTERM, then SIGKILL this much later */

/* ---- outlines (kward_outline.c) ------------------------------------------------------------- */

struct kward_outline_entry {
    uint32_t line, end_line; /* 1-based, inclusive; end_line == line for a one-line entry */
    unsigned indent;         /* columns of leading white space (a tab counts 4) */
    const char *kind;        /* "class", "function", "method", ... (static) */
    char *signature;         /* the declaration line without its indentation, at most 200 bytes */
};

struct kward_outline {
    struct kward_outline_entry *v;
    size_t n;      /* entries kept: the first `max` declarations of the file */
    size_t total;  /* declarations found */
};

/* The language of a file by its name ("ruby", "javascript", "typescript", "go", "rust", "java",
 * "csharp", "c", "python"), or NULL when no outliner knows it. */
const char *kward_language(const char *path);
/* The declarations of TEXT (LEN bytes, UTF-8) in LANGUAGE, first MAX of them kept. Each line is
 * tried against the language's PCRE2 patterns, with match limits, so no line can make it spin.
 * 0, or -ENOMEM. An unknown language gives an empty outline. */
int kward_outline_build(const char *language, const char *text, size_t len, size_t max,
                        struct kward_outline *out);
void kward_outline_clear(struct kward_outline *o);
/* The seed's text of an outline, one entry a line:
 *   "line 3: class Foo (range 3-20, class)" / "line 9:   def bar (method)"
 * malloc'd, "" for an empty outline; NULL on ENOMEM. */
char *kward_outline_render(const struct kward_outline *o);

/* ---- unified diffs (kward_diff.c) ----------------------------------------------------------- */

/* Past this many differences (or this much work) the diff stops looking for the shortest edit
 * script and shows the changed middle as one hunk: still a correct diff, only not minimal. */
#define KWARD_DIFF_MAX_D 1024
#define KWARD_DIFF_MAX_WORK (32u << 20)

struct kward_diff_stats {
    size_t additions, deletions;
    bool minimal; /* false: the bounded fallback was used */
};
/* A unified diff (3 lines of context, "--- LABEL" / "+++ LABEL" headers) from A to B, malloc'd
 * in *out ("" when they are equal). 0 or -ENOMEM. */
int kward_diff(const char *label, const char *a, size_t alen, const char *b, size_t blen,
               char **out, size_t *out_len, struct kward_diff_stats *st);
/* DIFF cut to CAP bytes at a line end, with the seed's summary line when cut:
 *   "... diff truncated to 8192 bytes; full diff stats: +A|-D. Use read_file to inspect current content."
 * malloc'd; NULL on ENOMEM. *cut (may be NULL) says whether it was cut. */
char *kward_diff_cap(const char *diff, size_t len, size_t cap, const struct kward_diff_stats *st,
                     bool *cut);

#endif
