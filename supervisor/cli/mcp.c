/* supervisor/cli/mcp.c: `corral mcp --workspace DIR`: the role's tool surface as an MCP server
 * on corral's own stdin/stdout, for an MCP host (Claude Code, Claude Desktop, Cursor, Codex) to
 * launch. The same connection `corral exec --workspace` serves to a sandboxed agent
 * (supervisor/runtime/serve.c), with the host at the other end of the pipe and no agent process:
 * file tools through the broker, commands in command sandboxes with the role's profile, the one
 * tool gate, every message and call in the trail. See docs/mcp.md. */
#include "policy/policy.h"
#include "sandbox/zygote.h"
#include "supervisor/cli/cli.h"
#include "supervisor/runtime/rundir.h"
#include "supervisor/runtime/serve.h"
#include "supervisor/trail/trail.h"

#include <getopt.h>
#include <limits.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void mcp_usage(FILE *f)
{
    fputs("usage: corral mcp --workspace DIR [--policy FILE --role ROLE] [--trail FILE]\n"
          "\n"
          "Serve the tool surface of a role as an MCP server on stdin/stdout (one JSON-RPC\n"
          "message per line), for an MCP host to launch. File tools act on DIR through the\n"
          "broker (openat2, nothing outside DIR); commands run in command sandboxes with the\n"
          "role's profile and budgets; the policy's per-tool rules apply, and a tool that needs\n"
          "approval asks the person through the host (MCP elicitation) when the host can.\n"
          "corral stays the only process with access to DIR. Logs go to stderr.\n"
          "\n"
          "options:\n"
          "  --workspace DIR       the directory the tools act on (required)\n"
          "  --policy FILE         take the role from this policy (without it: the embedded\n"
          "                        default policy, role 'default': the WAP surface, read, write\n"
          "                        and commands)\n"
          "  --role ROLE           the role of --policy (default: 'default')\n"
          "  --trail FILE          record every message, call, denial and approval in a trail\n"
          "                        database (write-ahead; 'corral trail verify --db FILE')\n"
          "  --trail-durability full|normal  full (default): fsync per commit; normal: survives\n"
          "                        a crash of corral, not of the machine\n"
          "  -h, --help            this text\n"
          "\n"
          "The server ends when the host closes stdin (calls still running are cancelled and\n"
          "their sandboxes killed) or on SIGTERM / SIGINT / SIGHUP.\n"
          "exit status: 0 the host closed the connection; 2 usage error (or a policy with\n"
          "problems); 125 corral itself failed (one line on stderr says why).\n",
          f);
}

struct mcp_opts {
    const char *workspace, *policy, *role, *trail;
    enum trail_durability durability;
};

static int parse(int argc, char **argv, struct mcp_opts *o)
{
    enum { O_WS = 256, O_POLICY, O_ROLE, O_TRAIL, O_DURABILITY };
    static const struct option longopts[] = {
        {"workspace", required_argument, 0, O_WS},
        {"policy", required_argument, 0, O_POLICY},
        {"role", required_argument, 0, O_ROLE},
        {"trail", required_argument, 0, O_TRAIL},
        {"trail-durability", required_argument, 0, O_DURABILITY},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': mcp_usage(stdout); return 1;
        case O_WS: o->workspace = optarg; break;
        case O_POLICY: o->policy = optarg; break;
        case O_ROLE: o->role = optarg; break;
        case O_TRAIL: o->trail = optarg; break;
        case O_DURABILITY:
            if (trail_durability_parse(optarg, &o->durability) < 0) {
                fprintf(stderr, "corral mcp: --trail-durability takes 'full' or 'normal', not '%s'\n",
                        optarg);
                return -1;
            }
            break;
        default:
            fprintf(stderr, "corral mcp: unknown or incomplete option '%s'; see 'corral mcp --help'\n",
                    argv[optind - 1]);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "corral mcp: unexpected argument '%s'; see 'corral mcp --help'\n", argv[optind]);
        return -1;
    }
    if (!o->workspace) {
        fprintf(stderr, "corral mcp: --workspace DIR is required: the directory the tools act on\n");
        return -1;
    }
    if (o->role && !o->policy) {
        fprintf(stderr, "corral mcp: --role needs --policy FILE (without it the embedded default "
                        "policy's role 'default' applies)\n");
        return -1;
    }
    return 0;
}

/* The session's own entries: what was served, to whom, under which role, and its end. Their
 * workspace id names the session; every protocol message and call joins its local chain. */
static int record_session(struct trail *t, const char *ws_id, const char *type, const struct mcp_opts *o,
                          const struct policy_role_view *v, const char *why, struct cerr *err)
{
    if (!t)
        return 0;
    cJSON *b = cJSON_CreateObject();
    bool ok = b && cJSON_AddStringToObject(b, "mode", "mcp") &&
              cJSON_AddNumberToObject(b, "pid", (double)getpid());
    if (ok && !strcmp(type, "supervisor_started"))
        ok = cJSON_AddStringToObject(b, "workspace_dir", o->workspace) &&
             cJSON_AddStringToObject(b, "policy", o->policy ? o->policy : "(embedded default)") &&
             cJSON_AddStringToObject(b, "role", v->name) &&
             cJSON_AddStringToObject(b, "surface", v->surface ? v->surface : "wap") &&
             cJSON_AddBoolToObject(b, "write", v->authority.write) &&
             cJSON_AddBoolToObject(b, "commands", v->authority.commands);
    if (ok && why)
        ok = cJSON_AddStringToObject(b, "reason", why) != NULL;
    if (!ok) {
        cJSON_Delete(b);
        return cerr_set(err, ENOMEM, "out of memory");
    }
    int r = trail_append(t, ws_id, "system", type, b, NULL, err);
    cJSON_Delete(b);
    if (r < 0)
        return r;
    return trail_commit(t, err);
}

int cli_mcp(int argc, char **argv)
{
    struct mcp_opts o = {.durability = TRAIL_DURABILITY_FULL};
    int pr = parse(argc, argv, &o);
    if (pr != 0)
        return pr > 0 ? CORRAL_EXIT_OK : CORRAL_EXIT_USAGE;
    struct stat st;
    if (stat(o.workspace, &st) < 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "corral mcp: --workspace %s: %s\n", o.workspace,
                errno ? strerror(errno) : "not a directory");
        return CORRAL_EXIT_USAGE;
    }
    /* stdout is the protocol: nothing else may ever be written there. */
    if (isatty(STDOUT_FILENO))
        fprintf(stderr, "corral mcp: serving MCP on stdin/stdout; an MCP host launches this "
                        "(docs/mcp.md). Ctrl-D ends it.\n");

    /* Every command sandbox comes from the zygote, forked now while corral has one thread: the
     * tools are served from a pool of threads. */
    struct cerr zerr = {0};
    if (zygote_start(&zerr) < 0) {
        fprintf(stderr, "corral mcp: %s\n", zerr.msg);
        return CORRAL_EXIT_INTERNAL;
    }
    int status = CORRAL_EXIT_INTERNAL;
    struct policy *pol = NULL;
    struct trail *trail = NULL;
    struct policy_diags diags = {0};
    int lr = o.policy ? policy_load_file(o.policy, &pol, &diags) : policy_load_default(&pol);
    if (lr < 0) {
        policy_diags_print(&diags, stderr);
        policy_diags_free(&diags);
        zygote_stop();
        fprintf(stderr, "corral mcp: policy %s has problems (listed above)\n",
                o.policy ? o.policy : "(embedded default)");
        return CORRAL_EXIT_USAGE;
    }
    policy_diags_free(&diags);
    struct policy_role_view view;
    struct cerr err = {0};
    if (policy_role_resolve(pol, o.role ? o.role : "default", &view, &err) < 0) {
        fprintf(stderr, "corral mcp: %s\n", err.msg);
        policy_free(pol);
        zygote_stop();
        return CORRAL_EXIT_USAGE;
    }
    char ws_id[64];
    snprintf(ws_id, sizeof(ws_id), "mcp-%d-%llu", (int)getpid(),
             (unsigned long long)(util_now() * 1000.0));
    if (o.trail) {
        /* As for `corral exec` and `corral run`: never a trail another user made or could swap,
         * nor one in a directory another user can write (rundir.h). An MCP host often runs
         * corral through sudo on a path in a user's home: that user must not choose, by a link
         * or a rename, what root writes. */
        char tdir[PATH_MAX];
        snprintf(tdir, sizeof(tdir), "%s", o.trail);
        if (rundir_make_parents(dirname(tdir), "the trail's directory", &err) < 0 ||
            rundir_check_file(o.trail, "the trail", false, &err) < 0 ||
            trail_open(o.trail, o.durability, &trail, &err) < 0) {
            fprintf(stderr, "corral mcp: trail %s: %s\n", o.trail, err.msg);
            goto out;
        }
        /* Write-ahead: the session is on record before the first message is read. */
        if (record_session(trail, ws_id, "supervisor_started", &o, &view, NULL, &err) < 0) {
            fprintf(stderr, "corral mcp: trail %s: %s\n", o.trail, err.msg);
            goto out;
        }
    }
    /* SIGTERM / SIGINT / SIGHUP end the session in order (running calls cancelled, their
     * sandboxes killed, the trail closed): serve reads them from a signalfd. */
    sigset_t stop, old;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGHUP);
    sigprocmask(SIG_BLOCK, &stop, &old);

    /* The role's surface, limits and tool rules, as corral exec --workspace gives them to an
     * agent (supervisor/runtime/role_tools.c); commands nest in corral's own cgroup. */
    struct serve_exec_opts so = {
        .workspace = o.workspace,
        .view = &view,
        .trail = trail,
        .workspace_id = ws_id,
        .host = true,
    };
    const char *why = NULL;
    int r = serve_host(&so, STDIN_FILENO, STDOUT_FILENO, &why, &err);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (r < 0) {
        fprintf(stderr, "corral mcp: %s\n", err.msg);
        (void)record_session(trail, ws_id, "supervisor_stopped", &o, &view, err.msg, &err);
        goto out;
    }
    status = CORRAL_EXIT_OK;
    if (record_session(trail, ws_id, "supervisor_stopped", &o, &view, why, &err) < 0) {
        fprintf(stderr, "corral mcp: the trail could not record the end of the session: %s\n", err.msg);
        status = CORRAL_EXIT_INTERNAL;
    }
out:
    zygote_stop(); /* with any prepared command sandbox */
    trail_close(trail);
    policy_free(pol);
    return status;
}
