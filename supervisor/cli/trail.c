/* supervisor/cli/trail.c: `corral trail` (print, filter, --json, --follow), `corral trail verify`
 * and `corral trail export`, all over a read-only connection to the trail file; and `corral trail
 * apply`, the one that writes: it applies what a writer that died left in the ahead log. */
#include "supervisor/cli/cli.h"
#include "supervisor/runtime/rundir.h"
#include "supervisor/trail/trail.h"

#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <sodium.h>

static const char query_usage[] =
    "usage: corral trail --db FILE [--workspace ID] [--actor A] [--type T] [--since TIME]\n"
    "                    [--until TIME] [--limit N] [--json] [--follow]\n"
    "       corral trail verify --db FILE [--anchor SEQ:HASH]\n"
    "       corral trail export --db FILE [--output FILE]\n"
    "       corral trail report --db FILE [--output FILE.html]\n"
    "       corral trail apply --db FILE\n"
    "\n"
    "Print the entries of a trail in sequence order, as a table or as JSON lines.\n"
    "\n"
    "  --db FILE        the trail database (required): the file given to 'corral exec --trail'\n"
    "                   or 'corral run --trail' (or its policy's trail.path)\n"
    "  --workspace ID   only entries of this workspace (its local trail)\n"
    "  --actor A        only entries by this actor (a role, 'protocol', 'system' or a user id)\n"
    "  --type T         only entries of this event type (docs/trail.md lists them)\n"
    "  --since TIME     only entries at or after TIME: ISO-8601 (2026-11-23T09:30:00Z; no zone\n"
    "                   means UTC) or unix seconds (1763890200)\n"
    "  --until TIME     only entries at or before TIME\n"
    "  --limit N        at most N entries (the first N that match)\n"
    "  --json           one JSON object per line: seq, id, timestamp, ts_us, workspace, actor,\n"
    "                   type, body, local_seq, local_prev, prev_hash, hash\n"
    "  --follow         after the entries present, keep printing new ones as a writer commits\n"
    "                   them, until interrupted (SIGINT or SIGTERM)\n"
    "\n"
    "Exit status: 0 ok, 2 usage error (a --db that does not exist included), 125 the trail could not be "
    "read.\n";

static const char verify_usage[] =
    "usage: corral trail verify --db FILE [--anchor SEQ:HASH]\n"
    "\n"
    "Recompute every hash of the trail (the global chain and each workspace's local chain),\n"
    "check the sequence has no gap and no reordering, and check every blob against its hash.\n"
    "Safe while a writer writes (the file is opened read-only). On success it also prints the\n"
    "head ('head: SEQ HASH'): keep it somewhere else, and a later --anchor SEQ:HASH proves the\n"
    "trail was neither cut short nor rewritten up to that entry, which the chain alone cannot.\n"
    "\n"
    "Exit status: 0 and 'ok: N entries verified'; 1 and the first bad entry (its sequence and\n"
    "why); 2 usage error; 125 the trail could not be read.\n";

static const char export_usage[] =
    "usage: corral trail export --db FILE [--output FILE]\n"
    "\n"
    "Write the whole trail as JSON lines to FILE (default: standard output): first a header\n"
    "{\"format\":\"corral-trail-export\",...}, then every entry (the 'corral trail --json' form),\n"
    "then every blob as {\"blob\":HASH,\"size\":N,\"data\":BASE64}.\n"
    "\n"
    "Exit status: 0 ok, 2 usage error (a --db that does not exist included), 125 the trail could not be "
    "read or the output written.\n";

static const char apply_usage[] =
    "usage: corral trail apply --db FILE\n"
    "\n"
    "Apply to the trail what a writer that stopped without closing it (a crash, SIGKILL) had\n"
    "committed to its ahead log (FILE-ahead, FILE-ahead2) and not yet put into FILE: entries it\n"
    "acknowledged, which readers ('corral trail', verify, export, report) do not see until a writer\n"
    "applies them. Any writer does so when it opens the trail ('corral run --resume' included);\n"
    "this command does only that. It refuses while a writer is running.\n"
    "\n"
    "Exit status: 0 and 'applied: the trail ends at entry N'; 2 usage error; 125 the trail could\n"
    "not be opened for writing (another corral writing it included).\n";

/* Readers see what is in FILE; what a dead writer left in the ahead log is not, yet. */
static void ahead_note(const char *cmd, const char *db)
{
    if (trail_ahead_pending(db))
        fprintf(stderr,
                "corral %s: note: %s-ahead holds entries a writer committed and had not put into %s "
                "when it stopped (a crash); they are not shown: 'corral trail apply --db %s' applies "
                "them\n",
                cmd, db, db, db);
}

/* A missing or foreign file is the caller's mistake (2); anything else is ours or the disk's. */
static int open_status(const struct cerr *e)
{
    return (e->code == -ENOENT || e->code == -EINVAL || e->code == -ENOTDIR) ? CORRAL_EXIT_USAGE
                                                                             : CORRAL_EXIT_INTERNAL;
}

/* ---- corral trail (query) ------------------------------------------------------------------ */

struct printer {
    FILE *out;
    bool json;
    uint64_t last_seq;
    uint64_t printed;
};

/* A field for a terminal: a damaged or hostile file must not drive it with control characters
 * (the writer never stores any outside JSON escapes; an attacker with the file could). */
static void put_field(FILE *f, const char *s, size_t max, int width)
{
    int w = 0;
    for (size_t i = 0; i < max && s[i]; i++, w++) {
        unsigned char c = (unsigned char)s[i];
        fputc(c < 0x20 || c == 0x7f ? '?' : c, f);
    }
    for (; w < width; w++)
        fputc(' ', f);
    if (width)
        fputc(' ', f);
}

static int print_entry(const struct trail_entry *e, void *ctx)
{
    struct printer *p = ctx;
    p->last_seq = e->seq;
    p->printed++;
    if (p->json) {
        cJSON *o = trail_entry_to_json(e);
        char *s = o ? cJSON_PrintUnformatted(o) : NULL;
        cJSON_Delete(o);
        if (!s)
            return -ENOMEM;
        fputs(s, p->out);
        fputc('\n', p->out);
        free(s);
        return 0;
    }
    char when[40];
    trail_format_time(e->ts_us, when, sizeof(when));
    /* People read a body's start; the whole of it is in --json. Cut on a UTF-8 boundary. */
    size_t n = e->body_len, cut = 160;
    if (n > cut) {
        while (cut > 0 && ((unsigned char)e->body[cut] & 0xc0) == 0x80)
            cut--;
        n = cut;
    }
    fprintf(p->out, "%-6llu %s ", (unsigned long long)e->seq, when);
    put_field(p->out, e->workspace ? e->workspace : "-", SIZE_MAX, 14);
    put_field(p->out, e->actor, SIZE_MAX, 12);
    put_field(p->out, e->type, SIZE_MAX, 24);
    put_field(p->out, e->body, n, 0);
    fprintf(p->out, "%s\n", n < e->body_len ? "..." : "");
    return 0;
}

static int follow_loop(struct trail_reader *r, struct trail_filter *f, struct printer *p, uint64_t limit)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0) {
        fprintf(stderr, "corral trail: cannot block SIGINT/SIGTERM for --follow: %s\n", strerror(errno));
        return CORRAL_EXIT_INTERNAL;
    }
    _cleanup_close_ int sfd = signalfd(-1, &set, SFD_CLOEXEC);
    if (sfd < 0) {
        fprintf(stderr, "corral trail: cannot watch for SIGINT/SIGTERM for --follow: %s\n",
                strerror(errno));
        return CORRAL_EXIT_INTERNAL;
    }
    for (;;) {
        fflush(p->out);
        if (limit && p->printed >= limit)
            return CORRAL_EXIT_OK;
        struct pollfd pfd = {.fd = sfd, .events = POLLIN};
        int n = poll(&pfd, 1, 200);
        if (n > 0)
            return CORRAL_EXIT_OK; /* interrupted: a normal end of following */
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "corral trail: poll failed: %s\n", strerror(errno));
            return CORRAL_EXIT_INTERNAL;
        }
        struct cerr err = {0};
        f->after_seq = p->last_seq;
        f->limit = limit ? limit - p->printed : 0;
        int rc = trail_query(r, f, print_entry, p, &err);
        if (rc < 0) {
            fprintf(stderr, "corral trail: %s\n", rc == -ENOMEM ? "out of memory" : err.msg);
            return CORRAL_EXIT_INTERNAL;
        }
    }
}

static int cmd_query(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'},
        {"workspace", required_argument, NULL, 'w'},
        {"actor", required_argument, NULL, 'a'},
        {"type", required_argument, NULL, 't'},
        {"since", required_argument, NULL, 's'},
        {"until", required_argument, NULL, 'u'},
        {"limit", required_argument, NULL, 'n'},
        {"json", no_argument, NULL, 'j'},
        {"follow", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *db = NULL;
    struct trail_filter f = {0};
    bool json = false, follow = false;
    uint64_t limit = 0;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'w': f.workspace = optarg; break;
        case 'a': f.actor = optarg; break;
        case 't':
            if (!trail_event_known(optarg)) {
                fprintf(stderr, "corral trail: unknown event type '%s'; docs/trail.md lists the types\n",
                        optarg);
                return CORRAL_EXIT_USAGE;
            }
            f.type = optarg;
            break;
        case 's':
        case 'u':
            if (trail_parse_time(optarg, c == 's' ? &f.since_us : &f.until_us) < 0) {
                fprintf(stderr,
                        "corral trail: --%s '%s' is not a time: use ISO-8601 (2026-11-23T09:30:00Z) or "
                        "unix seconds\n",
                        c == 's' ? "since" : "until", optarg);
                return CORRAL_EXIT_USAGE;
            }
            *(c == 's' ? &f.has_since : &f.has_until) = true;
            break;
        case 'n':
            if (util_parse_u64(optarg, &limit) < 0 || limit == 0) {
                fprintf(stderr, "corral trail: --limit '%s' must be a whole number of at least 1\n",
                        optarg);
                return CORRAL_EXIT_USAGE;
            }
            break;
        case 'j': json = true; break;
        case 'f': follow = true; break;
        case 'h': fputs(query_usage, stdout); return CORRAL_EXIT_OK;
        default:
            fprintf(stderr,
                    "corral trail: unknown or incomplete option '%s'; 'corral trail --help' lists the "
                    "options\n",
                    argv[optind - 1]);
            return CORRAL_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr,
                "corral trail: unexpected argument '%s'; the subcommands are 'verify', 'export', 'apply' and "
                "'report'\n",
                argv[optind]);
        return CORRAL_EXIT_USAGE;
    }
    if (!db) {
        fprintf(stderr, "corral trail: --db FILE is required: pass the trail "
                        "file, e.g. the one given to 'corral exec --trail'\n");
        return CORRAL_EXIT_USAGE;
    }
    struct cerr err = {0};
    struct trail_reader *r = NULL;
    if (trail_reader_open(db, &r, &err) < 0) {
        fprintf(stderr, "corral trail: %s\n", err.msg);
        return open_status(&err);
    }
    struct printer p = {.out = stdout, .json = json};
    f.limit = limit;
    int rc = trail_query(r, &f, print_entry, &p, &err);
    int status = CORRAL_EXIT_OK;
    if (rc < 0) {
        fprintf(stderr, "corral trail: %s\n", rc == -ENOMEM ? "out of memory" : err.msg);
        status = CORRAL_EXIT_INTERNAL;
    } else if (follow) {
        status = follow_loop(r, &f, &p, limit);
    }
    trail_reader_close(r);
    if (fflush(stdout) != 0 && status == CORRAL_EXIT_OK) {
        fprintf(stderr, "corral trail: cannot write to standard output: %s\n", strerror(errno));
        status = CORRAL_EXIT_INTERNAL;
    }
    return status;
}

/* ---- corral trail verify --------------------------------------------------------------------- */

static int parse_db_output(int argc, char **argv, const char *usage, const char **db,
                           const char **output, const char **anchor)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'},
        {"output", required_argument, NULL, 'o'},
        {"anchor", required_argument, NULL, 'a'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        if (c == 'd') {
            *db = optarg;
        } else if (c == 'o' && output) {
            *output = optarg;
        } else if (c == 'a' && anchor) {
            *anchor = optarg;
        } else if (c == 'h') {
            fputs(usage, stdout);
            return -1;
        } else {
            fprintf(stderr,
                    "corral trail %s: unknown or incomplete option '%s'; 'corral trail %s --help' lists "
                    "the options\n",
                    argv[0], argv[optind - 1], argv[0]);
            return CORRAL_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "corral trail %s: unexpected argument '%s'\n", argv[0], argv[optind]);
        return CORRAL_EXIT_USAGE;
    }
    if (!*db) {
        fprintf(stderr,
                "corral trail %s: --db FILE is required (no default trail yet): pass the trail file\n",
                argv[0]);
        return CORRAL_EXIT_USAGE;
    }
    return 0;
}

struct head {
    uint64_t seq;
    char hex[2 * TRAIL_HASH_LEN + 1];
};

static int keep_head(const struct trail_entry *e, void *ctx)
{
    struct head *h = ctx;
    h->seq = e->seq;
    if (e->hash)
        sodium_bin2hex(h->hex, sizeof(h->hex), e->hash, TRAIL_HASH_LEN);
    return 0;
}

static int cmd_verify(int argc, char **argv)
{
    const char *db = NULL;
    const char *anchor = NULL;
    int rc = parse_db_output(argc, argv, verify_usage, &db, NULL, &anchor);
    if (rc)
        return rc < 0 ? CORRAL_EXIT_OK : rc;
    uint64_t anchor_seq = 0;
    char anchor_hex[2 * TRAIL_HASH_LEN + 1] = "";
    if (anchor) {
        const char *colon = strchr(anchor, ':');
        char num[24];
        size_t nl = colon ? (size_t)(colon - anchor) : 0;
        bool hex = colon && strlen(colon + 1) == 2 * TRAIL_HASH_LEN;
        for (size_t i = 0; hex && i < 2 * TRAIL_HASH_LEN; i++)
            hex = strchr("0123456789abcdef", colon[1 + i]) != NULL;
        if (hex && nl > 0 && nl < sizeof(num)) {
            memcpy(num, anchor, nl);
            num[nl] = '\0';
        }
        if (!hex || nl == 0 || nl >= sizeof(num) || util_parse_u64(num, &anchor_seq) < 0 ||
            anchor_seq == 0) {
            fprintf(stderr,
                    "corral trail verify: --anchor '%s' must be SEQ:HASH, as in the 'head:' line of an "
                    "earlier verify\n",
                    anchor);
            return CORRAL_EXIT_USAGE;
        }
        memcpy(anchor_hex, colon + 1, sizeof(anchor_hex));
    }
    struct cerr err = {0};
    uint64_t n = 0, bad_seq = 0;
    struct trail_damage dmg;
    rc = trail_verify_damage(db, &n, &bad_seq, &dmg, &err);
    struct head h = {0};
    if (rc == 0) {
        struct trail_reader *r = NULL;
        struct trail_filter f = {.after_seq = n ? n - 1 : 0, .limit = 1};
        if (trail_reader_open(db, &r, &err) < 0 || trail_query(r, &f, keep_head, &h, &err) < 0) {
            trail_reader_close(r);
            fprintf(stderr, "corral trail verify: %s\n", err.msg);
            return CORRAL_EXIT_INTERNAL;
        }
        if (anchor) {
            struct head a = {0};
            f = (struct trail_filter){.after_seq = anchor_seq - 1, .limit = 1};
            if (trail_query(r, &f, keep_head, &a, &err) < 0) {
                trail_reader_close(r);
                fprintf(stderr, "corral trail verify: %s\n", err.msg);
                return CORRAL_EXIT_INTERNAL;
            }
            if (a.seq != anchor_seq) {
                rc = 1;
                bad_seq = anchor_seq;
                snprintf(err.msg, sizeof(err.msg),
                         "entry %llu: is missing: the trail ends at %llu, before the anchor (cut short)",
                         (unsigned long long)anchor_seq, (unsigned long long)n);
            } else if (strcmp(a.hex, anchor_hex)) {
                rc = 1;
                bad_seq = anchor_seq;
                snprintf(err.msg, sizeof(err.msg),
                         "entry %llu: its hash is not the anchor's (the trail was rewritten up to it)",
                         (unsigned long long)anchor_seq);
            }
        }
        trail_reader_close(r);
    }
    if (rc == 0) {
        printf("ok: %llu entries verified\n", (unsigned long long)n);
        if (h.seq)
            printf("head: %llu %s\n", (unsigned long long)h.seq, h.hex);
        if (anchor)
            printf("anchor: entry %llu holds the expected hash\n", (unsigned long long)anchor_seq);
        return CORRAL_EXIT_OK;
    }
    if (rc == 1) {
        printf("bad: %s\n", err.msg);
        /* Entries damaged one by one, links intact: what `corral run --resume` may quarantine. */
        if (dmg.n) {
            printf("damaged:");
            for (size_t i = 0; i < dmg.n; i++)
                printf(" %llu", (unsigned long long)dmg.seq[i]);
            printf("%s (content does not match the hash, the links around %s hold)%s\n",
                   dmg.more ? " and more" : "", dmg.n == 1 && !dmg.more ? "it" : "them",
                   dmg.other ? "; other damage too" : "");
        }
        fprintf(stderr,
                "corral trail verify: %s has been changed or damaged at %s%llu: restore it from a copy "
                "you trust\n",
                db, bad_seq ? "entry " : "", (unsigned long long)bad_seq);
        return CORRAL_EXIT_PROBLEMS;
    }
    fprintf(stderr, "corral trail verify: %s\n", err.msg);
    return open_status(&err);
}

/* ---- corral trail export --------------------------------------------------------------------- */

struct exporter {
    FILE *out;
};

static int export_entry(const struct trail_entry *e, void *ctx)
{
    struct exporter *x = ctx;
    cJSON *o = trail_entry_to_json(e);
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!s)
        return -ENOMEM;
    fputs(s, x->out);
    fputc('\n', x->out);
    free(s);
    return ferror(x->out) ? -EIO : 0;
}

static int export_blob(const char *hash_hex, const void *data, size_t len, void *ctx)
{
    struct exporter *x = ctx;
    size_t cap = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
    _cleanup_free_ char *b64 = malloc(cap);
    if (!b64)
        return -ENOMEM;
    sodium_bin2base64(b64, cap, data, len, sodium_base64_VARIANT_ORIGINAL);
    fprintf(x->out, "{\"blob\":\"%s\",\"size\":%zu,\"data\":\"%s\"}\n", hash_hex, len, b64);
    return ferror(x->out) ? -EIO : 0;
}

static int cmd_export(int argc, char **argv)
{
    const char *db = NULL, *output = NULL;
    int rc = parse_db_output(argc, argv, export_usage, &db, &output, NULL);
    if (rc)
        return rc < 0 ? CORRAL_EXIT_OK : rc;
    struct cerr err = {0};
    struct trail_reader *r = NULL;
    if (trail_reader_open(db, &r, &err) < 0) {
        fprintf(stderr, "corral trail export: %s\n", err.msg);
        return open_status(&err);
    }
    FILE *out = stdout;
    if (output && !(out = fopen(output, "w"))) {
        fprintf(stderr, "corral trail export: cannot create %s: %s; choose a writable --output path\n",
                output, strerror(errno));
        trail_reader_close(r);
        return CORRAL_EXIT_INTERNAL;
    }
    struct exporter x = {out};
    fprintf(out,
            "{\"format\":\"corral-trail-export\",\"version\":1,\"trail_format\":%d,\"hash_algorithm\":"
            "\"%s\"}\n",
            TRAIL_FORMAT, TRAIL_HASH_NAME);
    rc = trail_query(r, NULL, export_entry, &x, &err);
    if (rc == 0)
        rc = trail_blobs_each(r, export_blob, &x, &err);
    trail_reader_close(r);
    int status = CORRAL_EXIT_OK;
    if (rc < 0) {
        if (rc == -ENOMEM)
            fprintf(stderr, "corral trail export: out of memory\n");
        else if (rc == -EIO && !err.msg[0])
            fprintf(stderr, "corral trail export: cannot write %s: %s\n",
                    output ? output : "standard output", strerror(errno));
        else
            fprintf(stderr, "corral trail export: %s\n", err.msg);
        status = CORRAL_EXIT_INTERNAL;
    }
    if ((out == stdout ? fflush(out) : fclose(out)) != 0 && status == CORRAL_EXIT_OK) {
        fprintf(stderr, "corral trail export: cannot write %s: %s\n",
                output ? output : "standard output", strerror(errno));
        status = CORRAL_EXIT_INTERNAL;
    }
    return status;
}

static int cmd_apply(int argc, char **argv)
{
    const char *db = NULL;
    int rc = parse_db_output(argc, argv, apply_usage, &db, NULL, NULL);
    if (rc)
        return rc < 0 ? CORRAL_EXIT_OK : rc;
    if (access(db, F_OK) < 0) {
        fprintf(stderr, "corral trail apply: %s: %s; pass an existing trail file\n", db, strerror(errno));
        return CORRAL_EXIT_USAGE;
    }
    struct cerr err = {0};
    uint64_t head = 0;
    /* It writes, as root: the same places a writer accepts (rundir.c: no link on the way, no
     * directory others can write). */
    if (rundir_check_file(db, "the trail", false, &err) < 0) {
        fprintf(stderr, "corral trail apply: %s\n", err.msg);
        return CORRAL_EXIT_USAGE;
    }
    if (trail_settle(db, &head, &err) < 0) {
        fprintf(stderr, "corral trail apply: %s\n", err.msg);
        return open_status(&err);
    }
    printf("applied: the trail ends at entry %llu\n", (unsigned long long)head);
    return CORRAL_EXIT_OK;
}

int cli_trail(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "apply"))
        return cmd_apply(argc - 1, argv + 1);
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--db")) {
            ahead_note(argc >= 2 && !strcmp(argv[1], "verify") ? "trail verify" : "trail", argv[i + 1]);
            break;
        }
    if (argc >= 2 && !strcmp(argv[1], "verify"))
        return cmd_verify(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "export"))
        return cmd_export(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "report"))
        return cli_report(argc - 1, argv + 1);
    return cmd_query(argc, argv);
}
