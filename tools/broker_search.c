/* tools/broker_search.c: content search over workspace files (PCRE2 with JIT, regex or
 * literal), line-oriented like grep and ripgrep, walking directories by fds; plus the regex
 * compile and substitute helpers that modifyFile shares. Every regex runs under match and depth
 * limits, so a catastrophic pattern ends in a clear error instead of a hang. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tools/broker.h"
#include "tools/glob.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pcre2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Backtracking budget of one pcre2_match call, and its depth / heap bounds. Generous for real
 * patterns (one call scans one whole file), small enough that (a+)+$ on a long line stops in
 * well under a second. */
#define REGEX_MATCH_LIMIT 20000000u
#define REGEX_DEPTH_LIMIT 100000u
#define REGEX_HEAP_LIMIT_KIB (64u * 1024u)
#define REGEX_MAX_PATTERN 65536
#define SEARCH_MAX_NEST 128      /* directory levels a recursive search enters */
#define SEARCH_LINE_BYTES 4096   /* default cap of each returned line */

struct broker_regex {
    pcre2_code *code;
    pcre2_match_context *mctx;
    pcre2_jit_stack *jit_stack;
    pcre2_match_data *md;
};

void broker_regex_free(struct broker_regex *re)
{
    if (!re)
        return;
    pcre2_match_data_free(re->md);
    pcre2_match_context_free(re->mctx);
    pcre2_jit_stack_free(re->jit_stack);
    pcre2_code_free(re->code);
    free(re);
}

static int regex_compile(const char *pattern, uint32_t opts, const char *field,
                         struct broker_regex **out, struct broker_err *e)
{
    *out = NULL;
    size_t plen = strnlen(pattern, REGEX_MAX_PATTERN + 1);
    if (plen > REGEX_MAX_PATTERN)
        return broker_fail(e, BROKER_E_INVALID, field, "%s is longer than %d bytes", field,
                           REGEX_MAX_PATTERN);
    struct broker_regex *re = calloc(1, sizeof(*re));
    if (!re)
        return broker_fail(e, BROKER_E_IO, field, "out of memory");
    int errcode;
    PCRE2_SIZE erroff;
    pcre2_compile_context *cctx = pcre2_compile_context_create(NULL);
    if (cctx && !(opts & PCRE2_LITERAL))
        pcre2_set_compile_extra_options(cctx, PCRE2_EXTRA_ALT_BSUX);
    re->code = pcre2_compile((PCRE2_SPTR)pattern, plen, opts, &errcode, &erroff, cctx);
    pcre2_compile_context_free(cctx);
    if (!re->code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(errcode, msg, sizeof(msg));
        broker_regex_free(re);
        return broker_fail(e, BROKER_E_PATTERN, field, "%s does not compile at offset %zu: %s",
                           field, (size_t)erroff, (const char *)msg);
    }
    /* JIT when the platform has it; the interpreter (same limits) otherwise. */
    if (pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE) == 0)
        re->jit_stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, NULL);
    re->mctx = pcre2_match_context_create(NULL);
    re->md = pcre2_match_data_create_from_pattern(re->code, NULL);
    if (!re->mctx || !re->md) {
        broker_regex_free(re);
        return broker_fail(e, BROKER_E_IO, field, "out of memory");
    }
    pcre2_set_match_limit(re->mctx, REGEX_MATCH_LIMIT);
    pcre2_set_depth_limit(re->mctx, REGEX_DEPTH_LIMIT);
    pcre2_set_heap_limit(re->mctx, REGEX_HEAP_LIMIT_KIB);
    if (re->jit_stack)
        pcre2_jit_stack_assign(re->mctx, NULL, re->jit_stack);
    *out = re;
    return 0;
}

int broker_regex_new(const char *pattern, bool literal, const char *flags, const char *field,
                     struct broker_regex **out, bool *global, struct broker_err *e)
{
    uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
    bool seen[128] = {false};
    bool multiline = false;
    *global = false;
    for (const char *f = flags ? flags : ""; *f; f++) {
        unsigned char c = (unsigned char)*f;
        if (c >= 128 || !strchr("gimsu", c) || seen[c])
            return broker_fail(e, BROKER_E_INVALID, "flags",
                               "flags \"%s\": each of g, i, m, s, u at most once", flags);
        seen[c] = true;
        switch (c) {
        case 'g': *global = true; break;
        case 'i': opts |= PCRE2_CASELESS; break;
        case 'm': multiline = true; break;
        case 's': opts |= PCRE2_DOTALL; break;
        case 'u': break; /* always Unicode */
        }
    }
    if (literal)
        opts |= PCRE2_LITERAL;
    else
        opts |= PCRE2_ALT_BSUX;
    /* JavaScript: without m, ^ and $ are the ends of the whole text only. */
    opts |= multiline ? PCRE2_MULTILINE : PCRE2_DOLLAR_ENDONLY;
    return regex_compile(pattern, opts, field, out, e);
}

static int match_error(int rc, const char *field, struct broker_err *e)
{
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
        rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT)
        return broker_fail(e, BROKER_E_REGEX_LIMIT, field,
                           "the pattern backtracks too much (catastrophic backtracking, e.g. nested quantifiers like (a+)+); simplify it");
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(rc, msg, sizeof(msg));
    return broker_fail(e, BROKER_E_PATTERN, field, "matching failed: %s", (const char *)msg);
}

/* JavaScript replacement syntax ($&, $1, $<name>, $$) to PCRE2's ($0, ${1}, ${name}, $$). */
static char *js_replacement(const char *r, const char *field, struct broker_err *e)
{
    size_t len = strlen(r);
    if (len > (SIZE_MAX - 1) / 4) {
        broker_fail(e, BROKER_E_TOO_LARGE, field, "replacement too long");
        return NULL;
    }
    char *out = malloc(len * 4 + 1);
    if (!out) {
        broker_fail(e, BROKER_E_IO, field, "out of memory");
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (r[i] != '$') {
            out[o++] = r[i];
            continue;
        }
        char c = r[i + 1];
        if (c == '$') {
            memcpy(out + o, "$$", 2), o += 2, i++;
        } else if (c == '&') {
            memcpy(out + o, "${0}", 4), o += 4, i++;
        } else if (c >= '0' && c <= '9') {
            size_t j = i + 1;
            while (j < i + 3 && r[j] >= '0' && r[j] <= '9')
                j++;
            out[o++] = '$';
            out[o++] = '{';
            memcpy(out + o, r + i + 1, j - i - 1);
            o += j - i - 1;
            out[o++] = '}';
            i = j - 1;
        } else if (c == '<' && strchr(r + i, '>')) {
            const char *end = strchr(r + i, '>');
            out[o++] = '$';
            out[o++] = '{';
            memcpy(out + o, r + i + 2, (size_t)(end - (r + i + 2)));
            o += (size_t)(end - (r + i + 2));
            out[o++] = '}';
            i = (size_t)(end - r);
        } else if (c == '`' || c == '\'') {
            free(out);
            broker_fail(e, BROKER_E_INVALID, "replacement",
                        "replacement uses $%c, which is not supported; use capture groups", c);
            return NULL;
        } else {
            memcpy(out + o, "$$", 2), o += 2; /* a lone '$' is literal in JavaScript */
        }
    }
    out[o] = '\0';
    return out;
}

int broker_regex_substitute(struct broker_regex *re, const char *subject, size_t len,
                            const char *replacement, bool global, const char *field, char **out,
                            size_t *out_len, struct broker_err *e)
{
    *out = NULL;
    _cleanup_free_ char *rep = js_replacement(replacement ? replacement : "", field, e);
    if (!rep)
        return -1;
    uint32_t opts = PCRE2_SUBSTITUTE_OVERFLOW_LENGTH | PCRE2_SUBSTITUTE_UNSET_EMPTY |
                    PCRE2_SUBSTITUTE_UNKNOWN_UNSET | (global ? PCRE2_SUBSTITUTE_GLOBAL : 0);
    /* First a match, so "nothing matched" and limit errors read clearly. */
    int rc = pcre2_match(re->code, (PCRE2_SPTR)subject, len, 0, 0, re->md, re->mctx);
    if (rc == PCRE2_ERROR_NOMATCH)
        return broker_fail(e, BROKER_E_NO_MATCH, field, "%s matched nothing in the file", field);
    if (rc < 0)
        return match_error(rc, field, e);
    PCRE2_SIZE cap = len + strlen(rep) + 64;
    for (int round = 0; round < 2; round++) {
        char *buf = malloc(cap + 1);
        if (!buf)
            return broker_fail(e, BROKER_E_IO, field, "out of memory");
        PCRE2_SIZE olen = cap + 1;
        rc = pcre2_substitute(re->code, (PCRE2_SPTR)subject, len, 0, opts, re->md, re->mctx,
                              (PCRE2_SPTR)rep, PCRE2_ZERO_TERMINATED, (PCRE2_UCHAR *)buf, &olen);
        if (rc >= 0) {
            buf[olen] = '\0';
            *out = buf;
            *out_len = olen;
            return 0;
        }
        free(buf);
        if (rc != PCRE2_ERROR_NOMEMORY)
            break;
        cap = olen; /* the length needed, thanks to OVERFLOW_LENGTH */
    }
    if (rc == PCRE2_ERROR_NOMEMORY)
        return broker_fail(e, BROKER_E_IO, field, "out of memory");
    if (rc == PCRE2_ERROR_BADREPESCAPE || rc == PCRE2_ERROR_BADREPLACEMENT ||
        rc == PCRE2_ERROR_BADSUBSTITUTION) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(rc, msg, sizeof(msg));
        return broker_fail(e, BROKER_E_INVALID, "replacement", "replacement: %s",
                           (const char *)msg);
    }
    return match_error(rc, field, e);
}

/* ---- search --------------------------------------------------------------------------------- */

void broker_search_result_clear(struct broker_search_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        struct broker_match *m = &r->v[i];
        free(m->path);
        free(m->text);
        for (size_t k = 0; k < m->n_before; k++)
            free(m->before[k]);
        for (size_t k = 0; k < m->n_after; k++)
            free(m->after[k]);
        free(m->before);
        free(m->after);
    }
    free(r->v);
    memset(r, 0, sizeof(*r));
}

struct search {
    const struct broker_search_opts *o;
    struct broker_regex *re;
    struct broker_filter *filter;
    struct glob *include;
    struct broker_search_result *r;
    struct broker_err *e;
    size_t line_bytes;
    char *buf; /* file contents, reused from file to file */
    size_t buf_cap;
};

/* Line [a, b) without its terminator, as a returned string. */
static char *line_copy(const struct search *s, const char *a, const char *b)
{
    if (b > a && b[-1] == '\n')
        b--;
    if (b > a && b[-1] == '\r')
        b--;
    return broker_utf8_sanitize(a, (size_t)(b - a), s->line_bytes, NULL);
}

static int add_match(struct search *s, const char *rel, const char *text, size_t len,
                     const char *ls, const char *le, uint64_t line)
{
    struct broker_search_result *r = s->r;
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 16;
        struct broker_match *tmp = realloc(r->v, nc * sizeof(*tmp));
        if (!tmp)
            return broker_fail(s->e, BROKER_E_IO, "query", "out of memory");
        r->v = tmp;
        r->cap = nc;
    }
    struct broker_match *m = &r->v[r->n];
    memset(m, 0, sizeof(*m));
    r->n++; /* counted now, so a failure below is freed by the clear */
    m->line = line;
    if (!(m->path = broker_path_display(rel)) || !(m->text = line_copy(s, ls, le)))
        return broker_fail(s->e, BROKER_E_IO, "query", "out of memory");
    unsigned ctx = s->o->context;
    if (!ctx)
        return 0;
    /* Lines before: walk back from the start of the match line. */
    const char *starts[256];
    size_t nb = 0;
    const char *p = ls;
    while (nb < ctx && p > text) {
        const char *q = p - 1; /* the '\n' ending the previous line */
        while (q > text && q[-1] != '\n')
            q--;
        starts[nb++] = q;
        p = q;
    }
    if (nb && !(m->before = calloc(nb, sizeof(char *))))
        return broker_fail(s->e, BROKER_E_IO, "query", "out of memory");
    for (size_t k = 0; k < nb; k++) {
        const char *a = starts[nb - 1 - k];
        const char *b = memchr(a, '\n', (size_t)(text + len - a));
        b = b ? b + 1 : text + len;
        if (!(m->before[k] = line_copy(s, a, b)))
            return broker_fail(s->e, BROKER_E_IO, "query", "out of memory");
        m->n_before++;
    }
    if (!(m->after = calloc(ctx, sizeof(char *))))
        return broker_fail(s->e, BROKER_E_IO, "query", "out of memory");
    p = le;
    while (m->n_after < ctx && p < text + len) {
        const char *b = memchr(p, '\n', (size_t)(text + len - p));
        b = b ? b + 1 : text + len;
        if (!(m->after[m->n_after] = line_copy(s, p, b)))
            return broker_fail(s->e, BROKER_E_IO, "query", "out of memory");
        m->n_after++;
        p = b;
    }
    return 0;
}

/* Searches one buffer: every line with a match counts once. */
static int search_text(struct search *s, const char *rel, const char *text, size_t len)
{
    struct broker_regex *re = s->re;
    size_t pos = 0;
    uint64_t line = 1;
    const char *counted_to = text; /* line numbers are counted up to here */
    while (pos <= len) {
        int rc = pcre2_match(re->code, (PCRE2_SPTR)text, len, pos, 0, re->md, re->mctx);
        if (rc == PCRE2_ERROR_NOMATCH)
            break;
        if (rc < 0)
            return match_error(rc, "query", s->e);
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(re->md);
        size_t ms = ov[0], me = ov[1];
        if (ms > len)
            break;
        /* The line holding the start of the match. */
        const char *ls = text + ms;
        while (ls > text && ls[-1] != '\n')
            ls--;
        const char *le = memchr(text + ms, '\n', len - ms);
        le = le ? le + 1 : text + len;
        bool hit = true;
        const char *content_end = le > ls && le[-1] == '\n' ? le - 1 : le;
        if (text + me > content_end) {
            /* The match ran past its line: the line counts only if it matches alone. */
            rc = pcre2_match(re->code, (PCRE2_SPTR)ls, (size_t)(content_end - ls), 0, 0, re->md,
                             re->mctx);
            if (rc < 0 && rc != PCRE2_ERROR_NOMATCH)
                return match_error(rc, "query", s->e);
            hit = rc >= 0;
        }
        if (hit) {
            for (const char *q = counted_to; (q = memchr(q, '\n', (size_t)(ls - q))); q++)
                line++;
            counted_to = ls;
            s->r->total++;
            if (s->r->n < s->o->max_results) {
                if (add_match(s, rel, text, len, ls, le, line) < 0)
                    return -1;
            } else {
                s->r->truncated = true;
            }
        }
        if (le >= text + len)
            break;
        pos = (size_t)(le - text);
    }
    return 0;
}

/* Reads and searches the regular file NAME beneath dirfd. Unreadable, binary and
 * multiply-linked files are skipped silently, like a grep over a tree would. */
static int search_file(struct search *s, int dirfd, const char *name, const char *rel)
{
    struct open_how how = {
        .flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS,
    };
    int fd = (int)syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
    if (fd < 0)
        return 0;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1) {
        close(fd);
        return 0;
    }
    size_t want = (size_t)st.st_size;
    if (want + 1 > s->buf_cap) {
        size_t nc = want + 1 < 65536 ? 65536 : want + 1;
        char *tmp = realloc(s->buf, nc);
        if (!tmp) {
            close(fd);
            return broker_fail(s->e, BROKER_E_IO, "paths", "out of memory");
        }
        s->buf = tmp;
        s->buf_cap = nc;
    }
    ssize_t n = util_read_all(fd, s->buf, want);
    close(fd);
    if (n <= 0)
        return 0;
    s->r->files_searched++;
    if (memchr(s->buf, 0, (size_t)n))
        return 0; /* binary */
    return search_text(s, rel, s->buf, (size_t)n);
}

static char *join_rel(const char *rel, const char *name)
{
    return *rel ? util_printf("%s/%s", rel, name) : strdup(name);
}

struct ent {
    char *name;
    unsigned char type;
};

static int ent_cmp(const void *a, const void *b)
{
    return strcmp(((const struct ent *)a)->name, ((const struct ent *)b)->name);
}

static int search_dir(struct search *s, int dirfd, const char *rel, unsigned depth)
{
    if (depth > SEARCH_MAX_NEST)
        return 0;
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return 0;
    }
    /* Names and types first (sorted for a stable order), then the work. */
    struct ent *v = NULL;
    size_t n = 0, cap = 0;
    int r = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *nm = de->d_name;
        if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2])))
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            struct ent *tmp = realloc(v, nc * sizeof(*tmp));
            if (!tmp) {
                r = broker_fail(s->e, BROKER_E_IO, "paths", "out of memory");
                break;
            }
            v = tmp;
            cap = nc;
        }
        if (!(v[n].name = strdup(nm))) {
            r = broker_fail(s->e, BROKER_E_IO, "paths", "out of memory");
            break;
        }
        v[n++].type = de->d_type;
    }
    closedir(d);
    if (r == 0)
        qsort(v, n, sizeof(*v), ent_cmp);
    for (size_t i = 0; i < n && r == 0; i++) {
        char *child = join_rel(rel, v[i].name);
        if (!child) {
            r = broker_fail(s->e, BROKER_E_IO, "paths", "out of memory");
            break;
        }
        unsigned char type = v[i].type;
        if (type == DT_UNKNOWN) {
            struct stat st;
            type = fstatat(dirfd, v[i].name, &st, AT_SYMLINK_NOFOLLOW) < 0 ? DT_UNKNOWN
                   : S_ISDIR(st.st_mode)                                 ? DT_DIR
                   : S_ISREG(st.st_mode)                                 ? DT_REG
                                                                         : DT_UNKNOWN;
        }
        if (broker_filter_excludes(s->filter, child, v[i].name)) {
            /* excluded */
        } else if (type == DT_REG) {
            if (!s->include || glob_matches(s->include, strchr(s->o->include_glob, '/') ? child : v[i].name))
                r = search_file(s, dirfd, v[i].name, child);
        } else if (type == DT_DIR && s->o->recursive &&
                   !broker_filter_prunes(s->filter, child, v[i].name, false)) {
            struct broker_err sub_err;
            int sub = broker_openat(dirfd, v[i].name, O_PATH | O_DIRECTORY, 0,
                                    RESOLVE_NO_SYMLINKS, "paths", &sub_err);
            if (sub >= 0) {
                r = search_dir(s, sub, child, depth + 1);
                close(sub);
            }
        }
        free(child);
    }
    for (size_t i = 0; i < n; i++)
        free(v[i].name);
    free(v);
    return r;
}

static int search_path(struct search *s, const struct tool_ctx *ctx, const char *path,
                       const char *field)
{
    _cleanup_free_ char *rel = NULL;
    if (broker_path_clean(path, field, &rel, s->e) < 0)
        return -1;
    _cleanup_close_ int fd = broker_openat(ctx->root_fd, rel, O_PATH, 0, 0, field, s->e);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return broker_fail(s->e, BROKER_E_IO, field, "/%s: %s", rel, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        if (s->o->recursive && *rel && broker_filter_prunes(s->filter, rel, "", true))
            return 0;
        return search_dir(s, fd, rel, 1);
    }
    if (!S_ISREG(st.st_mode))
        return broker_fail(s->e, BROKER_E_NOT_REGULAR, field, "/%s is not a regular file", rel);
    if (st.st_nlink > 1)
        return broker_fail(s->e, BROKER_E_DENIED, field,
                           "/%s has other hard links and may live outside the workspace", rel);
    /* An explicit file: searched whatever the exclusions say. */
    const char *slash = strrchr(rel, '/');
    _cleanup_free_ char *parent = strndup(rel, slash ? (size_t)(slash - rel) : 0);
    if (!parent)
        return broker_fail(s->e, BROKER_E_IO, field, "out of memory");
    _cleanup_close_ int dfd = broker_openat(ctx->root_fd, parent, O_PATH | O_DIRECTORY, 0, 0, field, s->e);
    if (dfd < 0)
        return -1;
    return search_file(s, dfd, slash ? slash + 1 : rel, rel);
}

int broker_search(const struct tool_ctx *ctx, const struct broker_search_opts *o,
                  struct broker_search_result *r, struct broker_err *e)
{
    memset(r, 0, sizeof(*r));
    if (!o->query || !*o->query)
        return broker_fail(e, BROKER_E_INVALID, "query", "query is empty");
    if (o->context > 100)
        return broker_fail(e, BROKER_E_INVALID, "contextLines", "contextLines is at most 100");
    struct search s = {.o = o, .r = r, .e = e,
                       .line_bytes = o->max_line_bytes ? o->max_line_bytes : SEARCH_LINE_BYTES};
    /* Multiline: ^ and $ at every line, since a file is searched as one buffer. */
    uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_MULTILINE |
                    (o->literal ? PCRE2_LITERAL : PCRE2_ALT_BSUX) |
                    (o->ignore_case ? PCRE2_CASELESS : 0);
    int rc = regex_compile(o->query, opts, "query", &s.re, e);
    if (rc == 0)
        rc = broker_filter_new(o->exclude, o->n_exclude, "excludePatterns", &s.filter, e);
    if (rc == 0 && o->include_glob && glob_new(o->include_glob, &s.include) < 0)
        rc = broker_fail(e, BROKER_E_PATTERN, "glob", "glob is not a valid pattern");
    if (rc == 0) {
        if (o->n_paths == 0)
            rc = search_path(&s, ctx, "", "paths");
        for (size_t i = 0; rc == 0 && i < o->n_paths; i++) {
            char field[32];
            snprintf(field, sizeof(field), "paths[%zu]", i);
            rc = search_path(&s, ctx, o->paths[i], field);
        }
    }
    free(s.buf);
    glob_free(s.include);
    broker_filter_free(s.filter);
    broker_regex_free(s.re);
    if (rc < 0)
        broker_search_result_clear(r);
    return rc;
}
