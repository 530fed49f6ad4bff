/* tools/broker/search.c: content search over workspace files (PCRE2 with JIT, regex or
 * literal), line-oriented like grep and ripgrep, walking directories by fds; plus the regex
 * compile and substitute helpers that modifyFile shares. Every regex runs under match and depth
 * limits, so a catastrophic pattern ends in a clear error instead of a hang. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tools/broker/broker.h"
#include "tools/broker/glob.h"

#include <dirent.h> /* DT_* */
#include <fcntl.h>
#include <linux/openat2.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdatomic.h>
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
#define SEARCH_MAX_NEST 128    /* directory levels a recursive search enters */
#define SEARCH_LINE_BYTES 4096 /* default cap of each returned line */
/* A file is read whole into the searching thread's buffer: larger ones are skipped so that a
 * planted multi-gigabyte file cannot make the supervisor allocate it (mmap is no way out: a
 * concurrent truncate would SIGBUS the supervisor). */
#define SEARCH_MAX_FILE (64u << 20)
#define SEARCH_MAX_BYTES (4u << 20) /* default cap of the text of one answer */

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
        return broker_fail(e, BROKER_E_PATTERN, field, "%s does not compile at offset %zu: %s", field,
                           (size_t)erroff, (const char *)msg);
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
        opts |= PCRE2_LITERAL; /* PCRE2 takes no line options with it */
    else                       /* JavaScript: without m, ^ and $ are the ends of the whole text only. */
        opts |= PCRE2_ALT_BSUX |
                (multiline ? PCRE2_MULTILINE | PCRE2_ALT_CIRCUMFLEX : PCRE2_DOLLAR_ENDONLY);
    return regex_compile(pattern, opts, field, out, e);
}

static int match_error(int rc, const char *field, struct broker_err *e)
{
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT ||
        rc == PCRE2_ERROR_JIT_STACKLIMIT)
        return broker_fail(e, BROKER_E_REGEX_LIMIT, field,
                           "the pattern backtracks too much (catastrophic backtracking, e.g. nested "
                           "quantifiers like (a+)+); simplify it");
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
                            const char *replacement, bool global, size_t max_len, const char *field,
                            char **out, size_t *out_len, struct broker_err *e)
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
    if (cap > max_len)
        cap = max_len;
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
        /* The length needed, thanks to OVERFLOW_LENGTH: refused before it is ever allocated. */
        if (olen > max_len)
            return broker_fail(e, BROKER_E_TOO_LARGE, field,
                               "the replacement would make the file %zu bytes, over the limit of %zu",
                               (size_t)olen, max_len);
        cap = olen;
    }
    if (rc == PCRE2_ERROR_NOMEMORY)
        return broker_fail(e, BROKER_E_IO, field, "out of memory");
    if (rc == PCRE2_ERROR_BADREPESCAPE || rc == PCRE2_ERROR_BADREPLACEMENT ||
        rc == PCRE2_ERROR_BADSUBSTITUTION) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(rc, msg, sizeof(msg));
        return broker_fail(e, BROKER_E_INVALID, "replacement", "replacement: %s", (const char *)msg);
    }
    return match_error(rc, field, e);
}

/* ---- search --------------------------------------------------------------------------------
 * The walk runs on the calling thread and hands files, in order, to a few worker threads that
 * read and match them; results are merged back in walk order, so the answer is the same as a
 * sequential search. Each job holds a reference on its directory's fd (files are opened with
 * openat2 beneath it, never by a rebuilt path). */

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

#define SEARCH_QUEUE 128 /* files in flight between the walk and the workers */
#define SEARCH_MAX_WORKERS 4

struct dirref {
    int fd;
    atomic_int refs;
};

static struct dirref *dirref_new(int fd)
{
    struct dirref *d = malloc(sizeof(*d));
    if (!d)
        return NULL;
    d->fd = fd;
    atomic_init(&d->refs, 1);
    return d;
}

static struct dirref *dirref_get(struct dirref *d)
{
    atomic_fetch_add(&d->refs, 1);
    return d;
}

static void dirref_put(struct dirref *d)
{
    if (d && atomic_fetch_sub(&d->refs, 1) == 1) {
        close(d->fd);
        free(d);
    }
}

struct job {
    struct dirref *dir;
    char *name; /* beneath dir */
    char *rel;  /* workspace-relative, for display */
    bool done;
    int rc;
    struct broker_search_result res;
    struct broker_err err;
};

/* Per worker: PCRE2 match data and JIT stack are not shareable between threads; the compiled
 * pattern is. */
struct matcher {
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    pcre2_jit_stack *js;
    char *buf;
    size_t buf_cap;
};

struct search {
    const struct broker_search_opts *o;
    struct broker_regex *re;
    struct broker_filter *filter;
    struct glob *include;
    size_t line_bytes;
    struct broker_search_result *r;
    struct broker_err *e;
    /* the queue */
    pthread_mutex_t mu;
    pthread_cond_t work, merged;
    struct job ring[SEARCH_QUEUE];
    size_t head, take, tail; /* merge <= take <= tail, as counters (index % SEARCH_QUEUE) */
    bool closing;
    atomic_bool collect_done; /* enough matches kept: the workers only count from now on */
    atomic_bool abort;
    int walk_rc;
    struct matcher *main_mt; /* the walking thread's own, for when it lends a hand */
    bool answer_full;        /* max_bytes reached (merge side only) */
};

static int matcher_init(struct matcher *m, const struct broker_regex *re)
{
    memset(m, 0, sizeof(*m));
    m->md = pcre2_match_data_create_from_pattern(re->code, NULL);
    m->mctx = pcre2_match_context_copy(re->mctx);
    if (re->jit_stack)
        m->js = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, NULL);
    if (!m->md || !m->mctx || (re->jit_stack && !m->js))
        return -1;
    pcre2_jit_stack_assign(m->mctx, NULL, m->js);
    return 0;
}

static void matcher_clear(struct matcher *m)
{
    pcre2_match_data_free(m->md);
    pcre2_match_context_free(m->mctx);
    pcre2_jit_stack_free(m->js);
    free(m->buf);
}

/* Line [a, b) without its terminator, as a returned string. */
static char *line_copy(const struct search *s, const char *a, const char *b)
{
    if (b > a && b[-1] == '\n')
        b--;
    if (b > a && b[-1] == '\r')
        b--;
    return broker_utf8_sanitize(a, (size_t)(b - a), s->line_bytes, NULL);
}

static int add_match(const struct search *s, struct job *j, const char *text, size_t len, const char *ls,
                     const char *le, uint64_t line)
{
    struct broker_search_result *r = &j->res;
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 8;
        struct broker_match *tmp = realloc(r->v, nc * sizeof(*tmp));
        if (!tmp)
            return broker_fail(&j->err, BROKER_E_IO, "query", "out of memory");
        r->v = tmp;
        r->cap = nc;
    }
    struct broker_match *m = &r->v[r->n];
    memset(m, 0, sizeof(*m));
    r->n++; /* counted now, so a failure below is freed by the clear */
    m->line = line;
    if (!(m->path = broker_path_display(j->rel)) || !(m->text = line_copy(s, ls, le)))
        return broker_fail(&j->err, BROKER_E_IO, "query", "out of memory");
    m->bytes = strlen(m->path) + strlen(m->text);
    unsigned ctx = s->o->context;
    if (!ctx)
        return 0;
    /* Lines before: walk back from the start of the match line. */
    const char *starts[128];
    size_t nb = 0;
    const char *p = ls;
    while (nb < ctx && nb < ARRAY_SIZE(starts) && p > text) {
        const char *q = p - 1; /* the '\n' ending the previous line */
        while (q > text && q[-1] != '\n')
            q--;
        starts[nb++] = q;
        p = q;
    }
    if (nb && !(m->before = calloc(nb, sizeof(char *))))
        return broker_fail(&j->err, BROKER_E_IO, "query", "out of memory");
    for (size_t k = 0; k < nb; k++) {
        const char *a = starts[nb - 1 - k];
        const char *b = memchr(a, '\n', (size_t)(text + len - a));
        b = b ? b + 1 : text + len;
        if (!(m->before[k] = line_copy(s, a, b)))
            return broker_fail(&j->err, BROKER_E_IO, "query", "out of memory");
        m->bytes += strlen(m->before[k]);
        m->n_before++;
    }
    if (!(m->after = calloc(ctx, sizeof(char *))))
        return broker_fail(&j->err, BROKER_E_IO, "query", "out of memory");
    p = le;
    while (m->n_after < ctx && p < text + len) {
        const char *b = memchr(p, '\n', (size_t)(text + len - p));
        b = b ? b + 1 : text + len;
        if (!(m->after[m->n_after] = line_copy(s, p, b)))
            return broker_fail(&j->err, BROKER_E_IO, "query", "out of memory");
        m->bytes += strlen(m->after[m->n_after]);
        m->n_after++;
        p = b;
    }
    return 0;
}

/* Searches one buffer: every line with a match counts once. */
static int search_text(struct search *s, struct matcher *mt, struct job *j, const char *text, size_t len)
{
    const pcre2_code *code = s->re->code;
    size_t pos = 0;
    uint64_t line = 1;
    const char *counted_to = text; /* line numbers are counted up to here */
    while (pos < len) {            /* an empty file has no line to match */
        int rc = pcre2_match(code, (PCRE2_SPTR)text, len, pos, 0, mt->md, mt->mctx);
        if (rc == PCRE2_ERROR_NOMATCH)
            break;
        if (rc < 0)
            return match_error(rc, "query", &j->err);
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(mt->md);
        size_t ms = ov[0], me = ov[1];
        /* An (empty) match after the final newline is on no line at all. */
        if (ms > len || (ms == len && text[len - 1] == '\n'))
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
            rc = pcre2_match(code, (PCRE2_SPTR)ls, (size_t)(content_end - ls), 0, 0, mt->md, mt->mctx);
            if (rc < 0 && rc != PCRE2_ERROR_NOMATCH)
                return match_error(rc, "query", &j->err);
            hit = rc >= 0;
        }
        if (hit) {
            for (const char *q = counted_to; (q = memchr(q, '\n', (size_t)(ls - q))); q++)
                line++;
            counted_to = ls;
            j->res.total++;
            if (j->res.n < s->o->max_results && !atomic_load(&s->collect_done)) {
                if (add_match(s, j, text, len, ls, le, line) < 0)
                    return -1;
            } else {
                j->res.truncated = true;
            }
        }
        if (le >= text + len)
            break;
        pos = (size_t)(le - text);
    }
    return 0;
}

/* Reads and searches one job's file. Unreadable, binary and multiply-linked files are skipped
 * silently, like a grep over a tree would. */
static int search_job(struct search *s, struct matcher *mt, struct job *j)
{
    struct open_how how = {
        .flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS,
    };
    int fd = (int)syscall(SYS_openat2, j->dir->fd, j->name, &how, sizeof(how));
    if (fd < 0)
        return 0;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1 ||
        (uint64_t)st.st_size > SEARCH_MAX_FILE) {
        close(fd);
        return 0;
    }
    size_t want = (size_t)st.st_size;
    if (want + 1 > mt->buf_cap) {
        size_t nc = want + 1 < 65536 ? 65536 : want + 1;
        char *tmp = realloc(mt->buf, nc);
        if (!tmp) {
            close(fd);
            return broker_fail(&j->err, BROKER_E_IO, "paths", "out of memory");
        }
        mt->buf = tmp;
        mt->buf_cap = nc;
    }
    ssize_t n = util_read_all(fd, mt->buf, want);
    close(fd);
    if (n <= 0)
        return 0;
    j->res.files_searched = 1;
    if (memchr(mt->buf, 0, (size_t)n))
        return 0; /* binary */
    return search_text(s, mt, j, mt->buf, (size_t)n);
}

static void job_clear(struct job *j)
{
    dirref_put(j->dir);
    free(j->name);
    free(j->rel);
    broker_search_result_clear(&j->res);
    memset(j, 0, sizeof(*j));
}

/* Moves the finished jobs at the head into the result, in walk order. Called locked. */
static void merge_done(struct search *s)
{
    while (s->head < s->take) {
        struct job *j = &s->ring[s->head % SEARCH_QUEUE];
        if (!j->done)
            break;
        struct broker_search_result *r = s->r;
        if (j->rc < 0 && s->walk_rc == 0 && !atomic_load(&s->abort)) {
            *s->e = j->err;
            s->walk_rc = -1;
            atomic_store(&s->abort, true);
        }
        if (s->walk_rc == 0) {
            r->total += j->res.total;
            r->files_searched += j->res.files_searched;
            if (j->res.truncated)
                r->truncated = true;
            size_t k = 0;
            size_t max_bytes = s->o->max_bytes ? s->o->max_bytes : SEARCH_MAX_BYTES;
            for (; k < j->res.n && r->n < s->o->max_results && !s->answer_full; k++) {
                if (r->bytes + j->res.v[k].bytes > max_bytes) {
                    /* The answer is full: nothing after this match may be added, or the
                     * matches returned would no longer be a prefix of the walk. */
                    s->answer_full = true;
                    atomic_store(&s->collect_done, true);
                    break;
                }
                if (r->n == r->cap) {
                    size_t nc = r->cap ? r->cap * 2 : 16;
                    struct broker_match *tmp = realloc(r->v, nc * sizeof(*tmp));
                    if (!tmp)
                        break;
                    r->v = tmp;
                    r->cap = nc;
                }
                r->bytes += j->res.v[k].bytes;
                r->v[r->n++] = j->res.v[k];
            }
            if (k < j->res.n)
                r->truncated = true;
            /* the moved entries now belong to r; the rest are freed with the job */
            if (k)
                memmove(j->res.v, j->res.v + k, (j->res.n - k) * sizeof(*j->res.v));
            j->res.n -= k;
            if (r->n >= s->o->max_results)
                atomic_store(&s->collect_done, true);
        }
        job_clear(j);
        s->head++;
        pthread_cond_broadcast(&s->merged);
    }
}

/* Takes the next queued job and runs it with matcher MT (NULL: its set-up failed). Called
 * locked; unlocks while it works. False when nothing was queued. */
static bool run_one(struct search *s, struct matcher *mt)
{
    if (s->take == s->tail)
        return false;
    struct job *j = &s->ring[s->take % SEARCH_QUEUE];
    s->take++;
    pthread_mutex_unlock(&s->mu);
    if (!mt)
        j->rc = broker_fail(&j->err, BROKER_E_IO, "query", "out of memory");
    else if (!atomic_load(&s->abort))
        j->rc = search_job(s, mt, j);
    pthread_mutex_lock(&s->mu);
    j->done = true;
    pthread_cond_signal(&s->merged);
    return true;
}

struct worker {
    pthread_t th;
    struct search *s;
    bool started;
};

static void *worker_main(void *arg)
{
    struct search *s = ((struct worker *)arg)->s;
    struct matcher mt;
    bool ok = matcher_init(&mt, s->re) == 0;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (s->take == s->tail && !s->closing)
            pthread_cond_wait(&s->work, &s->mu);
        if (!run_one(s, ok ? &mt : NULL) && s->closing)
            break;
    }
    pthread_mutex_unlock(&s->mu);
    matcher_clear(&mt);
    return NULL;
}

/* Queues one file (takes name and rel). When the queue is full the walking thread searches
 * queued files itself rather than wait, so every core stays busy. */
static int enqueue(struct search *s, struct matcher *mt, struct dirref *dir, char *name, char *rel)
{
    pthread_mutex_lock(&s->mu);
    for (;;) {
        merge_done(s);
        if (s->tail - s->head < SEARCH_QUEUE)
            break;
        if (!run_one(s, mt))
            pthread_cond_wait(&s->merged, &s->mu);
    }
    struct job *j = &s->ring[s->tail % SEARCH_QUEUE];
    memset(j, 0, sizeof(*j));
    j->dir = dirref_get(dir);
    j->name = name;
    j->rel = rel;
    s->tail++;
    pthread_cond_signal(&s->work);
    int r = atomic_load(&s->abort) ? -1 : 0;
    pthread_mutex_unlock(&s->mu);
    return r;
}

static char *join_rel(const char *rel, const char *name)
{
    return *rel ? util_printf("%s/%s", rel, name) : strdup(name);
}

/* Walks directory DIR (readable, a reference the caller keeps), queueing its files in name
 * order. */
static int search_dir(struct search *s, struct dirref *dir, const char *rel, unsigned depth)
{
    if (depth > SEARCH_MAX_NEST)
        return 0;
    struct broker_dirents d = {0};
    if (broker_dirents_read(&d, dir->fd) < 0) {
        broker_dirents_free(&d);
        return 0; /* unreadable: skipped, like grep -r does */
    }
    int r = 0;
    for (size_t i = 0; i < d.n && r == 0 && !atomic_load(&s->abort); i++) {
        const char *name = broker_dirent_name(&d, i);
        char *child = join_rel(rel, name);
        if (!child) {
            r = broker_fail(s->e, BROKER_E_IO, "paths", "out of memory");
            break;
        }
        unsigned char type = d.v[i].type;
        if (type == DT_UNKNOWN) {
            struct stat st;
            type = fstatat(dir->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ? DT_UNKNOWN
                   : S_ISDIR(st.st_mode)                                ? DT_DIR
                   : S_ISREG(st.st_mode)                                ? DT_REG
                                                                        : DT_UNKNOWN;
        }
        if (broker_filter_excludes(s->filter, child, name)) {
            free(child);
        } else if (type == DT_REG) {
            const char *inc = s->o->include_glob;
            char *nm = NULL;
            if (s->include && !glob_matches(s->include, strchr(inc, '/') ? child : name))
                free(child);
            else if (!(nm = strdup(name))) {
                free(child);
                r = broker_fail(s->e, BROKER_E_IO, "paths", "out of memory");
            } else
                enqueue(s, s->main_mt, dir, nm, child); /* takes nm and child */
        } else if (type == DT_DIR && s->o->recursive &&
                   !broker_filter_prunes(s->filter, child, name, false)) {
            struct broker_err sub_err;
            int sub = broker_openat(dir->fd, name, O_RDONLY | O_DIRECTORY, 0, RESOLVE_NO_SYMLINKS,
                                    "paths", &sub_err);
            struct dirref *sd = sub >= 0 ? dirref_new(sub) : NULL;
            if (sub >= 0 && !sd)
                close(sub);
            if (sd) {
                r = search_dir(s, sd, child, depth + 1);
                dirref_put(sd);
            }
            free(child);
        } else {
            free(child);
        }
    }
    broker_dirents_free(&d);
    return r;
}

static int search_path(struct search *s, const struct tool_ctx *ctx, const char *path, const char *field)
{
    _cleanup_free_ char *rel = NULL;
    if (broker_path_clean(path, field, &rel, s->e) < 0)
        return -1;
    int fd = broker_openat(ctx->root_fd, rel, O_PATH, 0, 0, field, s->e);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return broker_fail(s->e, BROKER_E_IO, field, "/%s: %s", rel, strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) {
        int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        close(fd);
        if (dfd < 0)
            return broker_fail(s->e, BROKER_E_DENIED, field, "/%s cannot be listed: %s", rel,
                               strerror(errno));
        struct dirref *d = dirref_new(dfd);
        if (!d) {
            close(dfd);
            return broker_fail(s->e, BROKER_E_IO, field, "out of memory");
        }
        int r = 0;
        if (!(s->o->recursive && *rel && broker_filter_prunes(s->filter, rel, "", true)))
            r = search_dir(s, d, rel, 1);
        dirref_put(d);
        return r;
    }
    close(fd);
    if (!S_ISREG(st.st_mode))
        return broker_fail(s->e, BROKER_E_NOT_REGULAR, field, "/%s is not a regular file", rel);
    if (st.st_nlink > 1)
        return broker_fail(s->e, BROKER_E_DENIED, field,
                           "/%s has other hard links and may live outside the workspace", rel);
    /* An explicit file: searched whatever the exclusions say. */
    const char *slash = strrchr(rel, '/');
    _cleanup_free_ char *parent = strndup(rel, slash ? (size_t)(slash - rel) : 0);
    char *name = strdup(slash ? slash + 1 : rel);
    char *disp = strdup(rel);
    int dfd = parent && name && disp
                  ? broker_openat(ctx->root_fd, parent, O_PATH | O_DIRECTORY, 0, 0, field, s->e)
                  : -1;
    struct dirref *d = dfd >= 0 ? dirref_new(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        free(name);
        free(disp);
        return parent && name && disp && dfd < 0
                   ? -1
                   : broker_fail(s->e, BROKER_E_IO, field, "out of memory");
    }
    int r = enqueue(s, s->main_mt, d, name, disp);
    dirref_put(d);
    return r;
}

/* Helper threads besides the walking one, which searches too. */
static unsigned worker_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN) - 1;
    if (n < 0)
        n = 0;
    return n > SEARCH_MAX_WORKERS ? SEARCH_MAX_WORKERS : (unsigned)n;
}

int broker_search(const struct tool_ctx *ctx, const struct broker_search_opts *o,
                  struct broker_search_result *r, struct broker_err *e)
{
    memset(r, 0, sizeof(*r));
    if (!o->query || !*o->query)
        return broker_fail(e, BROKER_E_INVALID, "query", "query is empty");
    if (o->context > 100)
        return broker_fail(e, BROKER_E_INVALID, "contextLines", "contextLines is at most 100");
    struct search *s = calloc(1, sizeof(*s));
    if (!s)
        return broker_fail(e, BROKER_E_IO, "query", "out of memory");
    s->o = o;
    s->r = r;
    s->e = e;
    s->line_bytes = o->max_line_bytes ? o->max_line_bytes : SEARCH_LINE_BYTES;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->merged, NULL);
    atomic_init(&s->collect_done, o->max_results == 0);
    atomic_init(&s->abort, false);
    /* Multiline: ^ and $ at every line, since a file is searched as one buffer. */
    uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF |
                    (o->literal ? PCRE2_LITERAL : PCRE2_MULTILINE | PCRE2_ALT_BSUX) |
                    (o->ignore_case ? PCRE2_CASELESS : 0);
    int rc = regex_compile(o->query, opts, "query", &s->re, e);
    if (rc == 0)
        rc = broker_filter_new(o->exclude, o->n_exclude, "excludePatterns", &s->filter, e);
    if (rc == 0 && o->include_glob && glob_new(o->include_glob, &s->include) < 0)
        rc = broker_fail(e, BROKER_E_PATTERN, "glob", "glob is not a valid pattern");
    struct worker w[SEARCH_MAX_WORKERS] = {0};
    struct matcher main_mt;
    bool main_ok = rc == 0 && matcher_init(&main_mt, s->re) == 0;
    if (rc == 0 && !main_ok)
        rc = broker_fail(e, BROKER_E_IO, "query", "out of memory");
    s->main_mt = main_ok ? &main_mt : NULL;
    unsigned nw = rc == 0 ? worker_count() : 0;
    for (unsigned i = 0; i < nw; i++) {
        w[i].s = s;
        w[i].started = pthread_create(&w[i].th, NULL, worker_main, &w[i]) == 0;
    }
    if (rc == 0) {
        if (o->n_paths == 0)
            rc = search_path(s, ctx, "", "paths");
        for (size_t i = 0; rc == 0 && i < o->n_paths && !atomic_load(&s->abort); i++) {
            char field[32];
            snprintf(field, sizeof(field), "paths[%zu]", i);
            rc = search_path(s, ctx, o->paths[i], field);
        }
        if (rc < 0)
            atomic_store(&s->abort, true); /* the walk's own error: drop what is queued */
    }
    /* Drain: everything queued is searched (here too) and merged in order. */
    pthread_mutex_lock(&s->mu);
    s->closing = true;
    pthread_cond_broadcast(&s->work);
    for (;;) {
        merge_done(s);
        if (s->head == s->tail)
            break;
        if (!run_one(s, s->main_mt))
            pthread_cond_wait(&s->merged, &s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    for (unsigned i = 0; i < nw; i++)
        if (w[i].started)
            pthread_join(w[i].th, NULL);
    if (main_ok)
        matcher_clear(&main_mt);
    if (rc == 0 && s->walk_rc < 0)
        rc = -1; /* a file's error (regex limit), already in e */
    glob_free(s->include);
    broker_filter_free(s->filter);
    broker_regex_free(s->re);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->merged);
    pthread_mutex_destroy(&s->mu);
    free(s);
    if (rc < 0)
        broker_search_result_clear(r);
    return rc;
}
