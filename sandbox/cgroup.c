/* sandbox/cgroup.c: a cgroup per sandbox with memory, pids and cpu budgets and usage read back.
 * cgroup v2 when the unified hierarchy offers memory, pids and cpu; otherwise v1, where each
 * controller is its own hierarchy (/sys/fs/cgroup/memory, .../pids, .../cpu, .../cpuacct).
 * Every cgroup is created beneath corral's OWN cgroup (from /proc/self/cgroup), never beside
 * or above it, and removed when the sandbox ends. */
#include "sandbox/internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

enum { CG_MEMORY, CG_PIDS, CG_CPU, CG_CPUACCT, CG_NCTL };
static const char *const cg_ctl_name[CG_NCTL] = {"memory", "pids", "cpu", "cpuacct"};
_Static_assert(CG_NCTL <= CGROUP_MAX_TASK_FDS, "one tasks fd per hierarchy");

struct cgroup {
    bool v2;
    char *rel;          /* our cgroup, relative to each hierarchy's root */
    char *dir[CG_NCTL]; /* absolute directory per controller (v2: all the same one) */
    int ndirs;          /* distinct directories to remove, in dir[] order */
    char *leaf;         /* v2: DIR/main, where the processes live (see cgroup_create) */
};

static unsigned long cg_counter;

/* Mount point of the v1 hierarchy carrying CTL, from /proc/self/mountinfo. */
static int v1_mount_of(const char *ctl, char *out, size_t cap)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return -errno;
    char *line = NULL;
    size_t n = 0;
    int r = -ENOENT;
    while (getline(&line, &n, f) > 0) {
        char *sep = strstr(line, " - ");
        if (!sep)
            continue;
        char fstype[32], src[64], opts[512];
        if (sscanf(sep + 3, "%31s %63s %511s", fstype, src, opts) != 3 || strcmp(fstype, "cgroup"))
            continue;
        bool has = false;
        for (char *tok = strtok(opts, ","); tok; tok = strtok(NULL, ","))
            if (!strcmp(tok, ctl))
                has = true;
        if (!has)
            continue;
        char mnt[4096];
        /* fields: id parent maj:min root mountpoint ... */
        if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 && strlen(mnt) < cap) {
            strcpy(out, mnt);
            r = 0;
            break;
        }
    }
    free(line);
    fclose(f);
    return r;
}

/* corral's own cgroup in the hierarchy named by KEY ("" for v2, or a v1 controller). */
static int own_cgroup(const char *key, char *out, size_t cap)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return -errno;
    char *line = NULL;
    size_t n = 0;
    int r = -ENOENT;
    while (getline(&line, &n, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *ctls = c1 + 1, *path = c2 + 1;
        bool match = false;
        if (!*key)
            match = !strcmp(line, "0") && !*ctls;
        else {
            char buf[256];
            snprintf(buf, sizeof(buf), "%s", ctls);
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
                if (!strcmp(tok, key))
                    match = true;
        }
        if (match && strlen(path) < cap) {
            strcpy(out, path);
            r = 0;
            break;
        }
    }
    free(line);
    fclose(f);
    return r;
}

/* The unified hierarchy's mount point when it has memory, pids and cpu enabled for our cgroup. */
static bool v2_usable(char *root, size_t cap, char *own, size_t owncap)
{
    static const char *const candidates[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
    if (own_cgroup("", own, owncap) < 0)
        return false;
    for (size_t i = 0; i < ARRAY_SIZE(candidates); i++) {
        char p[4096 + 64], ctl[512];
        snprintf(p, sizeof(p), "%s%s/cgroup.controllers", candidates[i], own);
        if (util_read_file(p, ctl, sizeof(ctl)) < 0)
            continue;
        if (strstr(ctl, "memory") && strstr(ctl, "pids") && strstr(ctl, "cpu")) {
            snprintf(root, cap, "%s", candidates[i]);
            return true;
        }
    }
    return false;
}

/* What cgroup_create looks up about the hierarchies, once per process: parsing mountinfo and
 * /proc/self/cgroup for every sandbox cost a good part of a start, and corral's own cgroup is
 * the one it started in (v2_enable_children may move corral into a leaf beneath it later). */
static struct {
    bool done, v2;
    char v2_root[256], v2_own[2048];
    int mount_rc[CG_NCTL], own_rc[CG_NCTL];
    char mount[CG_NCTL][1024], own[CG_NCTL][2048];
    bool swept[CG_NCTL + 1]; /* stale cgroups of killed corrals: swept once (slot CG_NCTL: v2) */
} cg_host;
static pthread_mutex_t cg_host_lock = PTHREAD_MUTEX_INITIALIZER;

static void cg_host_load(void)
{
    pthread_mutex_lock(&cg_host_lock);
    if (!cg_host.done) {
        cg_host.v2 = v2_usable(cg_host.v2_root, sizeof(cg_host.v2_root), cg_host.v2_own,
                               sizeof(cg_host.v2_own));
        for (int i = 0; i < CG_NCTL && !cg_host.v2; i++) {
            cg_host.mount_rc[i] = v1_mount_of(cg_ctl_name[i], cg_host.mount[i],
                                              sizeof(cg_host.mount[i]));
            cg_host.own_rc[i] = own_cgroup(cg_ctl_name[i], cg_host.own[i], sizeof(cg_host.own[i]));
        }
        cg_host.done = true;
    }
    pthread_mutex_unlock(&cg_host_lock);
}

/* True the first time for SLOT: that caller sweeps. */
static bool cg_sweep_once(int slot)
{
    pthread_mutex_lock(&cg_host_lock);
    bool first = !cg_host.swept[slot];
    cg_host.swept[slot] = true;
    pthread_mutex_unlock(&cg_host_lock);
    return first;
}

static int write_ctl(struct cgroup *cg, int ctl, const char *file, const char *val, struct cerr *err)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/%s", cg->dir[ctl], file);
    int r = util_write_file(p, val);
    if (r < 0)
        return cerr_set(err, r, "cgroup: cannot set %s to %s: %s", p, val, strerror(-r));
    return 0;
}

static int set_limits(struct cgroup *cg, const struct sandbox_limits *l, struct cerr *err)
{
    char v[64];
    int r = 0;
    if (cg->v2) {
        /* Controllers must be enabled in the parent's subtree_control for our child to have them. */
        if (l->memory) {
            snprintf(v, sizeof(v), "%" PRIu64, l->memory);
            if ((r = write_ctl(cg, CG_MEMORY, "memory.max", v, err)) < 0)
                return r;
            (void)write_ctl(cg, CG_MEMORY, "memory.swap.max", "0", NULL); /* absent without swap */
        }
        if (l->pids) {
            snprintf(v, sizeof(v), "%" PRIu64, l->pids);
            if ((r = write_ctl(cg, CG_PIDS, "pids.max", v, err)) < 0)
                return r;
        }
        if (l->cpus > 0) {
            snprintf(v, sizeof(v), "%lld 100000", (long long)(l->cpus * 100000.0 + 0.5));
            if ((r = write_ctl(cg, CG_CPU, "cpu.max", v, err)) < 0)
                return r;
        }
        return 0;
    }
    if (l->memory) {
        snprintf(v, sizeof(v), "%" PRIu64, l->memory);
        if ((r = write_ctl(cg, CG_MEMORY, "memory.limit_in_bytes", v, err)) < 0)
            return r;
        /* Without swap accounting the file is absent; with it, swap must not extend the budget. */
        char p[4096];
        snprintf(p, sizeof(p), "%s/memory.memsw.limit_in_bytes", cg->dir[CG_MEMORY]);
        if (access(p, F_OK) == 0 &&
            (r = write_ctl(cg, CG_MEMORY, "memory.memsw.limit_in_bytes", v, err)) < 0)
            return r;
        (void)write_ctl(cg, CG_MEMORY, "memory.swappiness", "0", NULL);
    }
    if (l->pids) {
        snprintf(v, sizeof(v), "%" PRIu64, l->pids);
        if ((r = write_ctl(cg, CG_PIDS, "pids.max", v, err)) < 0)
            return r;
    }
    if (l->cpus > 0) {
        if ((r = write_ctl(cg, CG_CPU, "cpu.cfs_period_us", "100000", err)) < 0)
            return r;
        snprintf(v, sizeof(v), "%lld", (long long)(l->cpus * 100000.0 + 0.5));
        if ((r = write_ctl(cg, CG_CPU, "cpu.cfs_quota_us", v, err)) < 0)
            return r;
    }
    return 0;
}

/* Removes the empty cgroup DIR with the cgroups corral nests in it (v2's main leaf, command
 * sandboxes' corral-PID-N), deepest first. Only rmdir: a cgroup that still holds a process stays
 * (EBUSY), and nothing is ever killed here. DEPTH bounds the walk. */
static void rmdir_tree(const char *dir, int depth)
{
    DIR *d = depth > 0 ? opendir(dir) : NULL;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            long pid;
            unsigned long n;
            if (strcmp(e->d_name, "main") &&
                (sscanf(e->d_name, "corral-%ld-%lu", &pid, &n) != 2 || pid <= 0))
                continue;
            char p[4096 + 8];
            if (snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) < (int)sizeof(p))
                rmdir_tree(p, depth - 1);
        }
        closedir(d);
    }
    (void)rmdir(dir);
}

/* Creates cgroup directory D. A D that already exists bears this process's pid and a counter
 * value it never used: a corral that had this pid before was killed and left it (pid reuse).
 * Such a leftover is removed (when empty) and the mkdir tried again. */
static int cg_mkdir(const char *d)
{
    if (mkdir(d, 0755) == 0)
        return 0;
    if (errno != EEXIST)
        return -1;
    rmdir_tree(d, 8);
    return mkdir(d, 0755);
}

/* A cgroup left by a corral that was killed (corral-PID-N whose PID is gone) and now empty. */
static void sweep_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid;
        unsigned long n;
        if (sscanf(e->d_name, "corral-%ld-%lu", &pid, &n) != 2 || pid <= 0)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char p[4096 + 8];
        /* With its main leaf and nested command cgroups; any still holding a process stays. */
        if (snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) < (int)sizeof(p))
            rmdir_tree(p, 8);
    }
    closedir(d);
}

/* cgroup v2 lets a cgroup hand controllers to its children only while no process lives in it
 * (the "no internal processes" rule). corral's own cgroup usually holds corral itself: when that
 * is all it holds, corral moves into a leaf of its own (corral-PID-0, swept like any other once
 * corral is gone) and enables memory, pids and cpu for its children. */
static int v2_enable_children(const char *dir, bool may_move_self, struct cerr *err)
{
    char p[4096], have[256];
    snprintf(p, sizeof(p), "%s/cgroup.subtree_control", dir);
    if (util_read_file(p, have, sizeof(have)) == 0 && strstr(have, "memory") && strstr(have, "pids") &&
        strstr(have, "cpu"))
        return 0;
    int r = util_write_file(p, "+memory +pids +cpu");
    if (r == -EBUSY && may_move_self) {
        char procs[4096], self[32];
        snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
        snprintf(self, sizeof(self), "%ld\n", (long)getpid());
        if (util_read_file(p, procs, sizeof(procs)) == 0 && !strcmp(procs, self)) {
            char leaf[4096 + 64];
            snprintf(leaf, sizeof(leaf), "%s/corral-%ld-0", dir, (long)getpid());
            if ((mkdir(leaf, 0755) == 0 || errno == EEXIST)) {
                char lp[sizeof(leaf) + 16];
                snprintf(lp, sizeof(lp), "%s/cgroup.procs", leaf);
                if (util_write_file(lp, self) == 0) {
                    snprintf(p, sizeof(p), "%s/cgroup.subtree_control", dir);
                    r = util_write_file(p, "+memory +pids +cpu");
                }
            }
        }
    }
    if (r < 0)
        return cerr_set(
            err, r, "cgroup v2: cannot enable memory, pids and cpu for the children of %s: %s%s", dir,
            strerror(-r),
            r == -EBUSY ? " (other processes share corral's cgroup; start corral in a cgroup of its "
                          "own, e.g. 'systemd-run --scope -p Delegate=yes corral ...')"
                        : "");
    return 0;
}

int cgroup_create(const struct sandbox_limits *l, const struct cgroup *parent, struct cgroup **out,
                  struct cerr *err)
{
    struct cgroup *cg = calloc(1, sizeof(*cg));
    if (!cg)
        return cerr_set(err, ENOMEM, "cgroup: out of memory");
    cg_host_load();
    const char *root = cg_host.v2_root, *own = cg_host.v2_own;
    cg->v2 = cg_host.v2;
    char name[96];
    /* Command sandboxes are spawned from several worker threads at once. */
    snprintf(name, sizeof(name), "corral-%ld-%lu", (long)getpid(),
             __atomic_add_fetch(&cg_counter, 1, __ATOMIC_RELAXED));
    int r = 0;

    if (cg->v2) {
        const char *base = parent ? parent->rel : own;
        cg->rel = util_printf("%s/%s", strcmp(base, "/") ? base : "", name);
        char *d = cg->rel ? util_printf("%s%s", root, cg->rel) : NULL;
        if (!d) {
            r = cerr_set(err, ENOMEM, "cgroup: out of memory");
            goto fail;
        }
        for (int i = 0; i < CG_NCTL; i++)
            cg->dir[i] = d;
        cg->ndirs = 1;
        char pd[4096];
        snprintf(pd, sizeof(pd), "%s%s", root, parent ? parent->rel : own);
        if (!parent && cg_sweep_once(CG_NCTL))
            sweep_stale(pd);
        if ((r = v2_enable_children(pd, !parent, err)) < 0) {
            cg->ndirs = 0;
            free(d);
            for (int i = 0; i < CG_NCTL; i++)
                cg->dir[i] = NULL;
            goto fail;
        }
        if (cg_mkdir(d) < 0) {
            r = cerr_set(err, errno,
                         "cgroup: cannot create %s: %s (corral needs write access to its own cgroup; "
                         "run as root or under a delegated subtree)",
                         d, strerror(errno));
            cg->ndirs = 0;
            goto fail;
        }
        /* Processes go in DIR/main; DIR itself hands controllers to main and to nested command
         * sandboxes, and carries the budgets for all of them. */
        cg->leaf = util_printf("%s/main", d);
        if (!cg->leaf || (r = v2_enable_children(d, false, err)) < 0 || mkdir(cg->leaf, 0755) < 0) {
            if (r == 0)
                r = cerr_set(err, errno ? errno : ENOMEM, "cgroup: cannot create %s/main: %s", d,
                             strerror(errno));
            goto fail;
        }
    } else {
        /* v1: one directory per hierarchy; cpu and cpuacct may share one. */
        for (int i = 0; i < CG_NCTL; i++) {
            char mnt[1024], ownc[2048];
            if (parent) {
                /* Nested: inside the parent's directory of the same controller, if it has one. */
                if (!parent->dir[i])
                    continue;
                snprintf(mnt, sizeof(mnt), "%s", parent->dir[i]);
            } else if (cg_host.mount_rc[i] < 0) {
                if (i == CG_CPUACCT)
                    continue; /* usage then comes from cpu.stat where available */
                if ((i == CG_MEMORY && !l->memory) || (i == CG_PIDS && !l->pids) ||
                    (i == CG_CPU && !(l->cpus > 0)))
                    continue;
                r = cerr_set(err, ENOENT,
                             "cgroup: no v1 hierarchy with the '%s' controller is mounted and cgroup v2 "
                             "lacks memory/pids/cpu; mount it or drop that budget",
                             cg_ctl_name[i]);
                goto fail;
            } else {
                snprintf(mnt, sizeof(mnt), "%s", cg_host.mount[i]);
            }
            if (parent || cg_host.own_rc[i] < 0)
                snprintf(ownc, sizeof(ownc), "/");
            else
                snprintf(ownc, sizeof(ownc), "%s", cg_host.own[i]);
            const char *base = ownc;
            if (!cg->rel)
                cg->rel = parent ? util_printf("%s/%s", parent->rel, name)
                                 : util_printf("%s/%s", strcmp(base, "/") ? base : "", name);
            char *d = util_printf("%s%s/%s", mnt, strcmp(base, "/") ? base : "", name);
            if (!d || !cg->rel) {
                free(d);
                r = cerr_set(err, ENOMEM, "cgroup: out of memory");
                goto fail;
            }
            bool shared = false;
            for (int j = 0; j < i; j++)
                if (cg->dir[j] && !strcmp(cg->dir[j], d)) {
                    free(d);
                    d = cg->dir[j];
                    shared = true;
                }
            cg->dir[i] = d;
            if (shared)
                continue;
            if (!parent && cg_sweep_once(i)) {
                char pd[4096];
                snprintf(pd, sizeof(pd), "%s%s", mnt, strcmp(ownc, "/") ? ownc : "");
                sweep_stale(pd);
            }
            if (cg_mkdir(d) < 0) {
                r = cerr_set(err, errno,
                             "cgroup: cannot create %s: %s (corral needs write access to its own %s "
                             "cgroup; run as root)",
                             d, strerror(errno), cg_ctl_name[i]);
                cg->dir[i] = NULL;
                free(d);
                goto fail;
            }
            cg->ndirs++;
        }
    }
    if ((r = set_limits(cg, l, err)) < 0)
        goto fail;
    *out = cg;
    return 0;
fail:
    cgroup_destroy(cg);
    return r;
}

int cgroup_task_fds(const struct cgroup *cg, int *fds, struct cerr *err)
{
    int n = 0;
    if (cg->v2) { /* only when init could not be born in it (no directory fd) */
        char p[4096];
        snprintf(p, sizeof(p), "%s/cgroup.procs", cg->leaf);
        if ((fds[0] = open(p, O_WRONLY | O_CLOEXEC)) < 0)
            return cerr_set(err, errno, "cgroup: cannot open %s: %s", p, strerror(errno));
        return 1;
    }
    for (int i = 0; i < CG_NCTL; i++) {
        if (!cg->dir[i])
            continue;
        bool seen = false;
        for (int j = 0; j < i; j++)
            seen |= cg->dir[j] == cg->dir[i];
        if (seen)
            continue;
        char p[4096];
        snprintf(p, sizeof(p), "%s/tasks", cg->dir[i]);
        int fd = open(p, O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            while (n > 0)
                close(fds[--n]);
            return cerr_set(err, e, "cgroup: cannot open %s: %s", p, strerror(e));
        }
        fds[n++] = fd;
    }
    return n;
}

static uint64_t read_u64(const struct cgroup *cg, int ctl, const char *file)
{
    char p[4096], buf[64];
    if (!cg->dir[ctl])
        return 0;
    snprintf(p, sizeof(p), "%s/%s", cg->dir[ctl], file);
    if (util_read_file(p, buf, sizeof(buf)) < 0)
        return 0;
    return strtoull(buf, NULL, 10);
}

/* "key value" lines (memory.events, pids.events, cpu.stat, memory.oom_control). */
static uint64_t read_keyed(const struct cgroup *cg, int ctl, const char *file, const char *key)
{
    char p[4096], buf[4096];
    if (!cg->dir[ctl])
        return 0;
    snprintf(p, sizeof(p), "%s/%s", cg->dir[ctl], file);
    if (util_read_file(p, buf, sizeof(buf)) < 0)
        return 0;
    size_t kl = strlen(key);
    for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (!strncmp(line, key, kl) && line[kl] == ' ')
            return strtoull(line + kl + 1, NULL, 10);
    return 0;
}

void cgroup_usage(const struct cgroup *cg, struct sandbox_result *r)
{
    if (!cg)
        return;
    r->pids_current = read_u64(cg, CG_PIDS, "pids.current"); /* same file in v1 and v2 */
    if (cg->v2) {
        r->memory_peak = read_u64(cg, CG_MEMORY, "memory.peak");
        r->cpu_usec = read_keyed(cg, CG_CPU, "cpu.stat", "usage_usec");
        r->oom = read_keyed(cg, CG_MEMORY, "memory.events", "oom_kill") > 0 ||
                 read_keyed(cg, CG_MEMORY, "memory.events", "max") > 0;
        r->pids_limited = read_keyed(cg, CG_PIDS, "pids.events", "max") > 0;
        return;
    }
    r->memory_peak = read_u64(cg, CG_MEMORY, "memory.max_usage_in_bytes");
    if (cg->dir[CG_CPUACCT])
        r->cpu_usec = read_u64(cg, CG_CPUACCT, "cpuacct.usage") / 1000;
    r->oom = read_keyed(cg, CG_MEMORY, "memory.oom_control", "oom_kill") > 0;
    r->pids_limited = read_keyed(cg, CG_PIDS, "pids.events", "max") > 0;
}

const char *cgroup_path(const struct cgroup *cg)
{
    return cg ? cg->rel : NULL;
}

bool cgroup_born_in(void)
{
    cg_host_load();
    return cg_host.v2;
}

int cgroup_clone_fd(const struct cgroup *cg)
{
    if (!cg || !cg->v2 || !cg->leaf)
        return -1;
    return open(cg->leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* SIGKILL every process listed in DIR/cgroup.procs (v1 has no cgroup.kill). */
static int kill_listed(const char *dir)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
    FILE *f = fopen(p, "re");
    if (!f)
        return errno == ENOENT ? 0 : -errno;
    long pid;
    int n = 0;
    while (fscanf(f, "%ld", &pid) == 1)
        if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
            n++;
    fclose(f);
    return n;
}

int cgroup_kill(struct cgroup *cg)
{
    if (!cg)
        return 0;
    if (cg->v2) {
        char p[4096];
        snprintf(p, sizeof(p), "%s/cgroup.kill", cg->dir[0]);
        if (util_write_file(p, "1") == 0)
            return 0;
    }
    /* Children of a nested command sandbox live in sub-cgroups: walk them too. */
    for (int i = 0; i < CG_NCTL; i++) {
        if (!cg->dir[i])
            continue;
        DIR *d = opendir(cg->dir[i]);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)))
                if (e->d_type == DT_DIR && e->d_name[0] != '.') {
                    char sub[4096];
                    snprintf(sub, sizeof(sub), "%s/%s", cg->dir[i], e->d_name);
                    kill_listed(sub);
                }
            closedir(d);
        }
        kill_listed(cg->dir[i]);
    }
    return 0;
}

static bool procs_empty(const char *dir)
{
    char p[4096], buf[32];
    snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
    return util_read_file(p, buf, sizeof(buf)) < 0 || buf[0] == '\0';
}

void cgroup_destroy(struct cgroup *cg)
{
    if (!cg)
        return;
    if (cg->leaf) {
        for (int tries = 0; tries < 200 && rmdir(cg->leaf) < 0 && errno == EBUSY; tries++) {
            kill_listed(cg->leaf);
            struct timespec ts = {0, 2 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        free(cg->leaf);
    }
    for (int i = CG_NCTL - 1; i >= 0; i--) {
        char *d = cg->dir[i];
        if (!d)
            continue;
        bool later = false;
        for (int j = 0; j < i; j++)
            later |= cg->dir[j] == d;
        if (later)
            continue;
        /* Processes leave a cgroup a moment after they are reaped: retry briefly, killing any
         * straggler, so nothing is left behind. */
        for (int tries = 0; tries < 200; tries++) {
            if (rmdir(d) == 0 || errno == ENOENT)
                break;
            if (errno != EBUSY)
                break;
            if (!procs_empty(d))
                kill_listed(d);
            struct timespec ts = {0, 2 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        free(d);
    }
    free(cg->rel);
    free(cg);
}
