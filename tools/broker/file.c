/* tools/broker/file.c: the file operations (info, read, write, modify, explore) beneath the
 * workspace root fd. Reads refuse binary files and files with other hard links; writes go to a
 * temp file beside the target and are renamed over it, so readers see all or nothing. */
#include "tools/broker/broker.h"
#include "tools/broker/protect.h"
#include "tools/broker/storage.h"
#include "tools/broker/glob.h"

#include <dirent.h>
#include <sodium.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

void broker_meta_clear(struct broker_meta *m)
{
    if (!m)
        return;
    free(m->path);
    memset(m, 0, sizeof(*m));
}

static void meta_from_stat(struct broker_meta *m, const struct stat *st)
{
    m->size = S_ISDIR(st->st_mode) ? 0 : (uint64_t)st->st_size;
    m->is_dir = S_ISDIR(st->st_mode);
    m->is_symlink = S_ISLNK(st->st_mode);
    m->mtime = st->st_mtim;
}

/* A regular file with more than one name may be a hard link to a file outside the workspace
 * (made before it was handed over): nothing proves otherwise, so its bytes are not brokered. */
static int check_regular(const struct stat *st, const char *field, const char *rel, struct broker_err *e)
{
    if (S_ISDIR(st->st_mode))
        return broker_fail(e, BROKER_E_IS_DIR, field, "/%s is a directory, not a file", rel);
    if (!S_ISREG(st->st_mode))
        return broker_fail(e, BROKER_E_NOT_REGULAR, field,
                           "/%s is not a regular file (fifo, socket or device)", rel);
    if (st->st_nlink > 1)
        return broker_fail(e, BROKER_E_DENIED, field,
                           "/%s has %ju hard links; files with other names may live outside the "
                           "workspace and are not read or written",
                           rel, (uintmax_t)st->st_nlink);
    return 0;
}

int broker_info(const struct tool_ctx *ctx, const char *path, const char *field, struct broker_meta *out,
                struct broker_err *e)
{
    memset(out, 0, sizeof(*out));
    _cleanup_free_ char *rel = NULL;
    if (broker_path_clean(path, field, &rel, e) < 0)
        return -1;
    _cleanup_close_ int fd = broker_openat(ctx->root_fd, rel, O_PATH, 0, 0, field, e);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return broker_fail(e, BROKER_E_IO, field, "/%s: %s", rel, strerror(errno));
    meta_from_stat(out, &st);
    if (!(out->path = broker_path_display(rel)))
        return broker_fail(e, BROKER_E_IO, field, "out of memory");
    return 0;
}

/* ---- read ----------------------------------------------------------------------------------- */

void broker_read_result_clear(struct broker_read_result *r)
{
    if (!r)
        return;
    free(r->content);
    broker_meta_clear(&r->meta);
    memset(r, 0, sizeof(*r));
}

int broker_read(const struct tool_ctx *ctx, const char *path, const struct broker_read_opts *o,
                struct broker_read_result *r, struct broker_err *e)
{
    static const char field[] = "path";
    memset(r, 0, sizeof(*r));
    _cleanup_free_ char *rel = NULL;
    if (broker_path_clean(path, field, &rel, e) < 0)
        return -1;
    /* O_NONBLOCK: opening a fifo planted in the workspace must not hang the broker. */
    _cleanup_close_ int fd = broker_openat(ctx->root_fd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, 0,
                                           field, e);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return broker_fail(e, BROKER_E_IO, field, "/%s: %s", rel, strerror(errno));
    if (check_regular(&st, field, rel, e) < 0)
        return -1;
    /* The size first: it costs nothing, where the binary check reads (a sparse file of zeros
     * would be called binary, and a huge text file read to its end to count its lines). */
    if (o && o->max_scan && (uint64_t)st.st_size > o->max_scan)
        return broker_fail(e, BROKER_E_TOO_LARGE, field,
                           "/%s is %ju bytes; files over %ju bytes are not read (use searchFiles, or "
                           "executeCommand with head / sed, for a part of it)",
                           rel, (uintmax_t)st.st_size, (uintmax_t)o->max_scan);
    uint64_t start = o && o->start_line ? o->start_line : 1;
    uint64_t end = o ? o->end_line : 0;
    uint64_t cap64 = o && o->max_bytes ? o->max_bytes : ctx->limits.max_file_size;
    size_t cap = cap64 > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)cap64;

    size_t out_cap = cap < (size_t)st.st_size + 1 ? cap + 1 : (size_t)st.st_size + 1;
    char *out = malloc(out_cap < 4096 ? 4096 : out_cap);
    if (!out)
        return broker_fail(e, BROKER_E_IO, field, "out of memory");
    out_cap = out_cap < 4096 ? 4096 : out_cap;
    size_t out_len = 0, line_start_out = 0;
    uint64_t line = 1, returned = 0, offset = 0;
    bool full = false, truncated = false, last_nl = true;
    /* On the heap: surface calls may run on worker threads with small stacks. */
    enum { CHUNK = 65536 };
    _cleanup_free_ char *buf = malloc(CHUNK);
    if (!buf) {
        free(out);
        return broker_fail(e, BROKER_E_IO, field, "out of memory");
    }
    for (;;) {
        ssize_t n = read(fd, buf, CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(out);
            return broker_fail(e, BROKER_E_IO, field, "/%s: %s", rel, strerror(errno));
        }
        if (n == 0)
            break;
        /* Text files hold no NUL; a NUL anywhere (a sparse file too) means binary, and stops
         * a scan of gigabytes of zeros early. */
        const char *nul = memchr(buf, 0, (size_t)n);
        if (nul) {
            free(out);
            return broker_fail(e, BROKER_E_BINARY, field,
                               "/%s is a binary file (NUL byte at offset %ju); only text files are read",
                               rel, (uintmax_t)(offset + (uint64_t)(nul - buf)));
        }
        offset += (uint64_t)n;
        size_t i = 0;
        while (i < (size_t)n) {
            const char *nl = memchr(buf + i, '\n', (size_t)n - i);
            size_t seg_end = nl ? (size_t)(nl - buf) + 1 : (size_t)n;
            bool want = !full && line >= start && (end == 0 || line <= end);
            if (want) {
                size_t seg = seg_end - i;
                if (out_len + seg <= cap) {
                    if (out_len + seg >= out_cap) {
                        size_t nc = out_cap * 2 > cap + 1 ? cap + 1 : out_cap * 2;
                        if (nc < out_len + seg + 1)
                            nc = out_len + seg + 1;
                        char *tmp = realloc(out, nc);
                        if (!tmp) {
                            free(out);
                            return broker_fail(e, BROKER_E_IO, field, "out of memory");
                        }
                        out = tmp;
                        out_cap = nc;
                    }
                    memcpy(out + out_len, buf + i, seg);
                    out_len += seg;
                } else {
                    full = truncated = true;
                    if (returned > 0) {
                        out_len = line_start_out; /* keep whole lines only */
                    } else {
                        /* A first line longer than the cap: as much of it as fits, cut at a
                         * character boundary (the byte after the cut is still in buf). */
                        size_t room = broker_utf8_cut(buf + i, seg, cap - out_len);
                        if (out_len + room >= out_cap) {
                            char *tmp = realloc(out, out_len + room + 1);
                            if (!tmp) {
                                free(out);
                                return broker_fail(e, BROKER_E_IO, field, "out of memory");
                            }
                            out = tmp;
                            out_cap = out_len + room + 1;
                        }
                        memcpy(out + out_len, buf + i, room);
                        out_len += room;
                        returned = 1;
                    }
                }
            }
            if (nl) {
                if (want && !full) {
                    returned++;
                    line_start_out = out_len;
                }
                line++;
            }
            last_nl = nl != NULL && seg_end == (size_t)n;
            i = seg_end;
        }
    }
    uint64_t total = line - 1;
    if (offset > 0 && !last_nl) {
        total = line; /* a last line without newline */
        if (!full && line >= start && (end == 0 || line <= end))
            returned++;
    }
    if (start > 1 && start > total) {
        free(out);
        return broker_fail(e, BROKER_E_INVALID, "startLine",
                           "startLine %ju is past the end of /%s (%ju lines)", (uintmax_t)start, rel,
                           (uintmax_t)total);
    }
    out[out_len] = '\0';
    if (!broker_utf8_valid(out, out_len)) {
        free(out);
        return broker_fail(e, BROKER_E_BINARY, field,
                           "/%s is not valid UTF-8 text; only text files are read", rel);
    }
    r->content = out;
    r->len = out_len;
    r->truncated = truncated;
    r->total_lines = total;
    r->returned_lines = returned;
    meta_from_stat(&r->meta, &st);
    if (!(r->meta.path = broker_path_display(rel))) {
        broker_read_result_clear(r);
        return broker_fail(e, BROKER_E_IO, field, "out of memory");
    }
    return 0;
}

/* ---- write ---------------------------------------------------------------------------------- */

struct target {
    int dirfd; /* parent, O_PATH */
    const char *leaf;
    bool exists;
    struct stat st;
};

/* A write to REL is refused when REL, or where it really lands (DIRFD >= 0: its parent as the
 * kernel resolved it, so a symlink to `.git` inside the workspace is no way around), is a
 * protected path. */
static int check_protected(const struct tool_ctx *ctx, const char *rel, int dirfd, const char *leaf,
                           const char *field, struct broker_err *e)
{
    if (!ctx->n_protected)
        return 0;
    const char *pat = broker_protected_match(ctx->protected_paths, ctx->n_protected, rel);
    _cleanup_free_ char *real = NULL;
    if (!pat && dirfd >= 0) {
        _cleanup_free_ char *dir = broker_resolved_rel(ctx->root_fd, dirfd);
        real = dir && *dir ? util_printf("%s/%s", dir, leaf) : dir ? strdup(leaf) : NULL;
        if (!real)
            return broker_fail(e, BROKER_E_DENIED, field,
                               "/%s: where it lands cannot be told, so it is not written", rel);
        pat = broker_protected_match(ctx->protected_paths, ctx->n_protected, real);
    }
    if (pat)
        return broker_fail(
            e, BROKER_E_DENIED, field,
            "/%s is a protected path (policy protected_paths: \"%s\"): git or another tool "
            "would run what is written there, so agents never write it",
            real ? real : rel, pat);
    return 0;
}

/* The workspace's storage budget: what it holds now, less the file replaced, plus NEW_LEN. */
static int check_storage(const struct tool_ctx *ctx, const struct target *t, const char *rel,
                         uint64_t new_len, struct broker_err *e)
{
    if (!ctx->storage_bytes)
        return 0;
    uint64_t used = 0;
    int r = broker_storage_used(ctx->root_fd, &used);
    if (r < 0 && r != -EFBIG)
        return broker_fail(e, BROKER_E_IO, "content", "cannot measure the workspace: %s", strerror(-r));
    uint64_t old = t->exists ? (uint64_t)t->st.st_size : 0;
    uint64_t after = (used > old ? used - old : 0) + new_len;
    if (r == -EFBIG)
        return broker_fail(
            e, BROKER_E_TOO_LARGE, "content",
            "the workspace holds more entries or deeper directories than its storage budget "
            "can measure; remove some before writing /%s",
            rel);
    if (after > ctx->storage_bytes)
        return broker_fail(
            e, BROKER_E_TOO_LARGE, "content",
            "writing /%s would make the workspace hold %ju bytes, over its storage budget of "
            "%ju bytes (storage_bytes)",
            rel, (uintmax_t)after, (uintmax_t)ctx->storage_bytes);
    return 0;
}

/* Opens the parent of rel and looks at the leaf without following it: a write never goes
 * through a symlink (the rename would replace the link, or the link could lead out). */
static int target_open(const struct tool_ctx *ctx, const char *rel, bool mkdirs, const char *field,
                       struct target *t, struct broker_err *e)
{
    if (check_protected(ctx, rel, -1, NULL, field, e) < 0)
        return -1;
    t->dirfd = broker_open_parent(ctx, rel, mkdirs, field, &t->leaf, e);
    if (t->dirfd < 0)
        return -1;
    if (check_protected(ctx, rel, t->dirfd, t->leaf, field, e) < 0)
        return -1;
    if (fstatat(t->dirfd, t->leaf, &t->st, AT_SYMLINK_NOFOLLOW) == 0) {
        t->exists = true;
        if (S_ISLNK(t->st.st_mode))
            return broker_fail(
                e, BROKER_E_DENIED, field,
                "/%s is a symlink; writes do not follow symlinks (write the target's own path)", rel);
        return check_regular(&t->st, field, rel, e);
    }
    if (errno != ENOENT)
        return broker_fail(e, BROKER_E_IO, field, "/%s: %s", rel, strerror(errno));
    t->exists = false;
    return 0;
}

/* Reads the whole existing target (no symlink followed), refusing more than max bytes. */
static int target_slurp(const struct target *t, const char *rel, uint64_t max, const char *field,
                        char **data, size_t *len, struct broker_err *e)
{
    _cleanup_close_ int fd = broker_openat(t->dirfd, t->leaf, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0,
                                           RESOLVE_NO_SYMLINKS, field, e);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return broker_fail(e, BROKER_E_IO, field, "/%s: %s", rel, strerror(errno));
    if (check_regular(&st, field, rel, e) < 0)
        return -1;
    if ((uint64_t)st.st_size > max)
        return broker_fail(e, BROKER_E_TOO_LARGE, field, "/%s is %ju bytes, over the limit of %ju bytes",
                           rel, (uintmax_t)st.st_size, (uintmax_t)max);
    size_t want = (size_t)st.st_size;
    char *buf = malloc(want + 1);
    if (!buf)
        return broker_fail(e, BROKER_E_IO, field, "out of memory");
    ssize_t n = util_read_all(fd, buf, want + 1);
    if (n < 0 || (size_t)n > want) {
        free(buf);
        return n < 0 ? broker_fail(e, BROKER_E_IO, field, "/%s: %s", rel, strerror((int)-n))
                     : broker_fail(e, BROKER_E_IO, field, "/%s changed while being read", rel);
    }
    buf[n] = '\0';
    *data = buf;
    *len = (size_t)n;
    return 0;
}

/* Writes parts into a fresh temp file beside the target and renames it over the target. */
static int target_replace(const struct target *t, const char *rel, const char *const *parts,
                          const size_t *lens, size_t n_parts, bool noreplace, const char *field,
                          struct broker_err *e)
{
    char tmp[64];
    uint8_t rnd[8];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return broker_fail(e, BROKER_E_IO, field, "getrandom: %s", strerror(errno));
    snprintf(tmp, sizeof(tmp), ".corral-%02x%02x%02x%02x%02x%02x%02x%02x.tmp", rnd[0], rnd[1], rnd[2],
             rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
    /* The mode is set explicitly below, so the process umask (shared by threads) is moot. */
    _cleanup_close_ int fd = openat(t->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                    0600);
    if (fd < 0) {
        int err = errno;
        e->sys_errno = err;
        if (err == EACCES || err == EPERM || err == EROFS)
            return broker_fail(e, BROKER_E_DENIED, field, "/%s: cannot create a file there: %s", rel,
                               strerror(err));
        return broker_fail(e, err == ENOSPC || err == EDQUOT ? BROKER_E_TOO_LARGE : BROKER_E_IO, field,
                           "/%s: %s", rel, strerror(err));
    }
    int err = 0;
    for (size_t i = 0; i < n_parts && !err; i++)
        err = -util_write_all(fd, parts[i], lens[i]);
    struct stat dst;
    mode_t mode = t->exists ? (t->st.st_mode & 07777) : 0644;
    uid_t uid = t->exists ? t->st.st_uid : (uid_t)-1;
    gid_t gid = t->exists ? t->st.st_gid : (gid_t)-1;
    if (!t->exists && fstat(t->dirfd, &dst) == 0) {
        uid = dst.st_uid;
        gid = dst.st_gid;
    }
    if (!err && fchown(fd, uid, gid) < 0 && errno != EPERM)
        err = errno;
    if (!err && fchmod(fd, mode) < 0)
        err = errno;
    if (!err && renameat2(t->dirfd, tmp, t->dirfd, t->leaf, noreplace ? RENAME_NOREPLACE : 0) < 0)
        err = errno;
    if (err) {
        unlinkat(t->dirfd, tmp, 0);
        e->sys_errno = err; /* so a surface can tell a full disk from a size limit */
        if (err == EEXIST)
            return broker_fail(e, BROKER_E_EXISTS, field, "/%s already exists (mode \"create\")", rel);
        if (err == ENOSPC || err == EDQUOT || err == EFBIG)
            return broker_fail(e, BROKER_E_TOO_LARGE, field, "/%s: %s", rel, strerror(err));
        return broker_fail(e, BROKER_E_IO, field, "/%s: %s", rel, strerror(err));
    }
    return 0;
}

/* Notes for the call's trail entry how the write left REL: its content's hash and size. */
static void note_file(const struct tool_ctx *ctx, const char *rel, const char *const *parts,
                      const size_t *lens, size_t n_parts)
{
    if (!ctx->call)
        return;
    crypto_generichash_state st;
    unsigned char h[32];
    char hex[65];
    uint64_t size = 0;
    crypto_generichash_init(&st, NULL, 0, sizeof(h));
    for (size_t i = 0; i < n_parts; i++) {
        crypto_generichash_update(&st, (const unsigned char *)parts[i], lens[i]);
        size += lens[i];
    }
    crypto_generichash_final(&st, h, sizeof(h));
    sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
    tool_changes_note(ctx->call, rel, TOOL_CHANGE_FILE, hex, size);
}

int broker_write(const struct tool_ctx *ctx, const char *path, const char *data, size_t len,
                 const struct broker_write_opts *o, char **display, size_t *written,
                 struct broker_err *e)
{
    static const char field[] = "path";
    if (display)
        *display = NULL;
    if (written)
        *written = 0;
    _cleanup_free_ char *rel = NULL;
    if (broker_path_clean(path, field, &rel, e) < 0)
        return -1;
    if (ctx->read_only)
        return broker_fail(e, BROKER_E_DENIED, field, "the workspace is read-only for this agent");
    uint64_t max = ctx->limits.max_file_size;
    if ((uint64_t)len > max)
        return broker_fail(e, BROKER_E_TOO_LARGE, "content",
                           "content is %zu bytes, over the limit of %ju bytes", len, (uintmax_t)max);
    struct target t = {.dirfd = -1};
    int r = target_open(ctx, rel, o->create_dirs, field, &t, e);
    if (r == 0 && t.exists && o->mode == BROKER_WRITE_CREATE)
        r = broker_fail(e, BROKER_E_EXISTS, field,
                        "/%s already exists (mode \"create\"; use \"overwrite\" or \"append\")", rel);
    _cleanup_free_ char *old = NULL;
    size_t old_len = 0;
    if (r == 0 && t.exists && o->mode == BROKER_WRITE_APPEND) {
        r = target_slurp(&t, rel, max, field, &old, &old_len, e);
        if (r == 0 && old_len + len > max)
            r = broker_fail(e, BROKER_E_TOO_LARGE, "content",
                            "appending %zu bytes would make /%s %zu bytes, over the limit of %ju", len,
                            rel, old_len + len, (uintmax_t)max);
    }
    if (r == 0)
        r = check_storage(ctx, &t, rel, (uint64_t)old_len + len, e);
    if (r == 0) {
        const char *parts[2] = {old ? old : "", data};
        size_t lens[2] = {old_len, len};
        r = target_replace(&t, rel, parts, lens, 2, o->mode == BROKER_WRITE_CREATE, field, e);
        if (r == 0)
            note_file(ctx, rel, parts, lens, 2);
    }
    if (t.dirfd >= 0)
        close(t.dirfd);
    if (r < 0)
        return -1;
    if (written)
        *written = len;
    if (display && !(*display = broker_path_display(rel)))
        return broker_fail(e, BROKER_E_IO, field, "out of memory");
    return 0;
}

/* ---- modify --------------------------------------------------------------------------------- */

struct text {
    char *s;
    size_t len;
};

static uint64_t count_lines(const struct text *t)
{
    uint64_t n = 0;
    for (const char *p = t->s; (p = memchr(p, '\n', t->len - (size_t)(p - t->s))); p++)
        n++;
    if (t->len && t->s[t->len - 1] != '\n')
        n++;
    return n;
}

/* Offset where line k (1-based) begins; k = lines + 1 gives the end. */
static size_t line_offset(const struct text *t, uint64_t k)
{
    size_t off = 0;
    for (uint64_t i = 1; i < k; i++) {
        const char *nl = memchr(t->s + off, '\n', t->len - off);
        if (!nl)
            return t->len;
        off = (size_t)(nl - t->s) + 1;
    }
    return off;
}

/* t[0..a) + pre + ins + t[b..len) into t, refusing a result over max. */
static int splice_text(struct text *t, size_t a, size_t b, const char *pre, const char *ins,
                       size_t ins_len, bool add_nl, uint64_t max, const char *field,
                       struct broker_err *e)
{
    size_t pl = pre ? strlen(pre) : 0;
    size_t nl = add_nl ? 1 : 0;
    size_t keep = t->len - (b - a);
    if (ins_len > SIZE_MAX - keep - pl - nl - 1 || keep + pl + ins_len + nl > max)
        return broker_fail(e, BROKER_E_TOO_LARGE, field,
                           "the file would grow over the limit of %ju bytes", (uintmax_t)max);
    size_t len = keep + pl + ins_len + nl;
    char *s = malloc(len + 1);
    if (!s)
        return broker_fail(e, BROKER_E_IO, field, "out of memory");
    memcpy(s, t->s, a);
    if (pl)
        memcpy(s + a, pre, pl);
    memcpy(s + a + pl, ins, ins_len);
    if (add_nl)
        s[a + pl + ins_len] = '\n';
    memcpy(s + a + pl + ins_len + nl, t->s + b, t->len - b);
    s[len] = '\0';
    free(t->s);
    t->s = s;
    t->len = len;
    return 0;
}

static int apply_edit(struct text *t, const struct broker_edit *op, size_t idx, uint64_t max,
                      struct broker_err *e)
{
    char field[64];
    uint64_t lines = count_lines(t);
    switch (op->kind) {
    case BROKER_EDIT_REPLACE_LINES:
    case BROKER_EDIT_DELETE_LINES: {
        if (op->start < 1 || op->start > lines) {
            snprintf(field, sizeof(field), "operations[%zu].startLine", idx);
            return broker_fail(e, BROKER_E_INVALID, field,
                               "%s is %ju; the file has %ju lines (lines are 1-indexed)", field,
                               (uintmax_t)op->start, (uintmax_t)lines);
        }
        if (op->end < op->start || op->end > lines) {
            snprintf(field, sizeof(field), "operations[%zu].endLine", idx);
            return broker_fail(e, BROKER_E_INVALID, field,
                               "%s is %ju; it must be between startLine (%ju) and the last line (%ju)",
                               field, (uintmax_t)op->end, (uintmax_t)op->start, (uintmax_t)lines);
        }
        size_t a = line_offset(t, op->start), b = line_offset(t, op->end + 1);
        snprintf(field, sizeof(field), "operations[%zu]", idx);
        if (op->kind == BROKER_EDIT_DELETE_LINES)
            return splice_text(t, a, b, NULL, "", 0, false, max, field, e);
        size_t tl = strlen(op->text);
        /* newContent is whole lines: it ends with a newline when the lines it replaces did. */
        bool add_nl = (tl == 0 || op->text[tl - 1] != '\n') && b > 0 && t->s[b - 1] == '\n';
        if (tl == 0 && !add_nl)
            add_nl = false;
        return splice_text(t, a, b, NULL, op->text, tl, add_nl, max, field, e);
    }
    case BROKER_EDIT_INSERT_LINES: {
        if (op->after > lines) {
            snprintf(field, sizeof(field), "operations[%zu].afterLine", idx);
            return broker_fail(e, BROKER_E_INVALID, field,
                               "%s is %ju; the file has %ju lines (0 inserts at the top)", field,
                               (uintmax_t)op->after, (uintmax_t)lines);
        }
        size_t at = line_offset(t, op->after + 1);
        size_t tl = strlen(op->text);
        bool add_nl = tl == 0 || op->text[tl - 1] != '\n';
        const char *pre = at == t->len && t->len > 0 && t->s[t->len - 1] != '\n' ? "\n" : NULL;
        snprintf(field, sizeof(field), "operations[%zu]", idx);
        return splice_text(t, at, at, pre, op->text, tl, add_nl, max, field, e);
    }
    case BROKER_EDIT_REGEX: {
        snprintf(field, sizeof(field), "operations[%zu].pattern", idx);
        struct broker_regex *re = NULL;
        bool global = false;
        if (broker_regex_new(op->pattern, false, op->flags, field, &re, &global, e) < 0)
            return -1;
        char *out = NULL;
        size_t out_len = 0;
        int r = broker_regex_substitute(re, t->s, t->len, op->replacement, global,
                                        max > SIZE_MAX ? SIZE_MAX : (size_t)max, field, &out, &out_len,
                                        e);
        broker_regex_free(re);
        if (r < 0)
            return -1;
        if (out_len > max) {
            free(out);
            return broker_fail(e, BROKER_E_TOO_LARGE, field,
                               "the file would grow over the limit of %ju bytes", (uintmax_t)max);
        }
        free(t->s);
        t->s = out;
        t->len = out_len;
        return 0;
    }
    case BROKER_EDIT_EXACT: {
        snprintf(field, sizeof(field), "operations[%zu].find", idx);
        size_t pl = strlen(op->pattern);
        if (pl == 0)
            return broker_fail(e, BROKER_E_INVALID, field, "%s is empty", field);
        const char *hit = memmem(t->s, t->len, op->pattern, pl);
        if (!hit)
            return broker_fail(e, BROKER_E_NO_MATCH, field, "%s was not found in the file", field);
        size_t at = (size_t)(hit - t->s);
        if (memmem(hit + 1, t->len - at - 1, op->pattern, pl))
            return broker_fail(e, BROKER_E_NOT_UNIQUE, field,
                               "%s occurs more than once; add surrounding text to make it unique",
                               field);
        return splice_text(t, at, at + pl, NULL, op->replacement, strlen(op->replacement), false, max,
                           field, e);
    }
    }
    return broker_fail(e, BROKER_E_INVALID, "operations", "unknown operation");
}

int broker_modify(const struct tool_ctx *ctx, const char *path, const struct broker_edit *ops,
                  size_t n_ops, char **display, struct broker_err *e)
{
    static const char field[] = "path";
    if (display)
        *display = NULL;
    _cleanup_free_ char *rel = NULL;
    if (broker_path_clean(path, field, &rel, e) < 0)
        return -1;
    if (ctx->read_only)
        return broker_fail(e, BROKER_E_DENIED, field, "the workspace is read-only for this agent");
    uint64_t max = ctx->limits.max_file_size;
    struct target t = {.dirfd = -1};
    struct text txt = {0};
    int r = target_open(ctx, rel, false, field, &t, e);
    if (r == 0 && !t.exists)
        r = broker_fail(e, BROKER_E_NOT_FOUND, field, "/%s does not exist in the workspace", rel);
    if (r == 0)
        r = target_slurp(&t, rel, max, field, &txt.s, &txt.len, e);
    if (r == 0 && (memchr(txt.s, 0, txt.len) || !broker_utf8_valid(txt.s, txt.len)))
        r = broker_fail(e, BROKER_E_BINARY, field,
                        "/%s is a binary file (NUL bytes or invalid UTF-8); it cannot be edited as text",
                        rel);
    /* All in memory first: a failing operation leaves the file untouched. */
    for (size_t i = 0; r == 0 && i < n_ops; i++)
        r = apply_edit(&txt, &ops[i], i, max, e);
    if (r == 0)
        r = check_storage(ctx, &t, rel, txt.len, e);
    if (r == 0) {
        const char *parts[1] = {txt.s};
        size_t lens[1] = {txt.len};
        r = target_replace(&t, rel, parts, lens, 1, false, field, e);
        if (r == 0)
            note_file(ctx, rel, parts, lens, 1);
    }
    free(txt.s);
    if (t.dirfd >= 0)
        close(t.dirfd);
    if (r < 0)
        return -1;
    if (display && !(*display = broker_path_display(rel)))
        return broker_fail(e, BROKER_E_IO, field, "out of memory");
    return 0;
}

/* ---- remove, mkdir (for the surfaces that have them: file.delete, rmdir, mkdir) ------------ */

/* What remove and mkdir check before they change an entry: the path is clean, the workspace
 * writable, the entry not the root (ROOT_CODE, ROOT_WHY) nor protected, before and after its
 * parent is opened. The parent's fd (the caller closes it) with *REL and *LEAF, or -1. */
static int writable_parent(const struct tool_ctx *ctx, const char *path, bool parents,
                           enum broker_kind root_code, const char *root_why, char **rel,
                           const char **leaf, struct broker_err *e)
{
    static const char field[] = "path";
    *rel = NULL;
    if (broker_path_clean(path, field, rel, e) < 0)
        return -1;
    if (ctx->read_only)
        return broker_fail(e, BROKER_E_DENIED, field, "the workspace is read-only for this agent");
    if (!**rel)
        return broker_fail(e, root_code, field, "%s", root_why);
    if (check_protected(ctx, *rel, -1, NULL, field, e) < 0)
        return -1;
    int dirfd = broker_open_parent(ctx, *rel, parents, field, leaf, e);
    if (dirfd >= 0 && check_protected(ctx, *rel, dirfd, *leaf, field, e) < 0) {
        close(dirfd);
        return -1;
    }
    return dirfd;
}

int broker_remove(const struct tool_ctx *ctx, const char *path, bool directory, struct broker_err *e)
{
    static const char field[] = "path";
    _cleanup_free_ char *rel = NULL;
    const char *leaf;
    _cleanup_close_ int dirfd = writable_parent(ctx, path, false, BROKER_E_DENIED,
                                                "the workspace root cannot be removed", &rel, &leaf, e);
    if (dirfd < 0)
        return -1;
    struct stat st;
    if (fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return broker_fail(e, errno == ENOENT ? BROKER_E_NOT_FOUND : BROKER_E_IO, field, "/%s: %s", rel,
                           errno == ENOENT ? "does not exist in the workspace" : strerror(errno));
    /* A symlink is removed as itself, never through: its target is left alone. */
    if (directory && !S_ISDIR(st.st_mode))
        return broker_fail(e, BROKER_E_NOT_DIR, field, "/%s is not a directory", rel);
    if (!directory && S_ISDIR(st.st_mode))
        return broker_fail(e, BROKER_E_IS_DIR, field, "/%s is a directory", rel);
    if (unlinkat(dirfd, leaf, directory ? AT_REMOVEDIR : 0) < 0) {
        int err = errno;
        e->sys_errno = err; /* a refusal by the file system, not by containment */
        if (err == ENOTEMPTY || err == EEXIST)
            return broker_fail(e, BROKER_E_INVALID, field, "/%s is not empty", rel);
        return broker_fail(e,
                           err == EACCES || err == EPERM || err == EROFS ? BROKER_E_DENIED : BROKER_E_IO,
                           field, "/%s: %s", rel, strerror(err));
    }
    tool_changes_note(ctx->call, rel, TOOL_CHANGE_REMOVED, NULL, 0);
    return 0;
}

int broker_mkdir(const struct tool_ctx *ctx, const char *path, bool parents, struct broker_err *e)
{
    static const char field[] = "path";
    _cleanup_free_ char *rel = NULL;
    const char *leaf;
    _cleanup_close_ int dirfd = writable_parent(ctx, path, parents, BROKER_E_EXISTS,
                                                "the workspace root already exists", &rel, &leaf, e);
    if (dirfd < 0)
        return -1;
    if (mkdirat(dirfd, leaf, 0755) < 0) {
        int err = errno;
        struct stat st;
        if (err == EEXIST && parents && fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISDIR(st.st_mode)) {
            tool_changes_note(ctx->call, rel, TOOL_CHANGE_DIR, NULL, 0);
            return 0;
        }
        if (err == EEXIST)
            return broker_fail(e, BROKER_E_EXISTS, field, "/%s already exists", rel);
        return broker_fail(e,
                           err == EACCES || err == EPERM || err == EROFS ? BROKER_E_DENIED
                           : err == ENOSPC || err == EDQUOT              ? BROKER_E_TOO_LARGE
                                                                         : BROKER_E_IO,
                           field, "/%s: %s", rel, strerror(err));
    }
    struct stat pst;
    if (fstat(dirfd, &pst) == 0)
        (void)!fchownat(dirfd, leaf, pst.st_uid, pst.st_gid, AT_SYMLINK_NOFOLLOW);
    tool_changes_note(ctx->call, rel, TOOL_CHANGE_DIR, NULL, 0);
    return 0;
}

/* ---- explore -------------------------------------------------------------------------------- */

void broker_list_clear(struct broker_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        broker_meta_clear(&l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

struct walk {
    const struct broker_walk_opts *o;
    const struct broker_filter *filter;
    const struct glob *include; /* matched against the path below the start */
    size_t start_len;           /* of the start's rel, and its '/' when not the root */
    struct broker_list *out;
    struct broker_err *e;
};

static int list_push(struct walk *w, int dirfd, const char *rel, const char *name, bool is_dir,
                     bool is_link)
{
    struct broker_list *l = w->out;
    l->total++;
    if (l->n >= w->o->max_entries) {
        l->truncated = true;
        return 0;
    }
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        struct broker_meta *tmp = realloc(l->v, nc * sizeof(*tmp));
        if (!tmp)
            return broker_fail(w->e, BROKER_E_IO, "path", "out of memory");
        l->v = tmp;
        l->cap = nc;
    }
    struct broker_meta *m = &l->v[l->n];
    memset(m, 0, sizeof(*m));
    m->is_dir = is_dir;
    m->is_symlink = is_link;
    if (w->o->want_meta) {
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            meta_from_stat(m, &st);
    }
    if (!(m->path = broker_path_display(rel)))
        return broker_fail(w->e, BROKER_E_IO, "path", "out of memory");
    l->n++;
    return 0;
}

/* DIRFD is readable (O_RDONLY | O_DIRECTORY) and beneath the root. */
static int walk_dir(struct walk *w, int dirfd, const char *rel, unsigned depth)
{
    struct broker_dirents d = {0};
    if (broker_dirents_read(&d, dirfd) < 0) {
        broker_dirents_free(&d);
        return 0; /* unreadable directory: listed, not entered */
    }
    int r = 0;
    size_t rl = strlen(rel);
    char *child = NULL;
    size_t child_cap = 0;
    for (size_t i = 0; i < d.n && r == 0; i++) {
        const char *name = broker_dirent_name(&d, i);
        size_t nl = strlen(name);
        size_t need = rl + 1 + nl + 1;
        if (need > child_cap) {
            char *tmp = realloc(child, need * 2);
            if (!tmp) {
                r = broker_fail(w->e, BROKER_E_IO, "path", "out of memory");
                break;
            }
            child = tmp;
            child_cap = need * 2;
        }
        if (rl) {
            memcpy(child, rel, rl);
            child[rl] = '/';
            memcpy(child + rl + 1, name, nl + 1);
        } else {
            memcpy(child, name, nl + 1);
        }
        unsigned char type = d.v[i].type;
        if (type == DT_UNKNOWN) {
            struct stat st;
            if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                continue;
            type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
        }
        bool is_dir = type == DT_DIR;
        if (broker_filter_excludes(w->filter, child, name))
            continue;
        bool listed = !(w->o->files_only && is_dir) &&
                      (!w->include || glob_matches(w->include, child + w->start_len));
        if (listed)
            r = list_push(w, dirfd, child, name, is_dir, type == DT_LNK);
        if (r < 0 || !is_dir || !w->o->recursive || depth >= w->o->max_depth)
            continue;
        if (broker_filter_prunes(w->filter, child, name, false))
            continue;
        struct broker_err sub_err;
        int sub = broker_openat(dirfd, name, O_RDONLY | O_DIRECTORY, 0, RESOLVE_NO_SYMLINKS, "path",
                                &sub_err);
        if (sub < 0)
            continue; /* replaced under us or unreadable: skipped, never followed */
        r = walk_dir(w, sub, child, depth + 1);
        close(sub);
    }
    free(child);
    broker_dirents_free(&d);
    return r;
}

int broker_explore(const struct tool_ctx *ctx, const char *path, const struct broker_walk_opts *o,
                   struct broker_list *out, struct broker_err *e)
{
    memset(out, 0, sizeof(*out));
    _cleanup_free_ char *rel = NULL;
    if (broker_path_clean(path, "path", &rel, e) < 0)
        return -1;
    _cleanup_close_ int fd = broker_openat(ctx->root_fd, rel, O_PATH, 0, 0, "path", e);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return broker_fail(e, BROKER_E_IO, "path", "/%s: %s", rel, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return broker_fail(e, BROKER_E_NOT_DIR, "path", "/%s is a file, not a directory", rel);
    struct glob *inc = NULL;
    if (o->include_glob && glob_new(o->include_glob, &inc) < 0)
        return broker_fail(e, BROKER_E_PATTERN, "pattern", "pattern \"%.200s\" is not a valid glob",
                           o->include_glob);
    struct broker_filter *f = NULL;
    if (broker_filter_new(o->exclude, o->n_exclude, "excludePatterns", &f, e) < 0) {
        glob_free(inc);
        return -1;
    }
    struct walk w = {.o = o,
                     .filter = f,
                     .include = inc,
                     .start_len = *rel ? strlen(rel) + 1 : 0,
                     .out = out,
                     .e = e};
    int r = 0;
    if (!(o->recursive && *rel && broker_filter_prunes(f, rel, "", true))) {
        int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
            r = broker_fail(e, BROKER_E_DENIED, "path", "/%s cannot be listed: %s", rel,
                            strerror(errno));
        else {
            r = walk_dir(&w, dfd, rel, 1);
            close(dfd);
        }
    }
    broker_filter_free(f);
    glob_free(inc);
    if (r < 0)
        broker_list_clear(out);
    return r;
}
