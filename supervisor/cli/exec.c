/* supervisor/cli/exec.c: `corral exec [options] -- PROGRAM [ARG...]`: run one program in a fresh
 * sandbox, like bwrap or nsjail, with corral's defaults (no network, budgets, minimal root,
 * seccomp, no capabilities). The exit status is the program's own (docs/sandbox.md, "Exit status"). */
#include "policy/policy.h"
#include "sandbox/sandbox.h"
#include "supervisor/runtime/exec_record.h"
#include "supervisor/trail/trail.h"
#include "supervisor/cli/cli.h"
#include "supervisor/runtime/rundir.h"
#include "sandbox/zygote.h"
#include "supervisor/runtime/serve.h"
#include "supervisor/listeners/listener.h"

#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static void exec_usage(FILE *f)
{
    fputs("usage: corral exec [OPTIONS] -- PROGRAM [ARG...]\n"
          "\n"
          "Run PROGRAM in a fresh sandbox: new user, mount, pid, ipc, uts, net and cgroup\n"
          "namespaces; a minimal read-only root; a private /tmp; a seccomp filter; no\n"
          "capabilities; memory, pids and cpu budgets in its own cgroup. PROGRAM is found\n"
          "on the host (PATH, or a path like ./agent) and shown read-only inside.\n"
          "\n"
          "options:\n"
          "  --net none|loopback|proxy  network: none (default), only a private loopback, or\n"
          "                        egress through corral's filtering proxies (docs/egress.md)\n"
          "  --allow HOST[:PORT]   --net proxy: allow connections to HOST (a name, *.DOMAIN, an\n"
          "                        IP address or CIDR; no port: 80 and 443; :* every port)\n"
          "  --deny HOST[:PORT]    --net proxy: refuse them, whatever allows them (repeatable)\n"
          "  --add-host NAME:ADDR  --net proxy: resolve NAME to ADDR (repeatable)\n"
          "  --memory SIZE         memory budget, e.g. 256M (default: the role's; 256M)\n"
          "  --pids N              process budget (default: the role's; 256)\n"
          "  --cpus FRACTION       cpu budget in CPUs, e.g. 0.5 (default: the role's; 1)\n"
          "  --timeout SECONDS     wall-clock limit; exit status 124 when it runs out\n"
          "  --tmp-size SIZE       size of the private /tmp (default 64M)\n"
          "  --ro HOST[:INSIDE]    bind a host path read-only (repeatable)\n"
          "  --rw HOST[:INSIDE]    bind a host path read-write, id-mapped to the sandbox user\n"
          "  --chdir DIR           working directory inside (default /)\n"
          "  --env NAME=VALUE      add to the program's minimal environment (repeatable)\n"
          "  --no-landlock         do not add the landlock write restriction\n"
          "  --stats               print usage (wall, cpu, peak memory, budgets hit) on stderr\n"
          "  --policy FILE         take the profile from a role of this policy file (without it:\n"
          "                        the embedded default policy, role 'default'); the options\n"
          "                        above override the role's values\n"
          "  --role ROLE           the role of --policy to use (default: 'default')\n"
          "  --workspace DIR       serve the tool protocol on the program's stdin/stdout against DIR\n"
          "  --trail FILE          record the run in a trail database (write-ahead)\n"
          "  --trail-durability full|normal  full (default): fsync per commit, survives power\n"
          "                        loss; normal: survives a crash of corral, not of the machine\n"
          "  -h, --help            this text\n"
          "\n"
          "exit status: the program's own; 128+N if it died of signal N; 124 on timeout;\n"
          "125 if corral failed (one line on stderr says why); 126 if PROGRAM cannot be\n"
          "executed; 127 if it is not found; 2 on a usage error.\n",
          f);
}

#define MAX_BINDS 64
enum {
    SET_NET = 1,
    SET_MEMORY = 2,
    SET_PIDS = 4,
    SET_CPUS = 8,
    SET_TMP = 16,
    SET_LANDLOCK = 32,
    SET_CWD = 64
};
#define MAX_ENV 128
#define MAX_EGRESS 256

struct exec_opts {
    struct sandbox_profile prof;
    struct sandbox_bind binds[MAX_BINDS];
    char *bind_store[MAX_BINDS * 2];
    size_t n_binds;
    struct sandbox_bind *all_binds; /* the role's binds, then the command line's */
    char *env[MAX_ENV + 16];
    size_t n_env;
    const char *egress_args[3][MAX_EGRESS]; /* --allow, --deny, --add-host */
    size_t n_egress[3];
    double timeout;
    unsigned set; /* SET_* bits: options given on the command line, which override the policy */
    bool stats;
    const char *policy, *role, *workspace, *trail;
    enum trail_durability durability;
};

static int add_bind(struct exec_opts *o, const char *spec, bool writable)
{
    if (o->n_binds >= MAX_BINDS) {
        fprintf(stderr, "corral exec: too many binds (at most %d)\n", MAX_BINDS);
        return -1;
    }
    char *host = strdup(spec);
    if (!host)
        return -1;
    char *inside = strchr(host, ':');
    if (inside)
        *inside++ = '\0';
    /* Bound by an fd opened now with no link on the way, never by the string: a link in a
     * directory another user can write (/tmp/x) could be swapped, before or while the sandbox
     * is made, to lead to /etc, which the agent would then write. The fd lives until exit. */
    int fd = util_open_nolinks(host, O_PATH);
    char *fdpath = fd < 0 ? NULL : util_printf("/proc/self/fd/%d", fd);
    /* Where it is, as the kernel names the fd: absolute, no link, no "..". */
    char *abs = fdpath ? realpath(fdpath, NULL) : NULL;
    if (!abs || !fdpath) {
        fprintf(stderr, "corral exec: --%s %s: %s\n", writable ? "rw" : "ro", host,
                fd == -ELOOP ? "the path goes through a symbolic link, which another user could "
                               "swap; give its real path"
                             : strerror(fd < 0 ? -fd : ENOMEM));
        if (fd >= 0)
            close(fd);
        free(abs);
        free(fdpath);
        free(host);
        return -1;
    }
    if (inside && inside[0] != '/') {
        fprintf(stderr, "corral exec: --%s %s: the path inside must be absolute\n",
                writable ? "rw" : "ro", spec);
        free(host);
        free(abs);
        return -1;
    }
    char *in = strdup(inside ? inside : abs);
    free(host);
    free(abs);
    o->bind_store[2 * o->n_binds] = fdpath;
    o->bind_store[2 * o->n_binds + 1] = in;
    o->binds[o->n_binds++] = (struct sandbox_bind){.host = fdpath, .inside = in, .writable = writable};
    return 0;
}

static int parse(int argc, char **argv, struct exec_opts *o)
{
    enum {
        O_NET = 256,
        O_MEMORY,
        O_PIDS,
        O_CPUS,
        O_TIMEOUT,
        O_TMP,
        O_RO,
        O_RW,
        O_CHDIR,
        O_ENV,
        O_NOLL,
        O_STATS,
        O_POLICY,
        O_ROLE,
        O_WS,
        O_TRAIL,
        O_DURABILITY,
        O_ALLOW,
        O_DENY,
        O_ADDHOST
    };
    static const struct option longopts[] = {
        {"net", required_argument, 0, O_NET},
        {"memory", required_argument, 0, O_MEMORY},
        {"pids", required_argument, 0, O_PIDS},
        {"cpus", required_argument, 0, O_CPUS},
        {"timeout", required_argument, 0, O_TIMEOUT},
        {"tmp-size", required_argument, 0, O_TMP},
        {"ro", required_argument, 0, O_RO},
        {"rw", required_argument, 0, O_RW},
        {"chdir", required_argument, 0, O_CHDIR},
        {"env", required_argument, 0, O_ENV},
        {"no-landlock", no_argument, 0, O_NOLL},
        {"stats", no_argument, 0, O_STATS},
        {"policy", required_argument, 0, O_POLICY},
        {"role", required_argument, 0, O_ROLE},
        {"workspace", required_argument, 0, O_WS},
        {"trail", required_argument, 0, O_TRAIL},
        {"trail-durability", required_argument, 0, O_DURABILITY},
        {"allow", required_argument, 0, O_ALLOW},
        {"deny", required_argument, 0, O_DENY},
        {"add-host", required_argument, 0, O_ADDHOST},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        uint64_t v;
        double d;
        switch (c) {
        case 'h': exec_usage(stdout); return 1;
        case O_NET:
            if (!strcmp(optarg, "none"))
                o->prof.net = SANDBOX_NET_NONE;
            else if (!strcmp(optarg, "loopback"))
                o->prof.net = SANDBOX_NET_LOOPBACK;
            else if (!strcmp(optarg, "proxy"))
                o->prof.net = SANDBOX_NET_PROXY;
            else {
                fprintf(stderr, "corral exec: --net takes 'none', 'loopback' or 'proxy', not '%s'\n",
                        optarg);
                return -1;
            }
            o->set |= SET_NET;
            break;
        case O_MEMORY:
        case O_TMP:
            if (util_parse_size(optarg, &v) < 0) {
                fprintf(stderr, "corral exec: --%s: '%s' is not a size (try 256M or 1G)\n",
                        c == O_MEMORY ? "memory" : "tmp-size", optarg);
                return -1;
            }
            if (c == O_MEMORY && v && v < (4u << 20)) {
                fprintf(stderr, "corral exec: --memory %s is below the 4M a sandbox needs to start\n",
                        optarg);
                return -1;
            }
            if (c == O_MEMORY)
                o->prof.limits.memory = v;
            else
                o->prof.limits.tmp_size = v ? v : 1;
            o->set |= c == O_MEMORY ? SET_MEMORY : SET_TMP;
            break;
        case O_PIDS:
            if (util_parse_u64(optarg, &v) < 0 || v > 4194304) {
                fprintf(stderr, "corral exec: --pids takes a whole number up to 4194304, not '%s'\n",
                        optarg);
                return -1;
            }
            if (v == 1) {
                fprintf(stderr, "corral exec: --pids 1 leaves no room for the program next to the "
                                "sandbox's init; use 2 or more\n");
                return -1;
            }
            o->prof.limits.pids = v;
            o->set |= SET_PIDS;
            break;
        case O_CPUS:
            if (util_parse_seconds(optarg, &d) < 0 || d < 0.01 || d > 4096) {
                fprintf(stderr,
                        "corral exec: --cpus takes a number of CPUs from 0.01, e.g. 0.5, not '%s'\n",
                        optarg);
                return -1;
            }
            o->prof.limits.cpus = d;
            o->set |= SET_CPUS;
            break;
        case O_TIMEOUT:
            if (util_parse_seconds(optarg, &d) < 0) {
                fprintf(stderr, "corral exec: --timeout takes seconds (e.g. 30, 1.5, 250ms), not '%s'\n",
                        optarg);
                return -1;
            }
            o->timeout = d;
            break;
        case O_RO:
        case O_RW:
            if (add_bind(o, optarg, c == O_RW) < 0)
                return -1;
            break;
        case O_CHDIR:
            if (optarg[0] != '/') {
                fprintf(stderr, "corral exec: --chdir takes an absolute path inside the sandbox\n");
                return -1;
            }
            o->prof.cwd = optarg;
            o->set |= SET_CWD;
            break;
        case O_ENV:
            if (!strchr(optarg, '=') || optarg[0] == '=') {
                fprintf(stderr, "corral exec: --env takes NAME=VALUE, not '%s'\n", optarg);
                return -1;
            }
            if (o->n_env >= MAX_ENV) {
                fprintf(stderr, "corral exec: too many --env (at most %d)\n", MAX_ENV);
                return -1;
            }
            o->env[o->n_env++] = optarg;
            break;
        case O_NOLL:
            o->prof.landlock = false;
            o->set |= SET_LANDLOCK;
            break;
        case O_STATS: o->stats = true; break;
        case O_POLICY: o->policy = optarg; break;
        case O_ROLE: o->role = optarg; break;
        case O_WS: o->workspace = optarg; break;
        case O_TRAIL: o->trail = optarg; break;
        case O_ALLOW:
        case O_DENY:
        case O_ADDHOST: {
            static const char *const names[] = {"allow", "deny", "add-host"};
            size_t k = (size_t)(c - O_ALLOW);
            if (o->n_egress[k] >= MAX_EGRESS) {
                fprintf(stderr, "corral exec: too many --%s (at most %d)\n", names[k], MAX_EGRESS);
                return -1;
            }
            o->egress_args[k][o->n_egress[k]++] = optarg;
            break;
        }
        case O_DURABILITY:
            if (trail_durability_parse(optarg, &o->durability) < 0) {
                fprintf(stderr, "corral exec: --trail-durability takes 'full' or 'normal', not '%s'\n",
                        optarg);
                return -1;
            }
            break;
        default:
            fprintf(stderr, "corral exec: unknown or incomplete option '%s'; see 'corral exec --help'\n",
                    argv[optind - 1]);
            return -1;
        }
    }
    if (optind >= argc) {
        fprintf(stderr,
                "corral exec: no PROGRAM given; usage: corral exec [OPTIONS] -- PROGRAM [ARG...]\n");
        return -1;
    }
    return 0;
}

/* The minimal environment plus --env, later entries replacing earlier ones of the same name. */
static void build_env(struct exec_opts *o)
{
    char *all[MAX_ENV + 16];
    size_t n = 0;
    for (size_t i = 0; sandbox_default_env[i] && n < 8; i++)
        all[n++] = (char *)sandbox_default_env[i];
    for (size_t i = 0; o->prof.net == SANDBOX_NET_PROXY && egress_env()[i] && i < 8; i++)
        all[n++] = (char *)egress_env()[i]; /* before --env: a program may be told otherwise */
    for (size_t i = 0; i < o->n_env; i++) {
        size_t kl = (size_t)(strchr(o->env[i], '=') - o->env[i]);
        size_t j;
        for (j = 0; j < n; j++)
            if (!strncmp(all[j], o->env[i], kl + 1))
                break;
        all[j] = o->env[i];
        if (j == n)
            n++;
    }
    memcpy(o->env, all, n * sizeof(char *));
    o->env[n] = NULL;
    o->prof.envp = o->env;
}

static void print_stats(const struct sandbox_result *r, const struct sandbox_profile *p)
{
    fprintf(stderr, "corral: stats: wall=%.3fs cpu=%.3fs memory_peak=%.1fMiB", r->wall_sec,
            (double)r->cpu_usec / 1e6, (double)r->memory_peak / (1024.0 * 1024.0));
    if (p->limits.memory)
        fprintf(stderr, " memory_limit=%.0fMiB", (double)p->limits.memory / (1024.0 * 1024.0));
    if (p->limits.pids)
        fprintf(stderr, " pids_limit=%" PRIu64, p->limits.pids);
    if (p->limits.cpus > 0)
        fprintf(stderr, " cpus=%.2f", p->limits.cpus);
    fprintf(stderr, " oom=%s pids_limited=%s\n", r->oom ? "yes" : "no", r->pids_limited ? "yes" : "no");
}

/* The role's profile, then the command line's options on top; the seccomp filter stays the
 * role's (derived from its authority), save that --net loopback needs inet sockets. */
static int apply_role(struct exec_opts *o, const struct policy_role_view *v)
{
    struct sandbox_profile cli = o->prof;
    o->prof = v->sandbox;
    if (o->set & SET_NET) {
        o->prof.net = cli.net;
        o->prof.seccomp.network = cli.net != SANDBOX_NET_NONE;
        /* With a policy file the admin decides; the embedded default lets the command line ask. */
        if (cli.net != SANDBOX_NET_NONE && !v->authority.network && o->policy) {
            fprintf(
                stderr,
                "corral exec: --net %s: role '%s' has no network authority; give it one in the policy\n",
                cli.net == SANDBOX_NET_LOOPBACK ? "loopback" : "proxy", v->name);
            return -1;
        }
    }
    if (o->set & SET_MEMORY)
        o->prof.limits.memory = cli.limits.memory;
    if (o->set & SET_PIDS)
        o->prof.limits.pids = cli.limits.pids;
    if (o->set & SET_CPUS)
        o->prof.limits.cpus = cli.limits.cpus;
    if (o->set & SET_TMP)
        o->prof.limits.tmp_size = cli.limits.tmp_size;
    if (o->set & SET_LANDLOCK)
        o->prof.landlock = cli.landlock;
    if (o->set & SET_CWD)
        o->prof.cwd = cli.cwd;
    if (o->timeout <= 0 && v->budgets.wall_time > 0)
        o->timeout = v->budgets.wall_time;
    size_t n = v->sandbox.n_binds + o->n_binds;
    if (n) {
        o->all_binds = calloc(n, sizeof(*o->all_binds));
        if (!o->all_binds) {
            fprintf(stderr, "corral: out of memory\n");
            return -1;
        }
        for (size_t i = 0; i < v->sandbox.n_binds; i++)
            o->all_binds[i] = v->sandbox.binds[i];
        for (size_t i = 0; i < o->n_binds; i++)
            o->all_binds[v->sandbox.n_binds + i] = o->binds[i];
    }
    o->prof.binds = o->all_binds;
    o->prof.n_binds = n;
    return 0;
}

/* Budget usage is sampled this often while a recorded run goes on (budget_warning). */
#define SAMPLE_SEC 0.25

struct sampler {
    struct exec_record *rec;
    struct sandbox_child *child;
    const struct sandbox_profile *prof;
};

static int sample_budgets_staged(struct sampler *s)
{
    struct sandbox_result u = {0};
    sandbox_child_usage(s->child, &u);
    return exec_record_sample(s->rec, &u, s->prof);
}

static void sample_budgets(void *data)
{
    (void)sample_budgets_staged(data);
}

/* Without an agent no turn end commits: a sample commits what it staged. A failure leaves the
 * record failed (status 125 at the end). */
static void sample_budgets_commit(void *data)
{
    struct sampler *s = data;
    if (sample_budgets_staged(s) > 0)
        (void)exec_record_finish(s->rec);
}

int cli_exec(int argc, char **argv)
{
    struct exec_opts o;
    memset(&o, 0, sizeof(o));
    o.durability = TRAIL_DURABILITY_FULL;
    sandbox_profile_default(&o.prof);
    int pr = parse(argc, argv, &o);
    int status = CORRAL_EXIT_INTERNAL;
    struct sandbox_child *child = NULL;
    _cleanup_free_ char *program = NULL;
    struct policy *pol = NULL;
    struct policy_role_view view;
    struct trail *trail = NULL;
    struct exec_record rec = {0};
    struct listener *notify = NULL;
    struct egress_setup egress_setup = {0};
    sigset_t fwd, old;
    if (pr != 0) {
        status = pr > 0 ? CORRAL_EXIT_OK : CORRAL_EXIT_USAGE;
        goto out;
    }
    /* Every sandbox comes from the zygote, forked now while corral has one thread: --workspace
     * serves tools from a pool of threads, and commands start sandboxes of their own. A bare
     * `corral exec` takes the same path (one spawn path, the one the hostile tests prove). */
    struct cerr zerr = {0};
    if (zygote_start(&zerr) < 0) {
        fprintf(stderr, "corral: %s\n", zerr.msg);
        goto out;
    }
    /* The profile comes from a policy's role (the embedded default policy without --policy);
     * options given on the command line override it. */
    if (o.role && !o.policy) {
        fprintf(stderr, "corral exec: --role needs --policy FILE (without it the embedded default "
                        "policy's role 'default' applies)\n");
        status = CORRAL_EXIT_USAGE;
        goto out;
    }
    struct policy_diags diags = {0};
    int lr = o.policy ? policy_load_file(o.policy, &pol, &diags) : policy_load_default(&pol);
    if (lr < 0) {
        policy_diags_print(&diags, stderr);
        policy_diags_free(&diags);
        fprintf(
            stderr,
            "corral: policy %s has problems (listed above); 'corral policy check %s' shows them too\n",
            o.policy ? o.policy : "(embedded default)", o.policy ? o.policy : "");
        goto out;
    }
    policy_diags_free(&diags);
    struct cerr perr = {0};
    if (policy_role_resolve(pol, o.role ? o.role : "default", &view, &perr) < 0) {
        fprintf(stderr, "corral exec: %s\n", perr.msg);
        status = CORRAL_EXIT_USAGE;
        goto out;
    }
    if (apply_role(&o, &view) < 0) {
        status = CORRAL_EXIT_USAGE;
        goto out;
    }
    if (o.prof.net == SANDBOX_NET_PROXY) {
        struct cerr ee = {0};
        if (egress_setup_init(&egress_setup, view.egress, o.egress_args[0], o.n_egress[0],
                              o.egress_args[1], o.n_egress[1], o.egress_args[2], o.n_egress[2],
                              &ee) < 0) {
            fprintf(stderr, "corral exec: %s\n", ee.msg);
            status = CORRAL_EXIT_USAGE;
            goto out;
        }
        egress_setup_profile(&egress_setup, &o.prof);
    } else if (o.n_egress[0] + o.n_egress[1] + o.n_egress[2]) {
        fprintf(stderr, "corral exec: --allow, --deny and --add-host need --net proxy\n");
        status = CORRAL_EXIT_USAGE;
        goto out;
    }
    build_env(&o);
    /* With a trail, every denied syscall is a notification the supervisor records, then
     * refuses; without one the filter refuses on its own. */
    o.prof.seccomp.notify = o.trail != NULL;
    if (o.trail) {
        struct cerr terr = {0};
        /* As for `corral run`: never a trail another user made or could swap (rundir.h). */
        if (rundir_check_file(o.trail, "the trail", false, &terr) < 0 ||
            trail_open(o.trail, o.durability, &trail, &terr) < 0) {
            fprintf(stderr, "corral: trail %s: %s\n", o.trail, terr.msg);
            goto out;
        }
    }

    char **pargv = argv + optind;
    int fr = sandbox_find_program(pargv[0], &program);
    if (fr < 0) {
        fprintf(stderr, "corral: %s: %s\n", pargv[0],
                fr == -ENOENT ? "command not found" : strerror(-fr));
        status = fr == -ENOENT ? CORRAL_EXIT_NOTFOUND : CORRAL_EXIT_NOEXEC;
        goto out;
    }

    /* Signals that would end corral are forwarded to the sandbox instead; SIGKILL of corral
     * still ends the sandbox through init's parent-death signal. */
    sigemptyset(&fwd);
    int fwd_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < ARRAY_SIZE(fwd_sigs); i++)
        sigaddset(&fwd, fwd_sigs[i]);
    sigprocmask(SIG_BLOCK, &fwd, &old);

    struct cerr err = {0};
    /* Write-ahead: the sandbox and what will run in it are recorded before it exists. */
    if (trail && exec_record_start(&rec, trail, &o.prof, &view, program, pargv, o.timeout, &err) < 0) {
        fprintf(stderr, "corral: %s\n", err.msg);
        goto out_sig;
    }
    /* --workspace: the program's stdin/stdout are the JSON-RPC channel served by serve_exec. */
    int to_agent[2] = {-1, -1}, from_agent[2] = {-1, -1};
    struct sandbox_stdio stdio = {-1, -1, -1};
    if (o.workspace) {
        if (pipe2(to_agent, O_CLOEXEC) < 0 || pipe2(from_agent, O_CLOEXEC) < 0) {
            fprintf(stderr, "corral: pipe: %s\n", strerror(errno));
            goto out_sig;
        }
        stdio.in = to_agent[0];
        stdio.out = from_agent[1];
    }
    int sr = sandbox_spawn(&o.prof, program, pargv, o.workspace ? &stdio : NULL, &child, &err);
    if (o.workspace) {
        close(to_agent[0]);
        close(from_agent[1]);
    }
    if (sr < 0) {
        if (o.workspace) {
            close(to_agent[1]);
            close(from_agent[0]);
        }
        fprintf(stderr, "corral: %s\n", err.msg);
        exec_record_failed(&rec, err.msg);
        if (err.code == -ENOENT && strstr(err.msg, "cannot execute"))
            status = CORRAL_EXIT_NOTFOUND;
        else if (strstr(err.msg, "cannot execute"))
            status = CORRAL_EXIT_NOEXEC;
        goto out_sig;
    }
    exec_record_spawned(&rec, sandbox_child_pid(child));
    if (!o.workspace)
        zygote_release(); /* no sandbox follows: the zygote exits while the program runs */
    int lfd = sandbox_child_take_notify_fd(child);
    if (lfd >= 0) {
        struct listener_opts no = {
            .trail = trail, .workspace = rec.workspace, .profile = &o.prof.seccomp};
        if (listener_new(lfd, &no, &notify, &err) < 0) {
            fprintf(stderr, "corral: %s\n", err.msg);
            goto out_sig;
        }
    }
    struct sampler sampler = {.rec = &rec, .child = child, .prof = &o.prof};
    bool timed_out = false;
    /* One supervision loop (supervisor/runtime/serve.c) with or without --workspace: the
     * sandbox's end, forwarded signals, the timeout, budget samples and seccomp denials; with
     * --workspace also the tools the role allows (commands in sandboxes of their own, with the
     * role's command profile). Without an agent nothing commits at a turn's end: the sampler
     * commits what it staged itself. */
    struct serve_exec_opts so = {.workspace = o.workspace,
                                 .view = &view,
                                 .timeout_sec = o.timeout,
                                 .trail = trail,
                                 .workspace_id = rec.workspace[0] ? rec.workspace : NULL,
                                 .notify = notify,
                                 .sample_sec = trail ? SAMPLE_SEC : 0,
                                 .sample = o.workspace ? sample_budgets : sample_budgets_commit,
                                 .sample_data = &sampler,
                                 .trail_recovered = exec_record_recovered,
                                 .trail_recovered_data = &rec,
                                 .egress = o.prof.net == SANDBOX_NET_PROXY ? &egress_setup : NULL,
                                 .egress_opts = {.trail = trail,
                                                 .workspace = rec.workspace[0] ? rec.workspace : NULL,
                                                 .actor = view.name}};
    int r = serve_exec(&so, child, to_agent[1], from_agent[0], &timed_out, &err);
    if (o.workspace) {
        close(to_agent[1]);
        close(from_agent[0]);
    }
    if (r < 0) {
        fprintf(stderr, "corral: %s\n", err.msg);
        sandbox_child_signal(child, SIGKILL);
        sandbox_child_wait(child, &(struct sandbox_result){0}, &err);
        goto out_sig;
    }
    struct sandbox_result res;
    if (sandbox_child_wait(child, &res, &err) < 0) {
        fprintf(stderr, "corral: %s\n", err.msg);
        goto out_sig;
    }
    if (notify) {
        /* What was still waiting when the sandbox ended (its callers are gone), then one
         * aggregate entry per syscall denied past the per-syscall records. */
        struct cerr e = {0};
        (void)listener_handle(notify, 64, NULL, &e);
        listener_finish(notify);
    }
    exec_record_exited(&rec, &res, timed_out, &o.prof);
    if (o.stats)
        print_stats(&res, &o.prof);
    if (res.oom)
        fprintf(stderr,
                "corral: budget_exceeded: memory: the program reached its %.0fMiB memory budget and was "
                "killed\n",
                (double)o.prof.limits.memory / (1024.0 * 1024.0));
    if (res.pids_limited)
        fprintf(stderr,
                "corral: budget_exceeded: pids: the program reached its budget of %" PRIu64
                " processes; forks were refused\n",
                o.prof.limits.pids);
    if (timed_out) {
        fprintf(stderr, "corral: timeout: the program ran out of its %.3gs and was killed\n", o.timeout);
        status = CORRAL_EXIT_TIMEOUT;
    } else if (res.exited)
        status = res.exit_code;
    else
        status = 128 + res.signal;
out_sig:
    sigprocmask(SIG_SETMASK, &old, NULL);
out:
    listener_free(notify);
    egress_setup_free(&egress_setup);
    sandbox_child_free(child);
    zygote_stop(); /* with any prepared command sandbox */
    if (exec_record_finish(&rec) < 0 && status != CORRAL_EXIT_INTERNAL) {
        fprintf(stderr, "corral: the trail could not record the end of the run: %s\n", rec.err.msg);
        status = CORRAL_EXIT_INTERNAL;
    }
    trail_close(trail);
    for (size_t i = 0; i < 2 * o.n_binds; i++)
        free(o.bind_store[i]);
    free(o.all_binds);
    policy_free(pol);
    return status;
}
