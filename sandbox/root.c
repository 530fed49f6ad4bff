/* sandbox/root.c: the sandbox's minimal root. The parent (host root, host mount namespace)
 * turns each path to show into a detached mount tree with open_tree(OPEN_TREE_CLONE) and sets
 * its attributes (read-only, nosuid, nodev; an id-mapping for writable binds) with
 * mount_setattr; the child then attaches them under an empty tmpfs and pivots into it. Doing the
 * lookups in the parent means the child never needs to see the host's paths (so a program
 * under /root works, and the child holds no host path strings), and what it attaches is
 * exactly what the parent checked. */
#include "sandbox/root.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* What every sandbox sees read-only: the runtime of ordinary programs. Missing ones are skipped;
 * a host path that is a symlink (merged /usr: /bin -> usr/bin) is recreated as the same symlink. */
static const char *const runtime_paths[] = {
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/lib32",
    "/libx32",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/mime.types",
};
static const char *const dev_nodes[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
                                        "/dev/urandom"};

static int add_entry(struct root_plan *plan, struct root_entry e, struct cerr *err)
{
    if (plan->n == plan->cap) {
        size_t cap = plan->cap ? plan->cap * 2 : 32;
        struct root_entry *m = realloc(plan->e, cap * sizeof(*m));
        if (!m) {
            free(e.inside);
            free(e.link);
            if (e.fd >= 0)
                close(e.fd);
            return cerr_set(err, ENOMEM, "root: out of memory");
        }
        plan->e = m;
        plan->cap = cap;
    }
    plan->e[plan->n++] = e;
    return 0;
}

/* A user namespace whose only mapping is FROM (an owner on disk) -> TO (the sandbox's host id),
 * used to id-map a writable bind: files owned by FROM appear owned by the sandbox's user, and
 * what it creates is stored as FROM.
 *
 * A namespace needs a process to be born in. That process is cloned with CLONE_VM | CLONE_FILES
 * and does nothing but wait to be killed: it shares the caller's fd table instead of copying it
 * (so it holds no reference to any pipe or socket of the caller's, and none of a helper made at
 * the same instant by another thread), touches no memory, takes no lock and calls no library
 * function that could. The caller writes its maps, opens its namespace and kills it. (The helper
 * this replaces was fork()ed from a pool thread and never exec'd: helpers forked at the same
 * moment held each other's pipe ends and waited forever for an EOF; issue 12.) */
static int idmap_helper_main(void *arg)
{
    (void)arg;
    for (;;)
        syscall(SYS_pause); /* never returns: only SIGKILL ends it, and errno is never written */
    return 0;
}

static int idmap_userns_make(uid_t from_uid, uid_t to_uid, gid_t from_gid, gid_t to_gid,
                             struct cerr *err)
{
    enum { STACK = 16384 };
    void *stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1,
                       0);
    if (stack == MAP_FAILED)
        return cerr_set(err, errno, "root: cannot map the user namespace helper's stack: %s",
                        strerror(errno));
    /* No signal handler of ours may run on the helper's stack: everything stays blocked in it. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    /* exit_signal 0: no SIGCHLD to the caller, and no waitpid(-1) elsewhere can reap it. */
    pid_t pid = clone(idmap_helper_main, (char *)stack + STACK, CLONE_NEWUSER | CLONE_VM | CLONE_FILES,
                      NULL);
    int ce = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        munmap(stack, STACK);
        return cerr_set(err, ce, "root: cannot create a user namespace for an id-mapped mount: %s",
                        strerror(ce));
    }
    char p[64], map[64];
    snprintf(p, sizeof(p), "/proc/%ld/uid_map", (long)pid);
    snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)from_uid, (unsigned)to_uid);
    int w = util_write_file(p, map);
    snprintf(p, sizeof(p), "/proc/%ld/setgroups", (long)pid);
    if (w == 0)
        w = util_write_file(p, "deny");
    snprintf(p, sizeof(p), "/proc/%ld/gid_map", (long)pid);
    snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)from_gid, (unsigned)to_gid);
    if (w == 0)
        w = util_write_file(p, map);
    snprintf(p, sizeof(p), "/proc/%ld/ns/user", (long)pid);
    int r = w < 0 ? cerr_set(err, w, "root: cannot write the id map: %s", strerror(-w))
                  : open(p, O_RDONLY | O_CLOEXEC);
    if (w == 0 && r < 0)
        r = cerr_set(err, errno, "root: cannot open %s: %s", p, strerror(errno));
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
        ;
    munmap(stack, STACK); /* only now: the helper ran on it until it was reaped */
    return r;
}

/* Namespaces already made, by mapping: a workspace's writable bind needs the same one for every
 * command, so each is made once per process (a few fds in all, not one per sandbox). Callers get
 * their own dup, so an entry pushed out by a newer one never closes an fd still in use. */
static struct {
    uid_t from_uid, to_uid;
    gid_t from_gid, to_gid;
    int fd;
    unsigned long used;
} idmap_cache[8];
static unsigned long idmap_clock;
static pthread_mutex_t idmap_lock = PTHREAD_MUTEX_INITIALIZER;

static int idmap_userns(uid_t from_uid, uid_t to_uid, gid_t from_gid, gid_t to_gid, struct cerr *err)
{
    pthread_mutex_lock(&idmap_lock);
    size_t victim = 0;
    for (size_t i = 0; i < ARRAY_SIZE(idmap_cache); i++) {
        if (idmap_cache[i].fd > 0 && idmap_cache[i].from_uid == from_uid &&
            idmap_cache[i].to_uid == to_uid && idmap_cache[i].from_gid == from_gid &&
            idmap_cache[i].to_gid == to_gid) {
            idmap_cache[i].used = ++idmap_clock;
            int fd = fcntl(idmap_cache[i].fd, F_DUPFD_CLOEXEC, 3);
            int e = errno;
            pthread_mutex_unlock(&idmap_lock);
            return fd >= 0 ? fd : cerr_set(err, e, "root: dup: %s", strerror(e));
        }
        if (idmap_cache[i].used < idmap_cache[victim].used)
            victim = i;
    }
    int fd = idmap_userns_make(from_uid, to_uid, from_gid, to_gid, err);
    if (fd >= 0) {
        int keep = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (keep >= 0) {
            if (idmap_cache[victim].fd > 0)
                close(idmap_cache[victim].fd);
            idmap_cache[victim].from_uid = from_uid;
            idmap_cache[victim].to_uid = to_uid;
            idmap_cache[victim].from_gid = from_gid;
            idmap_cache[victim].to_gid = to_gid;
            idmap_cache[victim].fd = keep;
            idmap_cache[victim].used = ++idmap_clock;
        }
    }
    pthread_mutex_unlock(&idmap_lock);
    return fd;
}

/* Detached copy of HOST (recursive) with the attributes of a bind of that kind. */
static int detach_tree(const char *host, bool writable, bool device, const struct sandbox_profile *p,
                       const struct stat *st, struct cerr *err)
{
    int fd = open_tree(AT_FDCWD, host, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (fd < 0)
        return cerr_set(err, errno, "root: cannot bind %s: open_tree: %s", host, strerror(errno));
    struct mount_attr a = {.attr_set = MOUNT_ATTR_NOSUID, .propagation = MS_PRIVATE};
    if (!device)
        a.attr_set |= MOUNT_ATTR_NODEV;
    if (device)
        a.attr_set |= MOUNT_ATTR_NOEXEC;
    if (!writable)
        a.attr_set |= MOUNT_ATTR_RDONLY;
    int userns = -1;
    if (writable && !device && (st->st_uid != p->host_uid || st->st_gid != p->host_gid)) {
        userns = idmap_userns(st->st_uid, p->host_uid, st->st_gid, p->host_gid, err);
        if (userns < 0) {
            close(fd);
            return userns;
        }
        a.attr_set |= MOUNT_ATTR_IDMAP;
        a.userns_fd = (uint64_t)userns;
    }
    int r = mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a));
    int e = errno;
    if (userns >= 0)
        close(userns);
    if (r < 0) {
        close(fd);
        return cerr_set(
            err, e, "root: cannot set the mount attributes of %s%s: %s", host,
            a.attr_set & MOUNT_ATTR_IDMAP
                ? " (id-mapped writable bind; the file system may not support id-mapped mounts)"
                : "",
            strerror(e));
    }
    return fd;
}

int root_plan_add_bind(struct root_plan *plan, const struct sandbox_profile *p, const char *host,
                       const char *inside, bool writable, bool optional, struct cerr *err)
{
    if (!host || host[0] != '/')
        return cerr_set(err, EINVAL, "bind: '%s' is not an absolute path", host ? host : "(null)");
    if (!inside)
        inside = host;
    if (inside[0] != '/' || strstr(inside, "/../") || !strcmp(inside, "/") ||
        (strlen(inside) >= 3 && !strcmp(inside + strlen(inside) - 3, "/..")))
        return cerr_set(err, EINVAL, "bind: '%s' is not a usable absolute path inside the sandbox",
                        inside);
    struct stat lst;
    if (lstat(host, &lst) < 0) {
        if (optional && errno == ENOENT)
            return 0;
        return cerr_set(err, errno, "bind: %s: %s", host, strerror(errno));
    }
    struct root_entry e = {.fd = -1};
    e.inside = strdup(inside);
    if (!e.inside)
        return cerr_set(err, ENOMEM, "root: out of memory");
    if (S_ISLNK(lst.st_mode) && !writable && !strcmp(host, inside)) {
        /* Keep the host's shape (merged /usr, /etc/localtime): the link, not its target. */
        char target[4096];
        ssize_t n = readlink(host, target, sizeof(target) - 1);
        if (n < 0) {
            free(e.inside);
            return cerr_set(err, errno, "bind: readlink %s: %s", host, strerror(errno));
        }
        target[n] = '\0';
        e.link = strdup(target);
        if (!e.link) {
            free(e.inside);
            return cerr_set(err, ENOMEM, "root: out of memory");
        }
        /* An absolute link to a file (/etc/localtime -> /usr/share/zoneinfo/...) resolves inside
         * only if its target is visible: runtime paths are, and a dangling link is harmless. */
        return add_entry(plan, e, err);
    }
    struct stat st;
    if (stat(host, &st) < 0) {
        free(e.inside);
        if (optional && errno == ENOENT)
            return 0;
        return cerr_set(err, errno, "bind: %s: %s", host, strerror(errno));
    }
    e.is_dir = S_ISDIR(st.st_mode);
    bool device = S_ISCHR(st.st_mode);
    e.fd = detach_tree(host, writable, device, p, &st, err);
    if (e.fd < 0) {
        int r = e.fd;
        free(e.inside);
        return r;
    }
    e.writable = writable;
    return add_entry(plan, e, err);
}

/* The interpreter named by a "#!" line, when PROGRAM is a script. */
static char *shebang_interpreter(const char *program)
{
    int fd = open(program, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    char buf[256];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n < 3 || buf[0] != '#' || buf[1] != '!')
        return NULL;
    buf[n] = '\0';
    char *s = buf + 2;
    while (*s == ' ' || *s == '\t')
        s++;
    size_t len = strcspn(s, " \t\n");
    if (len == 0 || s[0] != '/')
        return NULL;
    s[len] = '\0';
    return strdup(s);
}

/* True when PATH is inside one of the plan's binds already (so binding it again is useless). */
static bool covered(const struct root_plan *plan, const char *path)
{
    for (size_t i = 0; i < plan->n; i++) {
        const struct root_entry *e = &plan->e[i];
        size_t l = strlen(e->inside);
        if (!e->link && !strncmp(path, e->inside, l) && (path[l] == '/' || path[l] == '\0'))
            return true;
    }
    return false;
}

/* Resolves symlinked prefixes (/bin/sh -> /usr/bin/sh) to test coverage on the real path. */
static bool covered_resolved(const struct root_plan *plan, const char *path)
{
    char *real = realpath(path, NULL);
    bool c = covered(plan, path) || (real && covered(plan, real));
    free(real);
    return c;
}

int root_plan_build(struct root_plan *plan, const struct sandbox_profile *p, const char *program,
                    struct cerr *err)
{
    int r;
    _cleanup_free_ char *interp = NULL;
    memset(plan, 0, sizeof(*plan));
    for (size_t i = 0; i < ARRAY_SIZE(runtime_paths); i++)
        if ((r = root_plan_add_bind(plan, p, runtime_paths[i], NULL, false, true, err)) < 0)
            goto fail;
    for (size_t i = 0; i < ARRAY_SIZE(dev_nodes); i++)
        if ((r = root_plan_add_bind(plan, p, dev_nodes[i], NULL, true, false, err)) < 0)
            goto fail;
    for (size_t i = 0; i < p->n_binds; i++) {
        const struct sandbox_bind *b = &p->binds[i];
        if ((r = root_plan_add_bind(plan, p, b->host, b->inside, b->writable, b->optional, err)) < 0)
            goto fail;
    }
    /* The program itself, and a script's interpreter, read-only at their host paths. */
    if (program && !covered_resolved(plan, program)) {
        _cleanup_free_ char *real = realpath(program, NULL);
        if (!real) {
            r = cerr_set(err, errno, "program %s: %s", program, strerror(errno));
            goto fail;
        }
        if ((r = root_plan_add_bind(plan, p, real, program, false, false, err)) < 0)
            goto fail;
    }
    interp = program ? shebang_interpreter(program) : NULL;
    if (interp && !covered_resolved(plan, interp) && access(interp, X_OK) == 0) {
        _cleanup_free_ char *real = realpath(interp, NULL);
        if (real && (r = root_plan_add_bind(plan, p, real, interp, false, false, err)) < 0)
            goto fail;
    }
    return 0;
fail:
    root_plan_free(plan);
    return r;
}

void root_plan_free(struct root_plan *plan)
{
    for (size_t i = 0; i < plan->n; i++) {
        if (plan->e[i].fd >= 0)
            close(plan->e[i].fd);
        free(plan->e[i].inside);
        free(plan->e[i].link);
    }
    free(plan->e);
    memset(plan, 0, sizeof(*plan));
}

/* ---- child side: runs in the new mount namespace, as the sandbox's init ---- */

#define NEWROOT "/tmp"

/* mkdir -p of the parents of PATH (absolute, inside NEWROOT), then the last part as a directory
 * or an empty file. */
static int make_target(const char *path, bool dir)
{
    char buf[4096];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return -ENAMETOOLONG;
    for (char *s = buf + strlen(NEWROOT) + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -errno;
        *s = '/';
    }
    if (dir)
        return mkdir(buf, 0755) < 0 && errno != EEXIST ? -errno : 0;
    int fd = open(buf, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return errno == EEXIST ? 0 : -errno;
    close(fd);
    return 0;
}

static int write_small(const char *path, const char *content)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -errno;
    int r = util_write_all(fd, content, strlen(content));
    close(fd);
    return r;
}

#define CHECK(expr, ...)                              \
    do {                                              \
        if ((expr) < 0)                               \
            return cerr_set(err, errno, __VA_ARGS__); \
    } while (0)

int root_assemble(const struct root_plan *plan, const struct sandbox_profile *p, struct cerr *err)
{
    char path[4096 + 64], opts[128];
    CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), "root: cannot make / private: %s",
          strerror(errno));
    CHECK(mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=4096"),
          "root: cannot mount the root tmpfs: %s", strerror(errno));

    snprintf(path, sizeof(path), NEWROOT "/proc");
    CHECK(mkdir(path, 0555), "root: mkdir /proc: %s", strerror(errno));
    CHECK(mount("proc", path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=0"),
          "root: cannot mount /proc: %s", strerror(errno));
    /* Kernel tunables stay read-only even where the namespace's owner could write them. */
    static const char *const proc_ro[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"};
    for (size_t i = 0; i < ARRAY_SIZE(proc_ro); i++) {
        snprintf(path, sizeof(path), NEWROOT "%s", proc_ro[i]);
        if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) < 0) {
            if (errno == ENOENT)
                continue;
            return cerr_set(err, errno, "root: cannot bind %s: %s", proc_ro[i], strerror(errno));
        }
        CHECK(mount(NULL, path, NULL,
                    MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL),
              "root: cannot make %s read-only: %s", proc_ro[i], strerror(errno));
    }

    snprintf(path, sizeof(path), NEWROOT "/dev");
    (void)mkdir(path, 0755);
    /* Device nodes were attached above as bind mounts: mount the /dev tmpfs first would hide
     * them, so /dev gets only links here. */
    static const char *const dev_links[][2] = {
        {"/dev/fd", "/proc/self/fd"},
        {"/dev/stdin", "/proc/self/fd/0"},
        {"/dev/stdout", "/proc/self/fd/1"},
        {"/dev/stderr", "/proc/self/fd/2"},
        {"/dev/shm", "/tmp"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(dev_links); i++) {
        snprintf(path, sizeof(path), NEWROOT "%s", dev_links[i][0]);
        CHECK(symlink(dev_links[i][1], path), "root: symlink %s: %s", dev_links[i][0], strerror(errno));
    }

    snprintf(path, sizeof(path), NEWROOT "/tmp");
    (void)mkdir(path, 01777);
    snprintf(opts, sizeof(opts), "mode=1777,size=%llu",
             (unsigned long long)(p->limits.tmp_size ? p->limits.tmp_size : 64ull << 20));
    CHECK(mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts), "root: cannot mount /tmp: %s",
          strerror(errno));

    /* A minimal /etc: who the user is, and that localhost is loopback. */
    snprintf(path, sizeof(path), NEWROOT "/etc");
    (void)mkdir(path, 0755);
    char passwd[512], group[256];
    snprintf(passwd, sizeof(passwd),
             "root:x:0:0:root:/root:/bin/sh\nagent:x:%u:%u:corral "
             "agent:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
             (unsigned)p->uid, (unsigned)p->gid);
    snprintf(group, sizeof(group), "root:x:0:\nagent:x:%u:\nnogroup:x:65534:\n", (unsigned)p->gid);
    static const char hosts[] = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";
    int w = 0;
    if (w == 0) {
        snprintf(path, sizeof(path), NEWROOT "/etc/passwd");
        w = write_small(path, passwd);
    }
    if (w == 0) {
        snprintf(path, sizeof(path), NEWROOT "/etc/group");
        w = write_small(path, group);
    }
    if (w == 0) {
        snprintf(path, sizeof(path), NEWROOT "/etc/hosts");
        w = write_small(path, hosts);
    }
    if (w == 0) {
        snprintf(path, sizeof(path), NEWROOT "/etc/hostname");
        w = write_small(path, p->hostname ? p->hostname : "corral");
    }
    if (w < 0)
        return cerr_set(err, w, "root: cannot write %s: %s", path, strerror(-w));

    /* Binds last, so one beneath /tmp or /etc lands on top of the fresh mounts above. */
    for (size_t i = 0; i < plan->n; i++) {
        const struct root_entry *e = &plan->e[i];
        snprintf(path, sizeof(path), NEWROOT "%s", e->inside);
        if (e->link) {
            int r = make_target(path, true); /* parents */
            (void)r;
            rmdir(path);
            CHECK(symlink(e->link, path), "root: symlink %s: %s", e->inside, strerror(errno));
            continue;
        }
        int r = make_target(path, e->is_dir);
        if (r < 0)
            return cerr_set(err, r, "root: cannot create the mount point %s: %s", e->inside,
                            strerror(-r));
        CHECK(move_mount(e->fd, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH),
              "root: cannot attach %s: %s", e->inside, strerror(errno));
    }

    /* Nothing may be created in / itself. */
    CHECK(mount(NULL, NEWROOT, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL),
          "root: cannot make the root read-only: %s", strerror(errno));

    /* pivot_root(".", ".") stacks the old root on the new one; detaching "." then removes the old
     * root entirely, so no path leads back to the host. */
    CHECK(chdir(NEWROOT), "root: chdir: %s", strerror(errno));
    CHECK(syscall(SYS_pivot_root, ".", "."), "root: pivot_root: %s", strerror(errno));
    CHECK(umount2(".", MNT_DETACH), "root: cannot detach the old root: %s", strerror(errno));
    CHECK(chdir("/"), "root: chdir /: %s", strerror(errno));
    return 0;
}
