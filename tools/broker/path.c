/* tools/broker/path.c: containment. Every agent path is cleaned to the name it will be shown by,
 * then opened by the kernel beneath the workspace root fd with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS): `..` out, absolute symlinks, relative symlinks that climb out (dangling
 * or not) and /proc magic links all fail in the kernel, race-free. Also the small shared helpers:
 * errors, UTF-8, timestamps and the compiled exclusion filter. */
#include "tools/broker/broker.h"
#include "tools/broker/glob.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The seed's recommended default exclusions (WAP "Default Exclusion Patterns"). */
static const char *const seed_excludes[] = {
    "**/node_modules/**", "**/.git/**",   "**/dist/**",        "**/build/**",
    "**/.venv/**",        "**/target/**", "**/__pycache__/**", "**/vendor/**",
};

/* Agent paths longer than this are refused before anything else (PATH_MAX-ish). */
#define BROKER_PATH_MAX 4096

int broker_fail(struct broker_err *e, enum broker_kind kind, const char *field, const char *fmt, ...)
{
    if (!e)
        return -1;
    e->kind = kind;
    snprintf(e->field, sizeof(e->field), "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    return -1;
}

const char *broker_kind_name(enum broker_kind kind)
{
    static const char *const names[] = {
        [BROKER_OK] = "ok",
        [BROKER_E_NOT_FOUND] = "not_found",
        [BROKER_E_DENIED] = "denied",
        [BROKER_E_TOO_LARGE] = "too_large",
        [BROKER_E_INVALID] = "invalid_argument",
        [BROKER_E_IS_DIR] = "is_directory",
        [BROKER_E_NOT_DIR] = "not_a_directory",
        [BROKER_E_NOT_REGULAR] = "not_a_regular_file",
        [BROKER_E_EXISTS] = "file_exists",
        [BROKER_E_BINARY] = "binary_file",
        [BROKER_E_NO_MATCH] = "no_match",
        [BROKER_E_NOT_UNIQUE] = "not_unique",
        [BROKER_E_PATTERN] = "invalid_pattern",
        [BROKER_E_REGEX_LIMIT] = "regex_limit",
        [BROKER_E_EXEC] = "execution_failed",
        [BROKER_E_TIMEOUT] = "timeout",
        [BROKER_E_IO] = "io_error",
    };
    if ((size_t)kind < ARRAY_SIZE(names) && names[kind])
        return names[kind];
    return "error";
}

int broker_path_clean(const char *path, const char *field, char **rel, struct broker_err *e)
{
    *rel = NULL;
    if (!path)
        return broker_fail(e, BROKER_E_INVALID, field, "%s is required", field);
    size_t len = strnlen(path, BROKER_PATH_MAX + 1);
    if (len > BROKER_PATH_MAX)
        return broker_fail(e, BROKER_E_INVALID, field, "%s is longer than %d bytes", field,
                           BROKER_PATH_MAX);
    if (!broker_utf8_valid(path, len))
        return broker_fail(e, BROKER_E_INVALID, field, "%s is not valid UTF-8", field);
    char *out = malloc(len + 1);
    if (!out)
        return broker_fail(e, BROKER_E_IO, field, "out of memory");
    size_t o = 0;
    const char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        const char *seg = p;
        while (*p && *p != '/')
            p++;
        size_t sl = (size_t)(p - seg);
        if (sl == 0 || (sl == 1 && seg[0] == '.'))
            continue;
        if (sl == 2 && seg[0] == '.' && seg[1] == '.') {
            if (o == 0) {
                free(out);
                return broker_fail(e, BROKER_E_DENIED, field,
                                   "%s leaves the workspace: '..' above its root", field);
            }
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0)
                o--; /* the '/' before the popped segment */
            continue;
        }
        if (o)
            out[o++] = '/';
        memcpy(out + o, seg, sl);
        o += sl;
    }
    out[o] = '\0';
    *rel = out;
    return 0;
}

char *broker_path_display(const char *rel)
{
    return util_printf("/%s", rel ? rel : "");
}

static long sys_openat2(int dirfd, const char *path, struct open_how *how)
{
    return syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
}

/* Maps an errno of an open/stat/mkdir beneath the root onto a kind, naming the display path. */
static int fail_errno(struct broker_err *e, int err, const char *field, const char *rel)
{
    const char *what = rel && *rel ? rel : ".";
    int r;
    switch (err) {
    case ENOENT:
        r = broker_fail(e, BROKER_E_NOT_FOUND, field, "/%s does not exist in the workspace", what);
        break;
    case EXDEV:
        r = broker_fail(
            e, BROKER_E_DENIED, field,
            "/%s leaves the workspace (through '..', an absolute or outward symlink, or a mount)", what);
        break;
    case ELOOP:
        r = broker_fail(e, BROKER_E_DENIED, field,
                        "/%s goes through a symlink that may not be followed here (a write through a "
                        "link, a /proc magic link or a loop)",
                        what);
        break;
    case EACCES:
    case EPERM:
    case EROFS: r = broker_fail(e, BROKER_E_DENIED, field, "/%s: %s", what, strerror(err)); break;
    case ENOTDIR:
        r = broker_fail(e, BROKER_E_NOT_DIR, field, "/%s: a segment of the path is not a directory",
                        what);
        break;
    case EISDIR: r = broker_fail(e, BROKER_E_IS_DIR, field, "/%s is a directory", what); break;
    case ENAMETOOLONG: r = broker_fail(e, BROKER_E_INVALID, field, "/%s: name too long", what); break;
    case ENOSPC:
    case EDQUOT:
    case EFBIG: r = broker_fail(e, BROKER_E_TOO_LARGE, field, "/%s: %s", what, strerror(err)); break;
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    default: r = broker_fail(e, BROKER_E_IO, field, "/%s: %s", what, strerror(err)); break;
    }
    if (e)
        e->sys_errno = err;
    return r;
}

int broker_openat(int dirfd, const char *rel, int flags, mode_t mode, uint64_t extra_resolve,
                  const char *field, struct broker_err *e)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC),
        .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | extra_resolve,
    };
    long fd;
    do
        fd = sys_openat2(dirfd, rel && *rel ? rel : ".", &how);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return fail_errno(e, errno, field, rel);
    return (int)fd;
}

/* Segment by segment beneath the root: mkdirat, then open it without following a symlink, so a
 * symlink planted as a parent can never redirect the creation. */
static int mkdirs_beneath(const struct tool_ctx *ctx, const char *rel, size_t upto, const char *field,
                          struct broker_err *e)
{
    _cleanup_close_ int dir = broker_openat(ctx->root_fd, "", O_PATH | O_DIRECTORY, 0, 0, field, e);
    if (dir < 0)
        return -1;
    char seg[256];
    size_t i = 0;
    while (i < upto) {
        size_t j = i;
        while (j < upto && rel[j] != '/')
            j++;
        size_t sl = j - i;
        if (sl >= sizeof(seg))
            return broker_fail(e, BROKER_E_INVALID, field, "a segment of %s is too long", field);
        memcpy(seg, rel + i, sl);
        seg[sl] = '\0';
        struct stat st;
        int r = fstatat(dir, seg, &st, AT_SYMLINK_NOFOLLOW);
        if (r < 0 && errno == ENOENT) {
            if (mkdirat(dir, seg, 0755) < 0 && errno != EEXIST)
                return fail_errno(e, errno, field, rel);
            /* New directories belong to whoever owns their parent, not to the supervisor. */
            struct stat pst;
            if (fstat(dir, &pst) == 0)
                (void)!fchownat(dir, seg, pst.st_uid, pst.st_gid, AT_SYMLINK_NOFOLLOW);
        } else if (r < 0) {
            return fail_errno(e, errno, field, rel);
        }
        int next = broker_openat(dir, seg, O_PATH | O_DIRECTORY, 0, RESOLVE_NO_SYMLINKS, field, e);
        if (next < 0)
            return -1;
        close(dir);
        dir = next;
        i = j + 1;
    }
    return 0;
}

int broker_open_parent(const struct tool_ctx *ctx, const char *rel, bool mkdirs, const char *field,
                       const char **leaf, struct broker_err *e)
{
    if (!*rel)
        return broker_fail(e, BROKER_E_IS_DIR, field, "%s names the workspace root, not a file", field);
    const char *slash = strrchr(rel, '/');
    *leaf = slash ? slash + 1 : rel;
    size_t plen = slash ? (size_t)(slash - rel) : 0;
    _cleanup_free_ char *parent = strndup(rel, plen);
    if (!parent)
        return broker_fail(e, BROKER_E_IO, field, "out of memory");
    int fd = broker_openat(ctx->root_fd, parent, O_PATH | O_DIRECTORY, 0, 0, field, e);
    if (fd < 0 && mkdirs && e->kind == BROKER_E_NOT_FOUND) {
        if (mkdirs_beneath(ctx, rel, plen, field, e) < 0)
            return -1;
        fd = broker_openat(ctx->root_fd, parent, O_PATH | O_DIRECTORY, 0, 0, field, e);
        if (fd >= 0)
            memset(e, 0, sizeof(*e)); /* the first miss is history */
    }
    if (fd < 0 && e->kind == BROKER_E_NOT_FOUND && !mkdirs)
        broker_fail(e, BROKER_E_NOT_FOUND, field,
                    "the directory /%s does not exist (create it first, or ask for parent directories "
                    "to be made)",
                    parent);
    return fd;
}

/* ---- UTF-8 ---------------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (strict: no overlongs, no surrogates, <= U+10FFFF),
 * or 0 when the bytes there are not one. */
static size_t utf8_seq(const unsigned char *s, size_t len)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (len < n)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

bool broker_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        /* ASCII runs are the common case: eight bytes at a time. */
        while (i + 8 <= len) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (w & 0x8080808080808080ull)
                break;
            i += 8;
        }
        if (i >= len)
            break;
        size_t n = utf8_seq(p + i, len - i);
        if (!n)
            return false;
        i += n;
    }
    return true;
}

char *broker_utf8_sanitize(const char *s, size_t len, size_t max_bytes, size_t *out_len)
{
    /* Worst case every byte becomes U+FFFD (3 bytes). */
    if (len > (SIZE_MAX - 1) / 3)
        return NULL;
    size_t cap = max_bytes && max_bytes < len * 3 ? max_bytes : len * 3;
    char *out = malloc(cap + 1);
    if (!out)
        return NULL;
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, o = 0;
    while (i < len) {
        size_t n = utf8_seq(p + i, len - i);
        const char *src = n ? (const char *)p + i : "\xEF\xBF\xBD";
        size_t sl = n ? n : 3;
        if (o + sl > cap)
            break;
        memcpy(out + o, src, sl);
        o += sl;
        i += n ? n : 1;
    }
    out[o] = '\0';
    if (out_len)
        *out_len = o;
    return out;
}

size_t broker_utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t n = max;
    /* Step back over continuation bytes to the start of the character that would be split. */
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

void broker_iso_time(const struct timespec *t, char buf[32])
{
    struct tm tm;
    time_t sec = t->tv_sec;
    char date[24];
    if (!gmtime_r(&sec, &tm) || tm.tm_year < -1900 || tm.tm_year > 8099 ||
        strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
        snprintf(buf, 32, "1970-01-01T00:00:00.000Z");
        return;
    }
    snprintf(buf, 32, "%.19s.%03dZ", date, (int)((t->tv_nsec / 1000000) % 1000));
}

/* ---- exclusion filter ----------------------------------------------------------------------- */

void broker_default_excludes(const struct tool_ctx *ctx, const char *const **v, size_t *n)
{
    if (ctx && ctx->limits.exclude) {
        *v = ctx->limits.exclude;
        *n = ctx->limits.n_exclude;
    } else {
        *v = seed_excludes;
        *n = ARRAY_SIZE(seed_excludes);
    }
}

struct filter_pat {
    struct glob *g;
    bool on_name; /* no '/' in the pattern: match the last segment */
};

struct broker_filter {
    char **names; /* "**" "/NAME/" "**" patterns: a directory of that name is pruned */
    size_t n_names;
    struct filter_pat *pats;
    size_t n_pats;
};

void broker_filter_free(struct broker_filter *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n_names; i++)
        free(f->names[i]);
    for (size_t i = 0; i < f->n_pats; i++)
        glob_free(f->pats[i].g);
    free(f->names);
    free(f->pats);
    free(f);
}

/* NAME when the pattern is exactly "**" + "/NAME/" + "**" with a plain NAME, else NULL. */
static char *plain_dir_name(const char *p)
{
    size_t len = strlen(p);
    if (len < 7 || strncmp(p, "**/", 3) != 0 || strcmp(p + len - 3, "/**") != 0)
        return NULL;
    for (size_t i = 3; i < len - 3; i++)
        if (strchr("*?[]\\/", p[i]))
            return NULL;
    return strndup(p + 3, len - 6);
}

int broker_filter_new(const char *const *pat, size_t n, const char *field, struct broker_filter **out,
                      struct broker_err *e)
{
    *out = NULL;
    struct broker_filter *f = calloc(1, sizeof(*f));
    if (!f || (n && (!(f->names = calloc(n, sizeof(char *))) ||
                     !(f->pats = calloc(n, sizeof(struct filter_pat)))))) {
        broker_filter_free(f);
        return broker_fail(e, BROKER_E_IO, field, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const char *p = pat[i];
        char *name = p ? plain_dir_name(p) : NULL;
        if (name) {
            f->names[f->n_names++] = name;
            continue;
        }
        const char *body = p;
        while (body && *body == '/')
            body++; /* patterns are workspace-relative, like paths */
        struct glob *g = NULL;
        if (!body || glob_new(body, &g) < 0) {
            broker_filter_free(f);
            return broker_fail(
                e, BROKER_E_PATTERN, field,
                "%s[%zu] is not a valid glob pattern (empty, unterminated [ or over %d bytes)", field, i,
                GLOB_MAX_PATTERN);
        }
        f->pats[f->n_pats].g = g;
        f->pats[f->n_pats].on_name = strchr(p, '/') == NULL; /* "/build": the root's only */
        f->n_pats++;
    }
    *out = f;
    return 0;
}

bool broker_filter_excludes(const struct broker_filter *f, const char *rel, const char *name)
{
    if (!f)
        return false;
    for (size_t i = 0; i < f->n_pats; i++)
        if (glob_matches(f->pats[i].g, f->pats[i].on_name ? name : rel))
            return true;
    return false;
}

bool broker_filter_prunes(const struct broker_filter *f, const char *rel, const char *name,
                          bool whole_path)
{
    if (!f)
        return false;
    for (size_t i = 0; i < f->n_names; i++) {
        if (!whole_path) {
            if (strcmp(name, f->names[i]) == 0)
                return true;
            continue;
        }
        size_t nl = strlen(f->names[i]);
        for (const char *s = rel; *s;) {
            const char *end = strchrnul(s, '/');
            if ((size_t)(end - s) == nl && memcmp(s, f->names[i], nl) == 0)
                return true;
            s = *end ? end + 1 : end;
        }
    }
    if (f->n_pats == 0)
        return false;
    /* Patterns ending in a double star exclude what is beneath: try the directory as "rel/". */
    size_t rl = strlen(rel);
    char stack[512];
    char *buf = rl + 2 <= sizeof(stack) ? stack : malloc(rl + 2);
    if (!buf)
        return false;
    memcpy(buf, rel, rl);
    buf[rl] = '/';
    buf[rl + 1] = '\0';
    bool hit = false;
    for (size_t i = 0; i < f->n_pats && !hit; i++)
        if (!f->pats[i].on_name && glob_matches(f->pats[i].g, buf))
            hit = true;
    if (buf != stack)
        free(buf);
    return hit;
}

/* ---- directory entries ---------------------------------------------------------------------- */

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static int dirent_cmp(const void *a, const void *b, void *pool)
{
    return strcmp((const char *)pool + ((const struct broker_dirent *)a)->name,
                  (const char *)pool + ((const struct broker_dirent *)b)->name);
}

int broker_dirents_read(struct broker_dirents *d, int fd)
{
    d->n = 0;
    d->pool_len = 0;
    /* 32 KiB aligned for the kernel's records; on the heap (worker threads, small stacks) */
    _cleanup_free_ char *buf = malloc(32768);
    if (!buf)
        return -ENOMEM;
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, 32768);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        for (long off = 0; off < n;) {
            const struct linux_dirent64 *de = (const void *)(buf + off);
            off += de->d_reclen;
            const char *nm = de->d_name;
            if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2])))
                continue;
            size_t nl = strlen(nm) + 1;
            if (d->n == d->cap) {
                size_t nc = d->cap ? d->cap * 2 : 64;
                struct broker_dirent *v = realloc(d->v, nc * sizeof(*v));
                if (!v)
                    return -ENOMEM;
                d->v = v;
                d->cap = nc;
            }
            if (d->pool_len + nl > d->pool_cap) {
                size_t nc = d->pool_cap ? d->pool_cap * 2 : 4096;
                while (nc < d->pool_len + nl)
                    nc *= 2;
                char *pool = realloc(d->pool, nc);
                if (!pool)
                    return -ENOMEM;
                d->pool = pool;
                d->pool_cap = nc;
            }
            memcpy(d->pool + d->pool_len, nm, nl);
            d->v[d->n].name = d->pool_len;
            d->v[d->n].type = de->d_type;
            d->n++;
            d->pool_len += nl;
        }
    }
    if (d->n > 1)
        qsort_r(d->v, d->n, sizeof(*d->v), dirent_cmp, d->pool);
    return 0;
}

void broker_dirents_free(struct broker_dirents *d)
{
    if (!d)
        return;
    free(d->v);
    free(d->pool);
    memset(d, 0, sizeof(*d));
}
