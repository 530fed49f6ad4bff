/* supervisor/cli/run.c: `corral run POLICY` (a WACP session). */
#include "supervisor/cli/cli.h"

#include "policy/policy.h"
#include "sandbox/zygote.h"
#include "supervisor/runtime/control.h"
#include "supervisor/runtime/recovery.h"
#include "supervisor/runtime/run.h"
#include "supervisor/runtime/rundir.h"
#include "supervisor/trail/trail.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char run_usage[] =
    "usage: corral run POLICY --workspace DIR [options]\n"
    "\n"
    "Run a WACP session: start the policy's coordinator agent in the root workspace (DIR, the\n"
    "project's files) and serve it and every agent it creates, each in its own sandbox, until the\n"
    "coordinator's workspace is closed or failed.\n"
    "\n"
    "  --workspace DIR         the root workspace's files; integration writes accepted work here\n"
    "  --trail FILE            the trail (default: the policy's trail.path, else " DEFAULT_TRAIL ")\n"
    "  --trail-durability M    full (fsync per commit; default) or normal\n"
    "  --run-dir DIR           per-run state: workspace copies, checkpoint objects, agents' logs;\n"
    "                          made fresh by corral (default: DIR_OF_TRAIL/runs/STAMP-PID)\n"
    "  --control PATH          the control socket of corral ps, gate, inject and escalations\n"
    "                          (default: TRAIL.sock)\n"
    "  --timeout SECONDS       end the run (every workspace fails) after this long\n"
    "  --redelivery-ms N       acknowledgement timeout before an envelope is redelivered (default "
    "1000)\n"
    "  --quiet                 no summary at the end\n"
    "  --resume                the trail holds a run whose supervisor died: check the trail's\n"
    "                          integrity, rebuild the run from it, start its live agents again\n"
    "                          (told by wacp/recovered) and finish it (see corral(1))\n"
    "\n"
    "The trail, the run directory and the control socket must be in directories only root can\n"
    "write (not /tmp itself: a directory of root's, mode 0700, inside it is fine).\n"
    "\n"
    "Exit status: 0 the coordinator's workspace closed, 1 it failed (or the run timed out),\n"
    "2 usage error or a policy with problems, 125 corral itself failed.\n";

/* The user id of whoever started the run: the policy's users map, else "uid:N". */
static void owner_of(const struct policy *p, char *buf, size_t len)
{
    struct policy_session s;
    policy_session_get(p, &s);
    uid_t uid = getuid();
    const char *sudo = getenv("SUDO_UID");
    if (uid == 0 && sudo && *sudo) /* the human behind sudo, when there is one */
        uid = (uid_t)strtoul(sudo, NULL, 10);
    for (size_t i = 0; i < s.n_users; i++)
        if (s.users[i].uid == uid) {
            snprintf(buf, len, "%s", s.users[i].user_id);
            return;
        }
    snprintf(buf, len, "uid:%u", (unsigned)uid);
}

const char *cli_trail_path(const struct policy *p, const char *given)
{
    if (given)
        return given;
    struct policy_session s;
    policy_session_get(p, &s);
    return s.trail_path ? s.trail_path : DEFAULT_TRAIL;
}

/* The trail's last run, when its supervisor died: plain `corral run` must not start a second run
 * on top of it (its workspaces would stay live forever in the trail); --resume checks the trail's
 * integrity first (recovery spec 3.1) and reconstructs the workspaces' states (3.2). -1: go on
 * with a new run; else the exit status. */
static char resume_run_dir[PATH_MAX], resume_workspace[PATH_MAX];
static struct recovery_quarantine resume_quarantine;

static int check_unfinished(struct run_opts *o, bool resume)
{
    struct recovery_scan sc;
    struct cerr err = {0};
    /* What a supervisor that died had committed may still be only in the trail's ahead log:
     * applied first, so that the scan sees every entry it acknowledged. */
    if (trail_ahead_pending(o->trail_path) && trail_settle(o->trail_path, NULL, &err) < 0) {
        fprintf(stderr, "corral run: cannot apply the trail's ahead log: %s\n", err.msg);
        return CORRAL_EXIT_INTERNAL;
    }
    if (recovery_scan_file(o->trail_path, o->policy, &sc, &err) < 0) {
        fprintf(stderr, "corral run: cannot read the trail %s: %s\n", o->trail_path, err.msg);
        return CORRAL_EXIT_INTERNAL;
    }
    bool dead = sc.found && sc.unfinished && !recovery_supervisor_alive(&sc);
    if (!resume && !dead)
        return -1;
    if (!resume) {
        fprintf(stderr,
                "corral run: the trail %s holds an unfinished run (started at entry %llu, pid %d, run "
                "directory %s; %zu of its %zu workspaces still live): its supervisor died. Resume it "
                "with: corral run %s --workspace %s --trail %s --resume (or start a new run on "
                "another --trail FILE)\n",
                o->trail_path, (unsigned long long)sc.started_seq, (int)sc.pid, sc.run_dir, sc.n_live,
                sc.n_ws, o->policy_path, sc.workspace[0] ? sc.workspace : o->workspace, o->trail_path);
        return CORRAL_EXIT_USAGE;
    }
    if (!dead) {
        fprintf(stderr, "corral run: --resume: the trail %s holds %s\n", o->trail_path,
                !sc.found        ? "no run"
                : !sc.root[0]    ? "no unfinished run (its last run recorded no workspace before its "
                                   "supervisor died: nothing to resume; start it again without "
                                   "--resume on this trail)"
                : !sc.unfinished ? "no unfinished run (its last run ended)"
                                 : "a run whose supervisor is still running");
        return CORRAL_EXIT_USAGE;
    }
    uint64_t bad = 0, count = 0;
    struct trail_damage dmg;
    int vrc = trail_verify_damage(o->trail_path, &count, &bad, &dmg, &err);
    struct recovery_quarantine *q = &resume_quarantine;
    memset(q, 0, sizeof(*q));
    if (vrc == 1 && dmg.n && !dmg.other && !dmg.more) {
        /* Damage confined to single entries, links intact (recovery spec 3.1): left out when the
         * run does not need them. */
        char why[512] = "";
        struct cerr qe = {0};
        int qrc = recovery_quarantine_check(o->trail_path, sc.started_seq, &dmg, q, why, sizeof(why), &qe);
        if (qrc < 0) {
            fprintf(stderr, "corral run: cannot read the trail %s: %s\n", o->trail_path, qe.msg);
            return CORRAL_EXIT_INTERNAL;
        }
        if (qrc > 0) {
            fprintf(stderr,
                    "corral run: --resume: the trail %s fails its integrity check at entry %llu (%s); "
                    "it cannot be quarantined: %s. Nothing was resumed; restore the trail from a copy "
                    "you trust (corral trail verify --db %s)\n",
                    o->trail_path, (unsigned long long)bad, err.msg, why, o->trail_path);
            return CORRAL_EXIT_PROBLEMS;
        }
        vrc = 0;
    }
    if (vrc != 0) {
        fprintf(stderr,
                "corral run: --resume: the trail %s fails its integrity check at entry %llu (%s); "
                "nothing was resumed\n",
                o->trail_path, (unsigned long long)bad, err.msg);
        return CORRAL_EXIT_PROBLEMS;
    }
    if (o->run_dir && strcmp(o->run_dir, sc.run_dir)) {
        fprintf(stderr,
                "corral run: --resume: the run's directory is %s (recorded in the trail), "
                "not --run-dir %s\n",
                sc.run_dir, o->run_dir);
        return CORRAL_EXIT_USAGE;
    }
    /* The run goes on in its own project directory: another --workspace is refused, not
     * silently replaced (nor is the recorded path followed through a link made since: the
     * given one passed the no-link check, and must be the same directory by its real path). */
    char given[PATH_MAX];
    if (sc.workspace[0] && (!realpath(o->workspace, given) || strcmp(given, sc.workspace))) {
        fprintf(stderr,
                "corral run: --resume: the run's project directory is %s (recorded in the trail), "
                "not --workspace %s; give --workspace %s\n",
                sc.workspace, o->workspace, sc.workspace);
        return CORRAL_EXIT_USAGE;
    }
    if (sc.unfit_ws[0]) {
        fprintf(stderr,
                "corral run: --resume: the dead run's workspace %s is live and policy %s has no %s "
                "for it (the run was started with policy %s): nothing was resumed; resume with the "
                "run's policy, or one that keeps its roles and agents\n",
                sc.unfit_ws, o->policy_path, sc.unfit_what, sc.policy[0] ? sc.policy : "(unrecorded)");
        return CORRAL_EXIT_USAGE;
    }
    if (!o->quiet && q->n) {
        fprintf(stderr,
                "corral run: --resume: the trail verifies (%llu entries) but for %zu damaged entr%s, "
                "quarantined (left out, listed in recovery_completed):",
                (unsigned long long)count, q->n, q->n == 1 ? "y" : "ies");
        for (size_t i = 0; i < q->n; i++)
            fprintf(stderr, " %llu (%s)", (unsigned long long)q->e[i].seq, q->e[i].type);
        fprintf(stderr, "; the dead run's root %s, %zu of %zu workspaces live, run directory %s\n",
                sc.root, sc.n_live, sc.n_ws, sc.run_dir);
    } else if (!o->quiet)
        fprintf(stderr,
                "corral run: --resume: the trail verifies (%llu entries); the dead run's root %s, "
                "%zu of %zu workspaces live, run directory %s\n",
                (unsigned long long)count, sc.root, sc.n_live, sc.n_ws, sc.run_dir);
    /* The run goes on where it was: its run directory and root workspace are the trail's. */
    snprintf(resume_run_dir, sizeof(resume_run_dir), "%s", sc.run_dir);
    snprintf(resume_workspace, sizeof(resume_workspace), "%s", sc.workspace);
    o->run_dir = resume_run_dir;
    if (resume_workspace[0])
        o->workspace = resume_workspace;
    o->resume = true;
    o->resume_seq = sc.started_seq;
    o->quarantine = q->n ? q : NULL;
    return -1;
}

int cli_run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"workspace", required_argument, NULL, 'w'},
        {"trail", required_argument, NULL, 't'},
        {"trail-durability", required_argument, NULL, 'd'},
        {"run-dir", required_argument, NULL, 'r'},
        {"control", required_argument, NULL, 'c'},
        {"timeout", required_argument, NULL, 'T'},
        {"redelivery-ms", required_argument, NULL, 'R'},
        {"quiet", no_argument, NULL, 'q'},
        {"resume", no_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct run_opts o = {.trail_full = true};
    const char *trail = NULL, *durability = NULL;
    bool resume = false;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'w': o.workspace = optarg; break;
        case 't': trail = optarg; break;
        case 'd': durability = optarg; break;
        case 'r': o.run_dir = optarg; break;
        case 'c': o.control_path = optarg; break;
        case 'T':
            if (util_parse_seconds(optarg, &o.timeout) < 0 || o.timeout <= 0) {
                fprintf(stderr, "corral run: --timeout %s: give seconds (30, 1.5, 2m)\n", optarg);
                return CORRAL_EXIT_USAGE;
            }
            break;
        case 'R': {
            uint64_t v;
            if (util_parse_u64(optarg, &v) < 0 || v == 0 || v > 600000) {
                fprintf(stderr, "corral run: --redelivery-ms %s: give milliseconds from 1 to 600000\n",
                        optarg);
                return CORRAL_EXIT_USAGE;
            }
            o.redelivery_base_ms = v;
            break;
        }
        case 'q': o.quiet = true; break;
        case 'S': resume = true; break;
        case 'h': fputs(run_usage, stdout); return CORRAL_EXIT_OK;
        default: fputs(run_usage, stderr); return CORRAL_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "corral run: give exactly one POLICY file\n%s", run_usage);
        return CORRAL_EXIT_USAGE;
    }
    o.policy_path = argv[optind];
    if (!o.workspace) {
        fprintf(stderr, "corral run: --workspace DIR is required: the project directory the "
                        "coordinator's workspace holds\n");
        return CORRAL_EXIT_USAGE;
    }
    struct stat st;
    if (stat(o.workspace, &st) < 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "corral run: --workspace %s: %s\n", o.workspace,
                errno && stat(o.workspace, &st) < 0 ? strerror(errno) : "not a directory");
        return CORRAL_EXIT_USAGE;
    }
    /* The project is served and written by root: no link on its path, which a user who can
     * write a directory on the way could swap to lead into a root-only one. */
    int wfd = util_open_nolinks(o.workspace, O_PATH | O_DIRECTORY);
    if (wfd < 0) {
        fprintf(stderr, "corral run: --workspace %s: %s\n", o.workspace,
                wfd == -ELOOP ? "the path goes through a symbolic link, which another user could "
                                "swap; give the directory's real path"
                              : strerror(-wfd));
        return CORRAL_EXIT_USAGE;
    }
    close(wfd);
    if (durability) {
        if (!strcmp(durability, "normal"))
            o.trail_full = false;
        else if (strcmp(durability, "full")) {
            fprintf(stderr, "corral run: --trail-durability %s: give full or normal\n", durability);
            return CORRAL_EXIT_USAGE;
        }
    }
    if (geteuid() != 0) {
        fprintf(stderr, "corral run: must run as root (it creates namespaces and cgroups for every "
                        "agent); try: sudo corral run ...\n");
        return CORRAL_EXIT_USAGE;
    }

    /* Every agent holds a few fds (its pipes, pidfd, control socket, workspace directory): the
     * soft open-file limit goes up to the hard one, and run_session says how many agents that
     * allows. (Nothing here uses select(), so fds past 1024 are fine.) */
    struct rlimit nf;
    if (getrlimit(RLIMIT_NOFILE, &nf) == 0 && nf.rlim_cur < nf.rlim_max) {
        nf.rlim_cur = nf.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &nf) < 0) {
            char v[32] = "";
            if (util_read_file("/proc/sys/fs/nr_open", v, sizeof(v)) == 0 && strtoull(v, NULL, 10) > 0) {
                nf.rlim_cur = strtoull(v, NULL, 10);
                (void)setrlimit(RLIMIT_NOFILE, &nf);
            }
        }
    }
    /* Every agent and command sandbox comes from the zygote, forked now: corral has one
     * thread yet (the pool and the trail's workers come later). */
    struct cerr zerr = {0};
    if (zygote_start(&zerr) < 0) {
        fprintf(stderr, "corral run: %s\n", zerr.msg);
        return CORRAL_EXIT_INTERNAL;
    }

    struct policy *pol = NULL;
    struct policy_diags diags = {0};
    if (policy_load_file(o.policy_path, &pol, &diags) < 0) {
        policy_diags_print(&diags, stderr);
        policy_diags_free(&diags);
        fprintf(stderr,
                "corral run: policy %s has problems (listed above); fix them and run 'corral policy "
                "check %s'\n",
                o.policy_path, o.policy_path);
        return CORRAL_EXIT_USAGE;
    }
    policy_diags_free(&diags);
    if (!durability) {
        struct policy_session ps;
        policy_session_get(pol, &ps);
        o.trail_full = ps.trail_durability_full;
    }
    o.policy = pol;
    o.trail_path = cli_trail_path(pol, trail);
    char owner[128];
    owner_of(pol, owner, sizeof(owner));
    o.owner = owner;

    /* An existing trail is parsed (check_unfinished) only once it and every directory on its
     * way have passed the checks below: a file another user planted is refused unread, not
     * opened by root's SQLite first. */
    struct stat tst;
    if (lstat(o.trail_path, &tst) == 0) {
        char tdir[PATH_MAX];
        snprintf(tdir, sizeof(tdir), "%s", o.trail_path);
        struct cerr terr = {0};
        if (rundir_check_dir(dirname(tdir), "the trail's directory", &terr) < 0 ||
            rundir_check_file(o.trail_path, "the trail", false, &terr) < 0) {
            fprintf(stderr, "corral run: %s\n", terr.msg);
            policy_free(pol);
            return CORRAL_EXIT_INTERNAL;
        }
    }
    int unfinished = check_unfinished(&o, resume);
    if (unfinished >= 0) {
        policy_free(pol);
        return unfinished;
    }

    /* The trail, the run directory and the control socket are root's alone: every directory on
     * the way root's and writable by no one else, nothing adopted that another user made. */
    char trail_dir[PATH_MAX], runs[PATH_MAX], run_dir[PATH_MAX], control[PATH_MAX], ws_real[PATH_MAX];
    snprintf(trail_dir, sizeof(trail_dir), "%s", o.trail_path);
    char *td = dirname(trail_dir);
    struct cerr cerr = {0};
    if (rundir_make_parents(td, "the trail's directory", &cerr) < 0 ||
        rundir_check_file(o.trail_path, "the trail", false, &cerr) < 0) {
        fprintf(stderr, "corral run: %s\n", cerr.msg);
        policy_free(pol);
        return CORRAL_EXIT_INTERNAL;
    }
    if (!o.run_dir) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        char stamp[32];
        strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
        snprintf(runs, sizeof(runs), "%s/runs", td);
        int n = snprintf(run_dir, sizeof(run_dir), "%s/runs/%s-%ld", td, stamp, (long)getpid());
        if (n < 0 || n >= (int)sizeof(run_dir))
            cerr_set(&cerr, ENAMETOOLONG, "the run directory under %s: path too long", td);
        if (cerr.msg[0] || rundir_make_parents(runs, "the runs directory", &cerr) < 0) {
            fprintf(stderr, "corral run: %s\n", cerr.msg);
            policy_free(pol);
            return CORRAL_EXIT_INTERNAL;
        }
        o.run_dir = run_dir;
    }
    if (!o.control_path) {
        snprintf(control, sizeof(control), "%s.sock", o.trail_path);
        o.control_path = control;
    }
    if (rundir_check_file(o.control_path, "the control socket", true, &cerr) < 0) {
        fprintf(stderr, "corral run: %s\n", cerr.msg);
        policy_free(pol);
        return CORRAL_EXIT_INTERNAL;
    }
    if (realpath(o.workspace, ws_real))
        o.workspace = ws_real;

    struct run_result res;
    struct cerr err = {0};
    int r = run_session(&o, &res, &err);
    zygote_stop();
    policy_free(pol);
    if (r < 0) {
        fprintf(stderr, "corral run: %s\n", err.msg[0] ? err.msg : strerror(-r));
        return CORRAL_EXIT_INTERNAL;
    }
    return res.root_closed && !res.timed_out ? CORRAL_EXIT_OK : CORRAL_EXIT_PROBLEMS;
}
