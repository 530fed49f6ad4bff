/* supervisor/wacp/integrate_files.c: integration's writes into a parent's directory, the one
 * place the model changes files an admin may own (DIR). Everything is checked before the first
 * byte changes: clean paths no deeper than a workspace may nest, no protected path, no link or
 * non-directory on the way, every object present and matching its hash. Then each file is
 * written into an unnamed temporary (O_TMPFILE: nothing to plant at its name, nothing left by a
 * crash), given its owner and mode, and linked into place: a new file by its own name (never
 * replacing what appeared meanwhile), an existing one through a fresh random name renamed over
 * it. Owners and modes follow DIR: an existing file keeps its own; a new file or directory
 * belongs to DIR's owner, a file's mode is its own bits masked with 0755, a directory's 0755.
 * Nothing is ever opened that could block (O_NONBLOCK) or that is not a regular file. */
#include "supervisor/wacp/internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

static unsigned depth_of(const char *rel)
{
    unsigned d = 0;
    for (const char *s = rel; *s; s++)
        d += *s == '/';
    return d;
}

int wacpf_check_paths(const struct wacp_manifest *m, const struct wacpf_rules *rules, struct cerr *err)
{
    for (size_t i = 0; i < m->n; i++) {
        const char *rel = m->v[i].path;
        if (!wacpf_path_ok(rel))
            return cerr_set(err, EINVAL, "bad path in a manifest");
        if (depth_of(rel) > WACPF_MAX_DEPTH)
            return cerr_set(err, ELOOP, "'%.200s' lies %u directories deep, deeper than a workspace may "
                            "nest (%d)", rel, depth_of(rel), WACPF_MAX_DEPTH);
        const char *pat = rules ? broker_protected_match(rules->protected_paths, rules->n_protected, rel) : NULL;
        if (pat)
            return cerr_set(err, EPERM, "'%.200s' is a protected path (policy protected_paths: \"%.100s\"): "
                            "no agent writes it and no integration carries it", rel, pat);
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
            return S_ISREG(st.st_mode) ? 0
                   : cerr_set(err, S_ISDIR(st.st_mode) ? EISDIR : EEXIST,
                              "%s is %s in the parent, and integration replaces regular files only", rel,
                              S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
        if (!S_ISDIR(st.st_mode))
            return cerr_set(err, ENOTDIR, "%s: a part of the path is a link or a file in the parent, "
                            "and integration never writes through one", rel);
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
        if (total > WACPF_MAX_FILE)
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
        return cerr_set(err, EBADMSG, "the object of %s does not match its hash (the run directory was changed "
                        "behind corral): refused", f->path);
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
            return cerr_set(err, EEXIST, "%s appeared in the parent meanwhile, not as a regular file", f->path);
    }
    unsigned char rnd[8];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return cerr_set(err, errno, "getrandom: %s", strerror(errno));
    char tmp[64];
    snprintf(tmp, sizeof(tmp), ".corral-tmp-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3],
             rnd[4], rnd[5], rnd[6], rnd[7]);
    if (linkat(AT_FDCWD, proc, pfd, tmp, AT_SYMLINK_FOLLOW) < 0)
        return cerr_set(err, errno, "cannot write %s: %s", f->path, strerror(errno));
    if (renameat(pfd, tmp, pfd, leaf) < 0) {
        int e = errno;
        unlinkat(pfd, tmp, 0);
        return cerr_set(err, e, "cannot write %s: %s", f->path, strerror(e));
    }
    return 0;
}

int wacpf_integrate(const char *dir, const struct wacp_manifest *m, const struct wacp_manifest *skip,
                    const char *objects, const struct wacpf_rules *rules, struct cerr *err)
{
    _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return cerr_set(err, errno, "cannot open %s: %s", dir, strerror(errno));
    _cleanup_close_ int ofd = open(objects, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (ofd < 0)
        return cerr_set(err, errno, "cannot open the objects: %s", strerror(errno));
    struct stat root;
    if (fstat(dfd, &root) < 0)
        return cerr_set(err, errno, "cannot stat %s: %s", dir, strerror(errno));
    /* Before the first byte changes: paths, targets and objects, all of them. */
    int r = wacpf_check_paths(m, rules, err);
    for (size_t i = 0; i < m->n && r == 0; i++) {
        const struct wacp_file *f = &m->v[i];
        if (wacpf_manifest_get(skip, f->path))
            continue;
        r = check_target(dfd, f->path, err);
        if (r == 0 && f->hash[0])
            r = object_pass(ofd, f, -1, err);
    }
    for (size_t i = 0; i < m->n && r == 0; i++) {
        const struct wacp_file *f = &m->v[i];
        if (wacpf_manifest_get(skip, f->path))
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
