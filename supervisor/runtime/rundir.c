/* supervisor/runtime/rundir.c: safe places for the trail, the run directory and the control
 * socket (see rundir.h). The checks walk the real path from "/" down: once a directory is
 * root's and writable by no one else, nothing below it can be swapped by another user, so a
 * check that passes stays true for the run. */
#include "supervisor/runtime/rundir.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static bool ours(uid_t uid)
{
    return uid == 0 || uid == geteuid();
}

static const char fix[] = "choose a directory only root can write (for example under /var/lib/corral), "
                          "or make it so (chown root, chmod go-w)";

int rundir_check_dir(const char *dir, const char *what, struct cerr *err)
{
    char real[PATH_MAX];
    if (!realpath(dir, real))
        return cerr_set(err, errno, "%s %s: %s", what, dir, strerror(errno));
    size_t n = strlen(real);
    /* Every prefix ending at a '/' (the ancestors), then REAL itself. */
    for (size_t i = 1; i <= n; i++) {
        if (i < n && real[i] != '/')
            continue;
        char c = real[i];
        real[i] = '\0';
        const char *p = i == 1 && c == '/' ? "/" : real;
        struct stat st;
        int r = lstat(p[0] ? p : "/", &st);
        bool self = i == n;
        int e = errno;
        if (r < 0) {
            real[i] = c;
            return cerr_set(err, e, "%s %s: %s", what, dir, strerror(e));
        }
        if (!S_ISDIR(st.st_mode)) {
            real[i] = c;
            return cerr_set(err, ENOTDIR, "%s %s: %s is not a directory", what, dir, p);
        }
        if (!ours(st.st_uid)) {
            cerr_set(err, EPERM,
                     "%s %s: %s is owned by uid %u, who could swap what corral keeps there; %s", what,
                     dir, p, (unsigned)st.st_uid, fix);
            real[i] = c;
            return -EPERM;
        }
        if ((st.st_mode & 022) && (self || !(st.st_mode & S_ISVTX))) {
            cerr_set(err, EPERM,
                     "%s %s: %s is writable by others (mode %04o), who could plant or swap "
                     "what corral keeps there; %s",
                     what, dir, p, (unsigned)(st.st_mode & 07777), fix);
            real[i] = c;
            return -EPERM;
        }
        real[i] = c;
        if (i == 1 && n == 1)
            break;
    }
    return 0;
}

int rundir_make_parents(const char *dir, const char *what, struct cerr *err)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof(p), "%s", dir) >= (int)sizeof(p))
        return cerr_set(err, ENAMETOOLONG, "%s %s: path too long", what, dir);
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s)
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0700) < 0 && errno != EEXIST)
            return cerr_set(err, errno, "cannot create %s %s: %s", what, p, strerror(errno));
        *s = c;
        if (!c)
            break;
    }
    return rundir_check_dir(dir, what, err);
}

int rundir_check_file(const char *file, const char *what, bool socket, struct cerr *err)
{
    _cleanup_free_ char *copy = strdup(file);
    if (!copy)
        return cerr_set(err, ENOMEM, "out of memory");
    char *slash = strrchr(copy, '/');
    const char *dir = slash ? (slash == copy ? "/" : copy) : ".";
    if (slash && slash != copy)
        *slash = '\0';
    char label[160];
    snprintf(label, sizeof(label), "%s's directory for", what);
    int r = rundir_check_dir(dir, label, err);
    if (r < 0)
        return r;
    struct stat st;
    if (lstat(file, &st) < 0)
        return errno == ENOENT ? 0 : cerr_set(err, errno, "%s %s: %s", what, file, strerror(errno));
    if (socket ? !S_ISSOCK(st.st_mode) : !S_ISREG(st.st_mode))
        return cerr_set(err, EEXIST,
                        "%s %s: something that is not a %s is there; remove it or choose another path",
                        what, file, socket ? "socket" : "regular file");
    /* A socket of ours may be open to others (0666, when the policy maps other users): what
     * matters there is that root bound it, and a dead one of ours is replaced. */
    if (!ours(st.st_uid) || (!socket && (st.st_mode & 022)))
        return cerr_set(err, EPERM,
                        "%s %s is owned by uid %u (mode %04o): corral does not adopt a file another "
                        "user made or may write; remove it, or choose another path",
                        what, file, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    return 0;
}

/* The run directory's flock: held by its supervisor's fd for its life, released by the kernel
 * when it dies (no forked process keeps the fd: sandboxes come from the zygote, forked before).
 * A second supervisor on one run (two resumes at once, a resume of a live run) is refused. */
static int lock_run(int fd, const char *dir, struct cerr *err)
{
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        return fd;
    int e = errno;
    close(fd);
    if (e == EWOULDBLOCK)
        return cerr_set(err, EBUSY,
                        "the run directory %s is held by another corral (a supervisor of that run "
                        "is running)",
                        dir);
    return cerr_set(err, e, "cannot lock the run directory %s: %s", dir, strerror(e));
}

int rundir_locked(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int r = flock(fd, LOCK_SH | LOCK_NB) < 0 ? (errno == EWOULDBLOCK ? 1 : -1) : 0;
    close(fd); /* and the shared lock taken, if any, with it */
    return r;
}

static bool dir_empty(int fd)
{
    int d2 = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d2 < 0)
        return false;
    DIR *d = fdopendir(d2);
    if (!d) {
        close(d2);
        return false;
    }
    bool empty = true;
    struct dirent *de;
    while (empty && (de = readdir(d)))
        empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
    closedir(d);
    return empty;
}

int rundir_create(const char *dir, struct cerr *err)
{
    _cleanup_free_ char *copy = strdup(dir);
    if (!copy)
        return cerr_set(err, ENOMEM, "out of memory");
    char *slash = strrchr(copy, '/');
    if (slash && slash != copy)
        *slash = '\0';
    int r = rundir_make_parents(slash ? (slash == copy ? "/" : copy) : ".", "the run directory's parent",
                                err);
    if (r < 0)
        return r;
    bool made = mkdir(dir, 0700) == 0;
    if (!made && errno != EEXIST)
        return cerr_set(err, errno, "cannot create the run directory %s: %s", dir, strerror(errno));
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return cerr_set(err, errno, "the run directory %s: %s (corral never follows a link there)", dir,
                        strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !ours(st.st_uid) || (st.st_mode & 077) || (!made && !dir_empty(fd))) {
        close(fd);
        return cerr_set(
            err, EEXIST,
            "the run directory %s already exists and is not an empty directory of root's "
            "with mode 0700: corral makes its run directory itself; give a --run-dir that does "
            "not exist yet",
            dir);
    }
    return lock_run(fd, dir, err);
}

int rundir_subdir(int dirfd, const char *name, struct cerr *err)
{
    if (mkdirat(dirfd, name, 0700) < 0)
        return cerr_set(err, errno, "cannot create %s in the run directory: %s", name, strerror(errno));
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return cerr_set(err, errno, "cannot open %s in the run directory: %s", name, strerror(errno));
    return fd;
}

/* The directory at DIRFD/NAME (DIRFD -1: NAME itself) when it is root's, mode 0700, not a link. */
static int open_kept(int dirfd, const char *name, struct cerr *err)
{
    int fd = dirfd >= 0 ? openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                        : open(name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return cerr_set(err, errno, "the run directory's %s: %s (corral never follows a link there)",
                        name, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !ours(st.st_uid) || (st.st_mode & 077)) {
        close(fd);
        return cerr_set(err, EPERM,
                        "%s is not a directory of root's with mode 0700: corral resumes only a run "
                        "directory it made",
                        name);
    }
    return fd;
}

int rundir_reopen(const char *dir, struct cerr *err)
{
    _cleanup_free_ char *copy = strdup(dir);
    if (!copy)
        return cerr_set(err, ENOMEM, "out of memory");
    char *slash = strrchr(copy, '/');
    if (slash && slash != copy)
        *slash = '\0';
    int r = rundir_check_dir(slash ? (slash == copy ? "/" : copy) : ".", "the run directory's parent",
                             err);
    int fd = r < 0 ? r : open_kept(-1, dir, err);
    return fd < 0 ? fd : lock_run(fd, dir, err);
}

int rundir_subdir_reopen(int dirfd, const char *name, struct cerr *err)
{
    return open_kept(dirfd, name, err);
}
