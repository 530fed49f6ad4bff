/* tools/broker/broker.h: the broker operations every tool surface maps onto (file, search, command),
 * performed by the supervisor for an agent, every path resolved beneath ctx->root_fd by the kernel
 * (openat2 RESOLVE_BENEATH). Surface-neutral: results are plain C structs and failures a
 * broker_err whose kind each surface spells in its own seed's codes (WAP: FILE_NOT_FOUND, ...).
 * Every function is thread-safe: no globals, no chdir, no umask. */
#ifndef CORRAL_BROKER_H
#define CORRAL_BROKER_H

#include "tools/tool.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* What went wrong, independent of any surface's spelling. */
enum broker_kind {
    BROKER_OK = 0,
    BROKER_E_NOT_FOUND,   /* no such file or directory (inside the workspace) */
    BROKER_E_DENIED,      /* leaves the workspace, through a link, hard link, read-only, role */
    BROKER_E_TOO_LARGE,   /* a size or count limit */
    BROKER_E_INVALID,     /* a bad argument (field names it) */
    BROKER_E_IS_DIR,      /* a file was wanted */
    BROKER_E_NOT_DIR,     /* a directory was wanted */
    BROKER_E_NOT_REGULAR, /* a fifo, socket or device */
    BROKER_E_EXISTS,      /* create mode and the file exists */
    BROKER_E_BINARY,      /* NUL bytes or invalid UTF-8 where text was wanted */
    BROKER_E_NO_MATCH,    /* an edit's pattern or text was not found */
    BROKER_E_NOT_UNIQUE,  /* an exact edit's text was found more than once */
    BROKER_E_PATTERN,     /* a regex or glob that does not compile */
    BROKER_E_REGEX_LIMIT, /* a regex hit its backtracking limit (catastrophic pattern) */
    BROKER_E_EXEC,        /* a command could not be run */
    BROKER_E_TIMEOUT,     /* a command ran out of time */
    BROKER_E_IO,          /* the file system failed (EIO, ...) */
};

struct broker_err {
    enum broker_kind kind;
    char field[64]; /* the argument at fault ("path", "operations[1].startLine"), or "" */
    char msg[512];  /* one line for a person: what, why, the fix; never a host path */
    int sys_errno;  /* the errno behind it, 0 if none */
};

/* Sets e and returns -1, so `return broker_fail(e, ...)` reads well. FIELD may be NULL. */
int broker_fail(struct broker_err *e, enum broker_kind kind, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The stable snake_case name of a kind ("not_found", "binary_file", ...), for error details. */
const char *broker_kind_name(enum broker_kind kind);

/* ---- paths (path.c) ------------------------------------------------------------------ */

/* An agent's path cleaned lexically: "", "." and "/" are the root; a leading '/' means the
 * workspace root (seed paths are workspace-relative); "." and empty segments dropped; ".." pops
 * a segment and fails (BROKER_E_DENIED) when it would leave the root. *rel gets "a/b" ("" for the
 * root), malloc'd. The kernel still resolves the result beneath the root fd: this cleaning only
 * fixes the name the agent is shown, it is not the containment. */
int broker_path_clean(const char *path, const char *field, char **rel, struct broker_err *e);
/* "/" + rel: the form every response shows. malloc'd; NULL on ENOMEM. */
char *broker_path_display(const char *rel);

/* openat2(dirfd, rel, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | extra_resolve) with errno
 * mapped to a broker_err naming FIELD and the display path. rel "" opens dirfd itself ("."). */
int broker_openat(int dirfd, const char *rel, int flags, mode_t mode, uint64_t extra_resolve,
                  const char *field, struct broker_err *e);
/* The parent directory of rel (which must not be the root) as an O_DIRECTORY fd, and the last
 * segment in *leaf (points into rel). With mkdirs, missing parents are made one mkdirat at a
 * time beneath the root, never following a symlink. */
int broker_open_parent(const struct tool_ctx *ctx, const char *rel, bool mkdirs, const char *field,
                       const char **leaf, struct broker_err *e);

/* Text checks shared by the operations. */
bool broker_utf8_valid(const char *s, size_t len);
/* A copy of s[0..len) that is valid UTF-8 (bad bytes become U+FFFD), NUL-terminated, at most
 * max_bytes long (cut at a character boundary; 0: no cap). *out_len may be NULL. */
char *broker_utf8_sanitize(const char *s, size_t len, size_t max_bytes, size_t *out_len);
/* Longest prefix of s[0..len) not longer than max that ends at a character boundary. */
size_t broker_utf8_cut(const char *s, size_t len, size_t max);
/* "2026-01-31T12:00:00.000Z" (JavaScript's toISOString) into buf[32]. */
void broker_iso_time(const struct timespec *t, char buf[32]);

/* The exclusion patterns in force: the ctx's (or the seed's defaults when it sets none). */
void broker_default_excludes(const struct tool_ctx *ctx, const char *const **v, size_t *n);

/* A compiled set of exclusion patterns. A pattern without '/' matches an entry's name at any
 * depth; one with a '/' matches its workspace-relative path (so "/build" is the root's only). The common "**" + "/NAME/" +
 * "**" form is kept as a plain name compare, so walks stay fast. */
struct broker_filter;
/* FIELD names the argument for errors ("excludePatterns"). n == 0 gives an empty filter. */
int broker_filter_new(const char *const *pat, size_t n, const char *field, struct broker_filter **out,
                      struct broker_err *e);
void broker_filter_free(struct broker_filter *f);
/* Is the entry at REL ("a/b.c", NAME its last segment) excluded? Only the patterns that are
 * not plain names are tried here: a walk calls broker_filter_prunes on every directory first. */
bool broker_filter_excludes(const struct broker_filter *f, const char *rel, const char *name);
/* Is everything beneath directory REL excluded? With whole_path, every segment of REL is
 * checked against the plain-name patterns (for a walk's start); otherwise only NAME. */
bool broker_filter_prunes(const struct broker_filter *f, const char *rel, const char *name,
                          bool whole_path);

/* A directory's entries, read with getdents64 straight from an fd (no DIR stream, no per-name
 * allocation) and sorted bytewise by name, for the walks of explore and search. */
struct broker_dirent {
    size_t name;        /* offset of the NUL-terminated name in pool */
    unsigned char type; /* DT_* from the kernel (DT_UNKNOWN on some file systems) */
};
struct broker_dirents {
    struct broker_dirent *v;
    size_t n, cap;
    char *pool;
    size_t pool_len, pool_cap;
};
/* Reads every entry but "." and ".." of the readable directory fd (freshly opened: read from
 * where it stands; not consumed) into d, replacing what it held. 0 or -errno. */
int broker_dirents_read(struct broker_dirents *d, int fd);
static inline const char *broker_dirent_name(const struct broker_dirents *d, size_t i)
{
    return d->pool + d->v[i].name;
}
void broker_dirents_free(struct broker_dirents *d);

/* ---- file operations (file.c) -------------------------------------------------------- */

struct broker_meta {
    char *path; /* "/src/app.js"; owned */
    uint64_t size;
    bool is_dir;
    bool is_symlink;
    struct timespec mtime;
};
void broker_meta_clear(struct broker_meta *m);

int broker_info(const struct tool_ctx *ctx, const char *path, const char *field, struct broker_meta *out,
                struct broker_err *e);

struct broker_read_opts {
    uint64_t start_line; /* 1-based; 0: from the start */
    uint64_t end_line;   /* inclusive; 0: to the end */
    uint64_t max_bytes;  /* cap on the returned content; 0: ctx->limits.max_file_size */
    uint64_t max_scan;   /* a file larger than this is refused (BROKER_E_TOO_LARGE) before a
                          * byte is read: counting its lines would read all of it; 0: no cap */
};
struct broker_read_result {
    char *content; /* valid UTF-8, NUL-terminated; owned */
    size_t len;
    struct broker_meta meta;
    bool truncated; /* the cap cut the content short */
    uint64_t total_lines, returned_lines;
};
void broker_read_result_clear(struct broker_read_result *r);
/* Text read of a regular file. BROKER_E_BINARY for NUL bytes in the first 8 KiB or invalid
 * UTF-8 in what would be returned; BROKER_E_DENIED for a file with other hard links. */
int broker_read(const struct tool_ctx *ctx, const char *path, const struct broker_read_opts *o,
                struct broker_read_result *r, struct broker_err *e);

enum broker_write_mode { BROKER_WRITE_OVERWRITE = 0, BROKER_WRITE_CREATE, BROKER_WRITE_APPEND };
struct broker_write_opts {
    enum broker_write_mode mode;
    bool create_dirs;
};
/* Atomic: a temp file beside the target, then renameat (RENAME_NOREPLACE for create). Mode,
 * owner and group of an existing file are kept; a new file gets 0644 and the owner of its
 * directory. *display (may be NULL) gets the "/a/b" path; *written the bytes of data written. */
int broker_write(const struct tool_ctx *ctx, const char *path, const char *data, size_t len,
                 const struct broker_write_opts *o, char **display, size_t *written,
                 struct broker_err *e);

enum broker_edit_kind {
    BROKER_EDIT_REPLACE_LINES, /* start..end replaced by text */
    BROKER_EDIT_INSERT_LINES,  /* text inserted after line `after` (0: at the top) */
    BROKER_EDIT_DELETE_LINES,  /* start..end removed */
    BROKER_EDIT_REGEX,         /* pattern -> replacement ($1, $&, $<name>, $$), flags */
    BROKER_EDIT_EXACT,         /* text `pattern` found exactly once -> replacement */
};
struct broker_edit {
    enum broker_edit_kind kind;
    uint64_t start, end, after;
    const char *text;    /* lines: the new content */
    const char *pattern; /* regex or exact text */
    const char *replacement;
    const char *flags; /* regex: JavaScript-style "gimsu"; NULL: none */
};
/* Applies every edit in order (each sees the result of the ones before) to the file in memory,
 * then writes the result atomically: all or none. Errors name "operations[i].field". */
int broker_modify(const struct tool_ctx *ctx, const char *path, const struct broker_edit *ops,
                  size_t n_ops, char **display, struct broker_err *e);

/* Removes a file (or a symlink, as itself) or, with directory, an empty directory. */
int broker_remove(const struct tool_ctx *ctx, const char *path, bool directory, struct broker_err *e);
/* Makes a directory beneath the root (with parents, the missing ones too, and an existing
 * directory is fine). New directories get mode 0755 and their parent's owner. */
int broker_mkdir(const struct tool_ctx *ctx, const char *path, bool parents, struct broker_err *e);

struct broker_walk_opts {
    bool recursive;
    unsigned max_depth;         /* levels below the start when recursive (1: its entries) */
    const char *const *exclude; /* patterns (see broker_filter_new) */
    size_t n_exclude;
    bool want_meta;           /* fill size and mtime */
    size_t max_entries;       /* entries returned; the count goes on (total) */
    const char *include_glob; /* only entries whose path below the start matches it are
                                  * listed and counted (file.list); NULL: all */
    bool files_only;          /* directories are walked, not listed */
};
struct broker_list {
    struct broker_meta *v;
    size_t n, cap;
    uint64_t total;
    bool truncated;
};
void broker_list_clear(struct broker_list *l);
/* Lists directory PATH (pre-order, names sorted bytewise), walking by fds; symlinks are listed
 * and never followed. */
int broker_explore(const struct tool_ctx *ctx, const char *path, const struct broker_walk_opts *o,
                   struct broker_list *out, struct broker_err *e);

/* ---- search (search.c) --------------------------------------------------------------- */

struct broker_search_opts {
    const char *const *paths; /* files or directories; NULL/0: the root */
    size_t n_paths;
    const char *query;
    bool literal;
    bool ignore_case;
    bool recursive;
    const char *const *exclude;
    size_t n_exclude;
    const char *include_glob; /* only files matching it (file.search); NULL: all */
    unsigned context;         /* lines before and after */
    size_t max_results;       /* matches returned; counting goes on (total) */
    size_t max_line_bytes;    /* each returned line cut to this; 0: 4096 */
    size_t max_bytes;         /* text of all returned matches and context; 0: 4 MiB */
};
struct broker_match {
    char *path;    /* "/src/app.js" */
    uint64_t line; /* 1-based */
    char *text;    /* the matching line, without its newline, valid UTF-8 */
    char **before, **after;
    size_t n_before, n_after;
    size_t bytes; /* of text, before and after together */
};
struct broker_search_result {
    struct broker_match *v;
    size_t n, cap;
    uint64_t total; /* matching lines over everything searched */
    bool truncated; /* fewer matches returned than found (max_results or max_bytes) */
    size_t bytes;
    uint64_t files_searched;
};
void broker_search_result_clear(struct broker_search_result *r);
/* Line-oriented search (a match never spans lines), one result per matching line. Skips
 * binary files (NUL in the first 8 KiB), symlinks and files with other hard links. */
int broker_search(const struct tool_ctx *ctx, const struct broker_search_opts *o,
                  struct broker_search_result *r, struct broker_err *e);

/* PCRE2 helpers shared with modifyFile. Compile flags from JavaScript-style letters. */
struct broker_regex;
int broker_regex_new(const char *pattern, bool literal, const char *flags, const char *field,
                     struct broker_regex **out, bool *global, struct broker_err *e);
void broker_regex_free(struct broker_regex *re);
/* Replaces in subject; *out malloc'd. BROKER_E_NO_MATCH when nothing matched, TOO_LARGE when
 * the result would pass max_len (checked before allocating it). */
int broker_regex_substitute(struct broker_regex *re, const char *subject, size_t len,
                            const char *replacement, bool global, size_t max_len, const char *field,
                            char **out, size_t *out_len, struct broker_err *e);

/* ---- commands (command.c) ------------------------------------------------------------ */

struct broker_command_opts {
    const char *command;    /* run as sh -c COMMAND */
    const char *workdir;    /* workspace path; NULL: the root */
    double timeout_sec;     /* 0: ctx default; capped at ctx->limits.command_timeout_max */
    const char *const *env; /* "KEY=VALUE" on top of the base environment */
    size_t n_env;
    double kill_grace_sec; /* SIGTERM to SIGKILL on timeout; 0: 2 s */
    const char *input;     /* the command's stdin (NULL: /dev/null) */
    size_t input_len;
};
struct broker_command_result {
    char *out, *err; /* valid UTF-8, NUL-terminated (a NUL byte of the output is
                                * U+FFFD, so nothing after it is lost); owned */
    size_t out_len, err_len;
    int exit_code;  /* 128+N when killed by signal N */
    bool truncated; /* stdout + stderr passed limits.max_output_bytes: the command was
                                * stopped there (SIGKILL), its output so far kept */
    bool timed_out;
    bool cancelled; /* the caller cancelled the call (ctx->call): killed at once */
    uint64_t duration_ms;
};
void broker_command_result_clear(struct broker_command_result *r);
/* Runs the command in a command sandbox (ctx->command_profile, or sandbox_profile_default
 * when it is NULL, + the workspace writable at /workspace, cwd /workspace/WORKDIR). Returns 0 when it ran, whatever its status (killed for
 * time: r->timed_out, the output so far kept), -1 with e set when it could not run. */
int broker_command(const struct tool_ctx *ctx, const struct broker_command_opts *o,
                   struct broker_command_result *r, struct broker_err *e);

#endif
