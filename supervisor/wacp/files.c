/* supervisor/wacp/files.c: the files of WACP workspaces: copies at creation, content-addressed
 * snapshots for checkpoints, overlap detection and integration into the parent's directory.
 * Walks open one name at a time with O_NOFOLLOW: links are never followed, only regular files
 * and directories are taken, and every walk is bounded in files, bytes and depth. */
#include "supervisor/wacp/files.h"

#include "supervisor/wacp/core.h"
#include "tools/broker/broker.h"

#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#define MAX_DEPTH 64

void wacp_files_hash_hex(const void *data, size_t len, char out[WACP_HASH_HEX])
{
    unsigned char h[32];
    crypto_generichash(h, sizeof(h), data, len, NULL, 0);
    sodium_bin2hex(out, WACP_HASH_HEX, h, sizeof(h));
}

void wacp_files_manifest_clear(struct wacp_manifest *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->v[i].path);
    free(m->v);
    memset(m, 0, sizeof(*m));
}

int wacp_files_manifest_add(struct wacp_manifest *m, const char *path, const char *hash, uint64_t size)
{
    if (!wacp_core_grow((void **)&m->v, &m->cap, m->n + 1, sizeof(*m->v)))
        return -ENOMEM;
    char *p = strdup(path);
    if (!p)
        return -ENOMEM;
    struct wacp_file *f = &m->v[m->n++];
    f->path = p;
    snprintf(f->hash, sizeof(f->hash), "%s", hash ? hash : "");
    f->size = size;
    return 0;
}

int wacp_files_manifest_copy(struct wacp_manifest *to, const struct wacp_manifest *from)
{
    for (size_t i = 0; from && i < from->n; i++) {
        if (wacp_files_manifest_add(to, from->v[i].path, from->v[i].hash, from->v[i].size) < 0)
            return -ENOMEM;
        to->v[to->n - 1].mode = from->v[i].mode;
    }
    return 0;
}

const struct wacp_file *wacp_files_manifest_get(const struct wacp_manifest *m, const char *path)
{
    for (size_t i = 0; m && i < m->n; i++)
        if (!strcmp(m->v[i].path, path))
            return &m->v[i];
    return NULL;
}

static int file_cmp(const void *a, const void *b)
{
    return strcmp(((const struct wacp_file *)a)->path, ((const struct wacp_file *)b)->path);
}

cJSON *wacp_files_manifest_json(const struct wacp_manifest *m)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < m->n; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(a, o))
            break;
        cJSON_AddStringToObject(o, "path", m->v[i].path);
        if (m->v[i].hash[0]) {
            cJSON_AddStringToObject(o, "blake2b", m->v[i].hash);
            cJSON_AddNumberToObject(o, "size", (double)m->v[i].size);
        } else {
            cJSON_AddBoolToObject(o, "deleted", true);
        }
    }
    return a;
}

bool wacp_files_path_ok(const char *rel)
{
    size_t n = rel ? strlen(rel) : 0;
    if (n == 0 || n > 4096 || rel[0] == '/' || rel[n - 1] == '/')
        return false;
    for (const char *s = rel; *s;) {
        size_t l = strcspn(s, "/");
        if (l == 0 || l > 255 || (l == 1 && s[0] == '.') || (l == 2 && s[0] == '.' && s[1] == '.'))
            return false;
        s += l;
        if (*s == '/')
            s++;
    }
    return true;
}

int wacp_files_mkdirs(const char *path, struct cerr *err)
{
    _cleanup_free_ char *p = strdup(path);
    if (!p)
        return cerr_set(err, ENOMEM, "out of memory");
    for (char *s = p + 1;; s++) {
        if (*s == '/' || !*s) {
            char c = *s;
            *s = 0;
            if (mkdir(p, 0700) < 0 && errno != EEXIST)
                return cerr_set(err, errno, "cannot create directory %s: %s", p, strerror(errno));
            *s = c;
            if (!c)
                break;
        }
    }
    return 0;
}

/* Reads a whole regular file (opened by the caller) up to WACP_FILES_MAX_FILE bytes. */
static int read_fd(int fd, char **data, size_t *len, struct cerr *err, const char *rel)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return cerr_set(err, errno, "cannot stat %s: %s", rel, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return cerr_set(err, EINVAL, "%s is not a regular file", rel);
    if ((uint64_t)st.st_size > WACP_FILES_MAX_FILE)
        return cerr_set(err, EFBIG, "%s is larger than %llu bytes", rel,
                        (unsigned long long)WACP_FILES_MAX_FILE);
    size_t n = (size_t)st.st_size;
    char *b = malloc(n ? n : 1);
    if (!b)
        return cerr_set(err, ENOMEM, "out of memory reading %s", rel);
    ssize_t got = util_read_all(fd, b, n);
    if (got < 0) {
        free(b);
        return cerr_set(err, (int)-got, "cannot read %s: %s", rel, strerror((int)-got));
    }
    *data = b;
    *len = (size_t)got;
    return 0;
}

/* Opens REL under DIRFD by the broker's own path (openat2 beneath DIRFD, no symlink at any
 * component, no magic link): a link an agent planted in its copy is never followed. */
static int open_beneath(int dirfd, const char *rel, int flags)
{
    struct broker_err be;
    int fd = broker_openat(dirfd, rel, flags | O_NOFOLLOW, 0, RESOLVE_NO_SYMLINKS, NULL, &be);
    if (fd >= 0)
        return fd;
    return be.sys_errno ? -be.sys_errno : -EACCES;
}

struct walk {
    struct wacp_manifest *out; /* hashes of regular files */
    int dst_root;              /* >= 0: copy into this directory */
    size_t files;
    uint64_t bytes;
    struct cerr *err;
};

static int walk_dir(struct walk *wk, int dfd, int dst, const char *prefix, int depth)
{
    if (depth > MAX_DEPTH)
        return cerr_set(wk->err, ELOOP, "directories nest deeper than %d under %s", MAX_DEPTH,
                        prefix[0] ? prefix : ".");
    int dup_fd = dup(dfd);
    if (dup_fd < 0)
        return cerr_set(wk->err, errno, "dup: %s", strerror(errno));
    DIR *d = fdopendir(dup_fd);
    if (!d) {
        close(dup_fd);
        return cerr_set(wk->err, errno, "cannot list %s: %s", prefix, strerror(errno));
    }
    rewinddir(d); /* from the first name whatever the description's offset */
    /* Names first, sorted: the manifest order and the copy do not depend on readdir order. */
    char **names = NULL;
    size_t n = 0, cap = 0;
    int r = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (!wacp_core_grow((void **)&names, &cap, n + 1, sizeof(*names)) ||
            !(names[n] = strdup(de->d_name))) {
            r = cerr_set(wk->err, ENOMEM, "out of memory");
            break;
        }
        n++;
    }
    closedir(d);
    for (size_t i = 0; i < n && !r; i++) {
        const char *name = names[i];
        _cleanup_free_ char *rel = prefix[0] ? util_printf("%s/%s", prefix, name) : strdup(name);
        if (!rel) {
            r = cerr_set(wk->err, ENOMEM, "out of memory");
            break;
        }
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* gone meanwhile */
        if (S_ISDIR(st.st_mode)) {
            _cleanup_close_ int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0)
                continue;
            _cleanup_close_ int dsub = -1;
            if (dst >= 0) {
                if (mkdirat(dst, name, 0700) < 0 && errno != EEXIST) {
                    r = cerr_set(wk->err, errno, "cannot create %s: %s", rel, strerror(errno));
                    break;
                }
                dsub = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (dsub < 0) {
                    r = cerr_set(wk->err, errno, "cannot open %s: %s", rel, strerror(errno));
                    break;
                }
            }
            r = walk_dir(wk, sub, dsub, rel, depth + 1);
            continue;
        }
        if (!S_ISREG(st.st_mode))
            continue; /* links, fifos, devices, sockets: never copied nor followed */
        if (++wk->files > WACP_FILES_MAX_FILES) {
            r = cerr_set(wk->err, EFBIG, "more than %d files", WACP_FILES_MAX_FILES);
            break;
        }
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
            continue;
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        if ((r = read_fd(fd, &data, &len, wk->err, rel)) < 0)
            break;
        wk->bytes += len;
        if (wk->bytes > WACP_FILES_MAX_BYTES) {
            r = cerr_set(wk->err, EFBIG, "more than %llu bytes of files",
                         (unsigned long long)WACP_FILES_MAX_BYTES);
            break;
        }
        char hex[WACP_HASH_HEX];
        wacp_files_hash_hex(data, len, hex);
        if (wk->out && (r = wacp_files_manifest_add(wk->out, rel, hex, len)) < 0) {
            cerr_set(wk->err, ENOMEM, "out of memory");
            break;
        }
        if (dst >= 0) {
            _cleanup_close_ int o = openat(
                dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st.st_mode & 0755);
            if (o < 0 || util_write_all(o, data, len) < 0) {
                r = cerr_set(wk->err, errno ? errno : EIO, "cannot write the copy of %s: %s", rel,
                             strerror(errno));
                break;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return r;
}

static int walk_root(int src_fd, const char *dst, struct wacp_manifest *out, struct cerr *err)
{
    /* A description of its own (not a dup): the listing's offset is this walk's alone. */
    _cleanup_close_ int sfd = openat(src_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sfd < 0)
        return cerr_set(err, errno, "cannot open the workspace directory: %s", strerror(errno));
    _cleanup_close_ int dfd = -1;
    if (dst) {
        if (mkdir(dst, 0700) < 0)
            return cerr_set(err, errno, "cannot create %s: %s", dst, strerror(errno));
        dfd = open(dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
            return cerr_set(err, errno, "cannot open %s: %s", dst, strerror(errno));
    }
    struct walk wk = {.out = out, .dst_root = dfd, .err = err};
    int r = walk_dir(&wk, sfd, dfd, "", 0);
    if (r < 0 && out)
        wacp_files_manifest_clear(out);
    if (out && out->n)
        qsort(out->v, out->n, sizeof(*out->v), file_cmp);
    return r;
}

/* Empties the directory DFD, never following a link (links are removed as names). */
static void remove_in(int dfd, int depth)
{
    if (depth > MAX_DEPTH + 1)
        return;
    int dup_fd = dup(dfd);
    DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
    if (!d) {
        if (dup_fd >= 0)
            close(dup_fd);
        return;
    }
    /* Passes until one removes nothing: removing while listing may skip names. */
    for (bool again = true; again;) {
        again = false;
        rewinddir(d);
        struct dirent *de;
        while ((de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            if (unlinkat(dfd, de->d_name, 0) == 0) {
                again = true;
                continue;
            }
            if (errno != EISDIR && errno != EPERM)
                continue;
            int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0)
                continue;
            remove_in(sub, depth + 1);
            close(sub);
            if (unlinkat(dfd, de->d_name, AT_REMOVEDIR) == 0)
                again = true;
        }
    }
    closedir(d);
}

void wacp_files_remove_tree(const char *path)
{
    _cleanup_free_ char *a = strdup(path), *b = strdup(path);
    if (!a || !b)
        return;
    _cleanup_close_ int pfd = open(dirname(a), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const char *leaf = basename(b);
    if (pfd < 0)
        return;
    _cleanup_close_ int dfd = openat(pfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return;
    remove_in(dfd, 0);
    unlinkat(pfd, leaf, AT_REMOVEDIR);
}

int wacp_files_copy_tree(int src_fd, const char *dst, struct wacp_manifest *base, struct cerr *err)
{
    return walk_root(src_fd, dst, base, err);
}

int wacp_files_scan(int dir_fd, struct wacp_manifest *out, struct cerr *err)
{
    return walk_root(dir_fd, NULL, out, err);
}

int wacp_files_dir_open(const char *path, struct cerr *err)
{
    /* Never through a link: a copy swapped for a symlink is refused, not read. */
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return cerr_set(err, errno, "cannot open the workspace directory %s: %s", path, strerror(errno));
    return fd;
}

/* Stores DATA as OBJECTS/HEX: temp file + rename, idempotent (an existing object is the same). */
static int object_put(const char *objects, const char *hex, const char *data, size_t len,
                      struct cerr *err)
{
    _cleanup_free_ char *path = util_printf("%s/%s", objects, hex);
    unsigned char rnd[8];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return cerr_set(err, errno, "getrandom: %s", strerror(errno));
    _cleanup_free_ char *tmp = util_printf("%s/.tmp-%02x%02x%02x%02x%02x%02x%02x%02x", objects, rnd[0],
                                           rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
    if (!path || !tmp)
        return cerr_set(err, ENOMEM, "out of memory");
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
        return 0;
    _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return cerr_set(err, errno, "cannot write object %s: %s", tmp, strerror(errno));
    int r = util_write_all(fd, data, len);
    if (r < 0) {
        unlink(tmp);
        return cerr_set(err, r < 0 ? -r : errno, "cannot write object %s", tmp);
    }
    if (rename(tmp, path) < 0) {
        unlink(tmp);
        return cerr_set(err, errno, "cannot store object %s: %s", path, strerror(errno));
    }
    return 0;
}

static int snap_one(int dfd, const char *rel, const char *objects, struct wacp_manifest *out,
                    uint64_t *bytes, struct cerr *err)
{
    int fd = open_beneath(dfd, rel, O_RDONLY | O_NONBLOCK);
    if (fd == -ENOENT)
        return wacp_files_manifest_add(out, rel, "", 0) < 0 ? cerr_set(err, ENOMEM, "out of memory") : 0;
    if (fd < 0)
        return cerr_set(err, -fd, "cannot open %s: %s", rel, strerror(-fd));
    _cleanup_close_ int fdc = fd;
    _cleanup_free_ char *data = NULL;
    size_t len = 0;
    int r = read_fd(fdc, &data, &len, err, rel);
    if (r < 0)
        return r;
    *bytes += len;
    if (*bytes > WACP_FILES_MAX_BYTES)
        return cerr_set(err, EFBIG, "the checkpoint's files exceed %llu bytes",
                        (unsigned long long)WACP_FILES_MAX_BYTES);
    char hex[WACP_HASH_HEX];
    wacp_files_hash_hex(data, len, hex);
    if ((r = object_put(objects, hex, data, len, err)) < 0)
        return r;
    if (wacp_files_manifest_add(out, rel, hex, len) < 0)
        return cerr_set(err, ENOMEM, "out of memory");
    struct stat st;
    if (fstat(fdc, &st) == 0)
        out->v[out->n - 1].mode = (unsigned)(st.st_mode & 07777);
    return 0;
}

int wacp_files_snapshot(int dfd, const char *const *paths, size_t n_paths,
                        const struct wacp_manifest *base, const char *objects, struct wacp_manifest *out,
                        struct cerr *err)
{
    uint64_t bytes = 0;
    int r = 0;
    if (paths) {
        if (n_paths > WACP_FILES_MAX_FILES)
            return cerr_set(err, EFBIG, "more than %d files", WACP_FILES_MAX_FILES);
        for (size_t i = 0; i < n_paths && !r; i++) {
            if (wacp_files_manifest_get(out, paths[i]))
                continue;
            r = snap_one(dfd, paths[i], objects, out, &bytes, err);
        }
    } else {
        struct wacp_manifest now = {0};
        if ((r = wacp_files_scan(dfd, &now, err)) < 0)
            return r;
        for (size_t i = 0; i < now.n && !r; i++) {
            const struct wacp_file *b = wacp_files_manifest_get(base, now.v[i].path);
            if (b && !strcmp(b->hash, now.v[i].hash))
                continue;
            r = snap_one(dfd, now.v[i].path, objects, out, &bytes, err);
        }
        for (size_t i = 0; base && i < base->n && !r; i++)
            if (!wacp_files_manifest_get(&now, base->v[i].path) &&
                wacp_files_manifest_add(out, base->v[i].path, "", 0) < 0)
                r = cerr_set(err, ENOMEM, "out of memory");
        wacp_files_manifest_clear(&now);
    }
    if (r < 0) {
        wacp_files_manifest_clear(out);
        return r;
    }
    /* One sync for the objects (not one fsync each): they are durable before the checkpoint's
     * entry that names them is recorded. */
    _cleanup_close_ int ofd = open(objects, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ofd < 0 || syncfs(ofd) < 0) {
        wacp_files_manifest_clear(out);
        return cerr_set(err, errno, "cannot sync the objects in %s: %s", objects, strerror(errno));
    }
    if (out->n)
        qsort(out->v, out->n, sizeof(*out->v), file_cmp);
    return 0;
}

/* The hash of DIR/REL now: "" when absent (or not a regular file). */
static int hash_now(int dfd, const char *rel, char hex[WACP_HASH_HEX], struct cerr *err)
{
    hex[0] = 0;
    int fd = open_beneath(dfd, rel, O_RDONLY | O_NONBLOCK);
    if (fd < 0)
        return 0;
    _cleanup_close_ int fdc = fd;
    _cleanup_free_ char *data = NULL;
    size_t len = 0;
    struct cerr e2;
    if (read_fd(fdc, &data, &len, &e2, rel) < 0) {
        if (e2.code == -ENOMEM)
            return cerr_set(err, ENOMEM, "out of memory");
        snprintf(hex, WACP_HASH_HEX, "unreadable");
        return 0;
    }
    wacp_files_hash_hex(data, len, hex);
    return 0;
}

int wacp_files_state_at(int dfd, const char *rel, char hex[WACP_HASH_HEX], struct cerr *err)
{
    int fd = open_beneath(dfd, rel, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
    if (fd >= 0) {
        close(fd);
        snprintf(hex, WACP_HASH_HEX, "%s", WACP_FILES_IS_DIR);
        return 0;
    }
    return hash_now(dfd, rel, hex, err);
}

int wacp_files_overlaps(int dfd, const struct wacp_manifest *m, const struct wacp_manifest *base,
                        struct wacp_manifest *out, struct cerr *err)
{
    for (size_t i = 0; i < m->n; i++) {
        char now[WACP_HASH_HEX];
        int r = hash_now(dfd, m->v[i].path, now, err);
        if (r < 0)
            return r;
        const struct wacp_file *b = wacp_files_manifest_get(base, m->v[i].path);
        const char *was = b ? b->hash : "";
        /* Changed behind the child, and not already what the child wants. */
        if (strcmp(now, was) != 0 && strcmp(now, m->v[i].hash) != 0 &&
            wacp_files_manifest_add(out, m->v[i].path, now, 0) < 0)
            return cerr_set(err, ENOMEM, "out of memory");
    }
    return 0;
}

/* ---- integration's writes into a parent's directory, the one
 * place the model changes files an admin may own (DIR). Everything is checked before the first
 * byte changes: clean paths no deeper than a workspace may nest, no protected path, no link or
 * non-directory on the way, every object present and matching its hash. Then each file is
 * written into an unnamed temporary (O_TMPFILE: nothing to plant at its name, nothing left by a
 * crash), given its owner and mode, and linked into place: a new file by its own name (never
 * replacing what appeared meanwhile), an existing one through a fresh random name renamed over
 * it. Owners and modes follow DIR: an existing file keeps its own; a new file or directory
 * belongs to DIR's owner, a file's mode is its own bits masked with 0755, a directory's 0755.
 * Nothing is ever opened that could block (O_NONBLOCK) or that is not a regular file. */

static unsigned depth_of(const char *rel)
{
    unsigned d = 0;
    for (const char *s = rel; *s; s++)
        d += *s == '/';
    return d;
}

int wacp_files_check_paths(const struct wacp_manifest *m, const struct wacp_files_rules *rules,
                           struct cerr *err)
{
    for (size_t i = 0; i < m->n; i++) {
        const char *rel = m->v[i].path;
        if (!wacp_files_path_ok(rel))
            return cerr_set(err, EINVAL, "bad path in a manifest");
        if (depth_of(rel) > WACP_FILES_MAX_DEPTH)
            return cerr_set(err, ELOOP,
                            "'%.200s' lies %u directories deep, deeper than a workspace may "
                            "nest (%d)",
                            rel, depth_of(rel), WACP_FILES_MAX_DEPTH);
        const char *pat = rules ? broker_protected_match(rules->protected_paths, rules->n_protected, rel)
                                : NULL;
        if (pat)
            return cerr_set(err, EPERM,
                            "'%.200s' is a protected path (policy protected_paths: \"%.100s\"): "
                            "no agent writes it and no integration carries it",
                            rel, pat);
    }
    return 0;
}

/* Whether REL can be written under DFD without a link or a non-directory on the way, and
 * without replacing a directory or anything but a regular file. */
static int check_target(int dfd, const char *rel, struct cerr *err)
{
    _cleanup_free_ char *p = strdup(rel);
    if (!p)
        return cerr_set(err, ENOMEM, "out of memory");
    _cleanup_close_ int cur = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    if (cur < 0)
        return cerr_set(err, errno, "dup: %s", strerror(errno));
    char *save = NULL;
    char *part = strtok_r(p, "/", &save);
    while (part) {
        char *next = strtok_r(NULL, "/", &save);
        struct stat st;
        if (fstatat(cur, part, &st, AT_SYMLINK_NOFOLLOW) < 0)
            return 0; /* missing: made fresh */
        if (!next)
            return S_ISREG(st.st_mode)
                       ? 0
                       : cerr_set(err, S_ISDIR(st.st_mode) ? EISDIR : EEXIST,
                                  "%s is %s in the parent, and integration replaces regular files only",
                                  rel, S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
        if (!S_ISDIR(st.st_mode))
            return cerr_set(err, ENOTDIR,
                            "%s: a part of the path is a link or a file in the parent, "
                            "and integration never writes through one",
                            rel);
        int fd = openat(cur, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return cerr_set(err, errno, "%s: %s", rel, strerror(errno));
        close(cur);
        cur = fd;
        part = next;
    }
    return 0;
}

static bool hex_ok(const char *h)
{
    size_t n = strlen(h);
    if (n != WACP_HASH_HEX - 1)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')))
            return false;
    return true;
}

/* Opens the object of F (a regular file, never through a link, never blocking) and, when OUT >= 0,
 * copies it there; either way its content must hash to F's hash and have F's size: an object
 * swapped or cut on disk is refused, never integrated. */
static int object_pass(int objects_fd, const struct wacp_file *f, int out, struct cerr *err)
{
    if (!hex_ok(f->hash))
        return cerr_set(err, EINVAL, "bad object name in a manifest");
    _cleanup_close_ int fd = openat(objects_fd, f->hash, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return cerr_set(err, errno, "the object of %s is missing: %s", f->path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        return cerr_set(err, EINVAL, "the object of %s is not a regular file", f->path);
    crypto_generichash_state hs;
    crypto_generichash_init(&hs, NULL, 0, 32);
    static __thread char buf[1 << 16];
    uint64_t total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return cerr_set(err, errno, "cannot read the object of %s: %s", f->path, strerror(errno));
        if (n == 0)
            break;
        total += (uint64_t)n;
        if (total > WACP_FILES_MAX_FILE)
            return cerr_set(err, EFBIG, "the object of %s is larger than a file may be", f->path);
        crypto_generichash_update(&hs, (const unsigned char *)buf, (unsigned long long)n);
        if (out >= 0) {
            int r = util_write_all(out, buf, (size_t)n);
            if (r < 0)
                return cerr_set(err, -r, "cannot write %s: %s", f->path, strerror(-r));
        }
    }
    unsigned char h[32];
    char hex[WACP_HASH_HEX];
    crypto_generichash_final(&hs, h, sizeof(h));
    sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
    if (strcmp(hex, f->hash) || total != f->size)
        return cerr_set(err, EBADMSG,
                        "the object of %s does not match its hash (the run directory was changed "
                        "behind corral): refused",
                        f->path);
    return 0;
}

/* Opens the directory holding REL under DFD, making missing parents (DIR's owner's, 0755). */
static int open_parent_mk(int dfd, const char *rel, const struct stat *root, const char **leaf)
{
    const char *slash = strrchr(rel, '/');
    *leaf = slash ? slash + 1 : rel;
    int cur = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    if (cur < 0 || !slash)
        return cur < 0 ? -errno : cur;
    _cleanup_free_ char *p = strndup(rel, (size_t)(slash - rel));
    if (!p) {
        close(cur);
        return -ENOMEM;
    }
    char *save = NULL;
    for (char *part = strtok_r(p, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
        bool made = mkdirat(cur, part, 0755) == 0;
        if (!made && errno != EEXIST) {
            int e = errno;
            close(cur);
            return -e;
        }
        int fd = openat(cur, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        close(cur);
        if (fd < 0)
            return -e;
        /* Made by us: DIR's owner's, 0755 whatever the umask. */
        if (made && (fchown(fd, root->st_uid, root->st_gid) < 0 || fchmod(fd, 0755) < 0)) {
            e = errno;
            close(fd);
            return -e;
        }
        cur = fd;
    }
    return cur;
}

static int write_one(int pfd, const char *leaf, const struct wacp_file *f, int objects_fd,
                     const struct stat *root, struct cerr *err)
{
    struct stat old;
    bool exists = fstatat(pfd, leaf, &old, AT_SYMLINK_NOFOLLOW) == 0;
    if (exists && !S_ISREG(old.st_mode))
        return cerr_set(err, EEXIST, "%s is not a regular file in the parent", f->path);
    mode_t mode = exists ? (old.st_mode & 07777) : ((f->mode ? f->mode : 0644) & 0755);
    uid_t uid = exists ? old.st_uid : root->st_uid;
    gid_t gid = exists ? old.st_gid : root->st_gid;
    _cleanup_close_ int t = openat(pfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (t < 0)
        return cerr_set(err, errno, "cannot make a temporary for %s: %s", f->path, strerror(errno));
    int r = object_pass(objects_fd, f, t, err);
    if (r < 0)
        return r;
    if (fchown(t, uid, gid) < 0 || fchmod(t, mode) < 0)
        return cerr_set(err, errno, "cannot set the owner and mode of %s: %s", f->path, strerror(errno));
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", t);
    if (!exists) {
        if (linkat(AT_FDCWD, proc, pfd, leaf, AT_SYMLINK_FOLLOW) == 0)
            return 0;
        if (errno != EEXIST)
            return cerr_set(err, errno, "cannot write %s: %s", f->path, strerror(errno));
        /* Appeared meanwhile: replaced below like an existing file, if it is a regular one. */
        if (fstatat(pfd, leaf, &old, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(old.st_mode))
            return cerr_set(err, EEXIST, "%s appeared in the parent meanwhile, not as a regular file",
                            f->path);
    }
    unsigned char rnd[8];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return cerr_set(err, errno, "getrandom: %s", strerror(errno));
    char tmp[64];
    snprintf(tmp, sizeof(tmp), ".corral-tmp-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2],
             rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
    if (linkat(AT_FDCWD, proc, pfd, tmp, AT_SYMLINK_FOLLOW) < 0)
        return cerr_set(err, errno, "cannot write %s: %s", f->path, strerror(errno));
    if (renameat(pfd, tmp, pfd, leaf) < 0) {
        int e = errno;
        unlinkat(pfd, tmp, 0);
        return cerr_set(err, e, "cannot write %s: %s", f->path, strerror(e));
    }
    return 0;
}

int wacp_files_integrate(int dfd, const struct wacp_manifest *m,
                         const struct wacp_manifest *skip, const char *objects,
                         const struct wacp_files_rules *rules, struct cerr *err)
{
    _cleanup_close_ int ofd = open(objects, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (ofd < 0)
        return cerr_set(err, errno, "cannot open the objects: %s", strerror(errno));
    struct stat root;
    if (fstat(dfd, &root) < 0)
        return cerr_set(err, errno, "cannot stat the parent's directory: %s", strerror(errno));
    /* Before the first byte changes: paths, targets and objects, all of them. */
    int r = wacp_files_check_paths(m, rules, err);
    for (size_t i = 0; i < m->n && r == 0; i++) {
        const struct wacp_file *f = &m->v[i];
        if (wacp_files_manifest_get(skip, f->path))
            continue;
        r = check_target(dfd, f->path, err);
        if (r == 0 && f->hash[0])
            r = object_pass(ofd, f, -1, err);
    }
    for (size_t i = 0; i < m->n && r == 0; i++) {
        const struct wacp_file *f = &m->v[i];
        if (wacp_files_manifest_get(skip, f->path))
            continue;
        const char *leaf;
        int pfd = open_parent_mk(dfd, f->path, &root, &leaf);
        if (pfd < 0) {
            r = cerr_set(err, -pfd, "cannot open the directory of %s: %s", f->path, strerror(-pfd));
            break;
        }
        if (!f->hash[0]) {
            struct stat st;
            if (fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
                unlinkat(pfd, leaf, 0) < 0 && errno != ENOENT)
                r = cerr_set(err, errno, "cannot remove %s: %s", f->path, strerror(errno));
        } else {
            r = write_one(pfd, leaf, f, ofd, &root, err);
        }
        close(pfd);
    }
    return r;
}

int wacp_files_manifest_store(const struct wacp_manifest *m, const char *objects,
                              char hex[WACP_HASH_HEX], struct cerr *err)
{
    cJSON *j = wacp_files_manifest_json(m);
    _cleanup_free_ char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!text)
        return cerr_set(err, ENOMEM, "out of memory");
    wacp_files_hash_hex(text, strlen(text), hex);
    return object_put(objects, hex, text, strlen(text), err);
}

int wacp_files_manifest_load(const char *objects, const char *hex, struct wacp_manifest *out,
                             struct cerr *err)
{
    if (strlen(hex) != WACP_HASH_HEX - 1 || strspn(hex, "0123456789abcdef") != WACP_HASH_HEX - 1)
        return cerr_set(err, EINVAL, "not an object hash: %.80s", hex);
    _cleanup_free_ char *path = util_printf("%s/%s", objects, hex);
    if (!path)
        return cerr_set(err, ENOMEM, "out of memory");
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return cerr_set(err, errno, "cannot open object %s: %s", hex, strerror(errno));
    _cleanup_close_ int fdc = fd;
    _cleanup_free_ char *data = NULL;
    size_t len = 0;
    int r = read_fd(fdc, &data, &len, err, hex);
    if (r < 0)
        return r;
    char got[WACP_HASH_HEX];
    wacp_files_hash_hex(data, len, got);
    if (strcmp(got, hex))
        return cerr_set(err, EBADMSG, "object %s changed on disk (its hash is %s)", hex, got);
    cJSON *j = cJSON_ParseWithLength(data, len);
    const cJSON *f;
    cJSON_ArrayForEach (f, j) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(f, "path");
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(f, "blake2b");
        const cJSON *sz = cJSON_GetObjectItemCaseSensitive(f, "size");
        if (!cJSON_IsString(p) || !wacp_files_path_ok(p->valuestring) || out->n >= WACP_FILES_MAX_FILES)
            continue;
        const char *hs = cJSON_IsString(h) && strlen(h->valuestring) < WACP_HASH_HEX ? h->valuestring : "";
        uint64_t size = cJSON_IsNumber(sz) && sz->valuedouble >= 0 ? (uint64_t)sz->valuedouble : 0;
        if (wacp_files_manifest_add(out, p->valuestring, hs, size) < 0) {
            cJSON_Delete(j);
            wacp_files_manifest_clear(out);
            return cerr_set(err, ENOMEM, "out of memory");
        }
    }
    bool ok = cJSON_IsArray(j);
    cJSON_Delete(j);
    return ok ? 0 : cerr_set(err, EINVAL, "object %s is not a file list", hex);
}
