/* bench/trail_bench.c: the trail's benchmarks, each side by side with plain SQLite in one run
 * (driven by bench/trail.sh):
 *   trail_bench throughput DIR TURNS   64 agents' tool calls, one group commit per loop turn, FULL
 *                                      durability, against one INSERT per transaction
 *   trail_bench latency DIR N          p50/p99 of one append + commit, FULL and NORMAL
 *   trail_bench fill FILE N            write N entries (NORMAL durability, 1000 per commit)
 *   trail_bench verify FILE            trail_verify_file speed, against a bare scan of the rows */
#include "supervisor/trail/trail.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define AGENTS 64

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static cJSON *tool_body(unsigned agent, unsigned turn)
{
    char path[64];
    snprintf(path, sizeof(path), "src/module_%u/file_%u.c", agent % 7, turn % 97);
    cJSON *b = cJSON_CreateObject();
    cJSON *args = cJSON_AddObjectToObject(b, "arguments");
    cJSON_AddStringToObject(args, "path", path);
    cJSON_AddStringToObject(b, "surface", "wap");
    cJSON_AddStringToObject(b, "tool", "readFile");
    cJSON_AddStringToObject(b, "outcome", "ok");
    cJSON_AddNumberToObject(b, "request_bytes", 96 + agent);
    cJSON_AddNumberToObject(b, "response_bytes", 4096 + turn % 1000);
    cJSON_AddNumberToObject(b, "duration_us", 180 + (agent * 7 + turn) % 50);
    return b;
}

static int die_cerr(const char *what, const struct cerr *e)
{
    fprintf(stderr, "trail_bench: %s: %s\n", what, e->msg);
    return 1;
}

/* Plain SQLite: the same columns and indexes, the same pragmas, one INSERT per transaction. */
static double plain_inserts(const char *path, unsigned turns, double budget_sec, unsigned long *done)
{
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK)
        return -1;
    sqlite3_exec(db,
                 "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                 "CREATE TABLE entries (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, ts INTEGER NOT NULL,"
                 " workspace TEXT, actor TEXT NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL, "
                 "local_seq INTEGER,"
                 " local_prev BLOB, prev_hash BLOB, hash BLOB NOT NULL);"
                 "CREATE INDEX entries_actor ON entries(actor);"
                 "CREATE INDEX entries_type ON entries(type); CREATE INDEX entries_ts ON entries(ts);",
                 NULL, NULL, NULL);
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(
        db, "INSERT INTO entries VALUES (?1, ?2, ?3, ?4, 'worker', 'tool_call', ?5, ?6, ?7, ?7, ?7)", -1,
        &st, NULL);
    unsigned char h[32] = {1};
    unsigned long n = 0;
    double t0 = now(), t;
    for (unsigned turn = 0; turn < turns; turn++) {
        for (unsigned a = 0; a < AGENTS; a++) {
            cJSON *b = tool_body(a, turn);
            char *body = cJSON_PrintUnformatted(b);
            char id[48], ws[16];
            snprintf(id, sizeof(id), "0123456789abcdef-%lu", n + 1);
            snprintf(ws, sizeof(ws), "ws-%02u", a);
            sqlite3_bind_int64(st, 1, (sqlite3_int64)n + 1);
            sqlite3_bind_text(st, 2, id, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int64(st, 3, (sqlite3_int64)(now() * 1e6));
            sqlite3_bind_text(st, 4, ws, -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(st, 5, body, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int64(st, 6, turn + 1);
            sqlite3_bind_blob(st, 7, h, sizeof(h), SQLITE_TRANSIENT);
            if (sqlite3_step(st) != SQLITE_DONE) {
                fprintf(stderr, "trail_bench: plain insert: %s\n", sqlite3_errmsg(db));
                return -1;
            }
            sqlite3_reset(st);
            free(body);
            cJSON_Delete(b);
            n++;
        }
        if (now() - t0 > budget_sec)
            break;
    }
    t = now() - t0;
    sqlite3_finalize(st);
    sqlite3_close(db);
    *done = n;
    return t;
}

static int throughput(const char *dir, unsigned turns)
{
    char a[4096], b[4096];
    snprintf(a, sizeof(a), "%s/trail-full.db", dir);
    snprintf(b, sizeof(b), "%s/plain-full.db", dir);
    struct cerr err = {0};
    struct trail *t = NULL;
    if (trail_open(a, TRAIL_DURABILITY_FULL, &t, &err) < 0)
        return die_cerr("open", &err);
    char ws[AGENTS][16];
    for (unsigned i = 0; i < AGENTS; i++)
        snprintf(ws[i], sizeof(ws[i]), "ws-%02u", i);
    unsigned long released = 0;
    double t0 = now();
    for (unsigned turn = 0; turn < turns; turn++) {
        /* One event-loop turn: each of the 64 agents' tool call is recorded, then one commit,
         * then (and only then) the 64 results are released. */
        for (unsigned i = 0; i < AGENTS; i++) {
            cJSON *body = tool_body(i, turn);
            int r = trail_append(t, ws[i], "worker", "tool_call", body, NULL, &err);
            cJSON_Delete(body);
            if (r < 0)
                return die_cerr("append", &err);
        }
        if (trail_commit(t, &err) < 0)
            return die_cerr("commit", &err);
        released += AGENTS;
    }
    double ta = now() - t0;
    trail_close(t);
    unsigned long nb = 0;
    /* Plain SQLite gets the same wall-clock budget (at least 3 s) for a fair rate. */
    double tb = plain_inserts(b, turns, ta > 3 ? ta : 3, &nb);
    if (tb < 0)
        return 1;
    double ra = (double)released / ta, rb = (double)nb / tb;
    printf("durable throughput (synchronous=FULL, WAL, 64 agents, one commit per loop turn):\n");
    printf("  corral trail (group commit, hash chains): %8lu entries in %6.2f s = %10.0f entries/s\n",
           released, ta, ra);
    printf("  plain SQLite (one INSERT per transaction): %7lu entries in %6.2f s = %10.0f entries/s\n",
           nb, tb, rb);
    printf("  ratio: %.1fx (goal >= 10x)\n", ra / rb);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* What the trail adds to one agent's sequential round trip: one entry, one commit, before the
 * result may be released. */
static int latency(const char *dir, unsigned n)
{
    double *lat = calloc(n, sizeof(*lat));
    if (!lat)
        return 1;
    printf("latency the trail adds to one sequential tool call (append + commit before release), %u "
           "calls:\n",
           n);
    for (int mode = 0; mode < 2; mode++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/latency-%s.db", dir, mode ? "normal" : "full");
        struct cerr err = {0};
        struct trail *t = NULL;
        if (trail_open(path, mode ? TRAIL_DURABILITY_NORMAL : TRAIL_DURABILITY_FULL, &t, &err) < 0)
            return die_cerr("open", &err);
        for (unsigned i = 0; i < n; i++) {
            cJSON *body = tool_body(0, i);
            double t0 = now();
            if (trail_append(t, "ws-00", "worker", "tool_call", body, NULL, &err) < 0 ||
                trail_commit(t, &err) < 0)
                return die_cerr("append/commit", &err);
            lat[i] = (now() - t0) * 1e6;
            cJSON_Delete(body);
        }
        trail_close(t);
        qsort(lat, n, sizeof(*lat), cmp_double);
        printf("  %-6s p50 %8.1f us   p99 %8.1f us   (trail off: 0)\n", mode ? "normal" : "full",
               lat[n / 2], lat[n * 99 / 100]);
    }
    free(lat);
    return 0;
}

/* One readFile round trip's entries as the supervisor writes them (request, tool call start and
 * end, a 4 KiB answer), then the one commit: where the time of a trail-on call goes. */
static int call(const char *dir, unsigned n)
{
    double *app = calloc(n, sizeof(*app)), *com = calloc(n, sizeof(*com));
    char content[4097];
    for (size_t i = 0; i < 4096; i++)
        content[i] = (char)('a' + i % 26);
    content[4096] = '\0';
    if (!app || !com)
        return 1;
    printf("one readFile call's entries (4: request, start, end, 4 KiB answer) + one commit, %u calls:\n", n);
    for (int mode = 0; mode < 2; mode++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/call-%s.db", dir, mode ? "normal" : "full");
        struct cerr err = {0};
        struct trail *t = NULL;
        if (trail_open(path, mode ? TRAIL_DURABILITY_NORMAL : TRAIL_DURABILITY_FULL, &t, &err) < 0)
            return die_cerr("open", &err);
        for (unsigned i = 0; i < n; i++) {
            cJSON *in = cJSON_CreateObject(), *st = cJSON_CreateObject(), *en = cJSON_CreateObject(),
                  *out = cJSON_CreateObject();
            cJSON_AddStringToObject(in, "agent", "ws-00");
            cJSON_AddStringToObject(in, "direction", "in");
            cJSON_AddStringToObject(in, "message", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"readFile\",\"arguments\":{\"path\":\"file4k.txt\"}}}");
            cJSON_AddStringToObject(st, "agent", "ws-00");
            cJSON_AddStringToObject(st, "phase", "start");
            cJSON_AddStringToObject(st, "tool", "readFile");
            cJSON_AddStringToObject(st, "arguments", "{\"path\":\"file4k.txt\"}");
            cJSON_AddStringToObject(en, "agent", "ws-00");
            cJSON_AddStringToObject(en, "phase", "end");
            cJSON_AddStringToObject(en, "outcome", "ok");
            cJSON_AddStringToObject(out, "agent", "ws-00");
            cJSON_AddStringToObject(out, "direction", "out");
            cJSON_AddStringToObject(out, "message", content);
            double t0 = now();
            if (trail_append(t, "ws-00", "protocol", "protocol_message", in, NULL, &err) < 0 ||
                trail_append(t, "ws-00", "protocol", "tool_call", st, NULL, &err) < 0 ||
                trail_append(t, "ws-00", "protocol", "tool_call", en, NULL, &err) < 0 ||
                trail_append(t, "ws-00", "protocol", "protocol_message", out, NULL, &err) < 0)
                return die_cerr("append", &err);
            double t1 = now();
            if (trail_commit(t, &err) < 0)
                return die_cerr("commit", &err);
            app[i] = (t1 - t0) * 1e6;
            com[i] = (now() - t1) * 1e6;
            cJSON_Delete(in);
            cJSON_Delete(st);
            cJSON_Delete(en);
            cJSON_Delete(out);
        }
        trail_close(t);
        qsort(app, n, sizeof(*app), cmp_double);
        qsort(com, n, sizeof(*com), cmp_double);
        printf("  %-6s appends p50 %7.1f us p99 %8.1f us   commit p50 %7.1f us p99 %8.1f us\n",
               mode ? "normal" : "full", app[n / 2], app[n * 99 / 100], com[n / 2], com[n * 99 / 100]);
    }
    free(app);
    free(com);
    return 0;
}

static int fill(const char *path, unsigned long n)
{
    struct cerr err = {0};
    struct trail *t = NULL;
    if (trail_open(path, TRAIL_DURABILITY_NORMAL, &t, &err) < 0)
        return die_cerr("open", &err);
    char ws[AGENTS][16];
    for (unsigned i = 0; i < AGENTS; i++)
        snprintf(ws[i], sizeof(ws[i]), "ws-%02u", i);
    double t0 = now();
    for (unsigned long i = 1; i < n; i++) { /* entry 1 is trail_created */
        cJSON *body = tool_body((unsigned)(i % AGENTS), (unsigned)(i / AGENTS));
        int r = trail_append(t, i % 50 == 0 ? NULL : ws[i % AGENTS], i % 50 == 0 ? "protocol" : "worker",
                             i % 50 == 0 ? "protocol_message" : "tool_call", body, NULL, &err);
        cJSON_Delete(body);
        if (r < 0)
            return die_cerr("append", &err);
        if (i % 1000 == 0 && trail_commit(t, &err) < 0)
            return die_cerr("commit", &err);
    }
    if (trail_commit(t, &err) < 0)
        return die_cerr("commit", &err);
    double dt = now() - t0;
    trail_close(t);
    printf("filled %s with %lu entries in %.2f s (%.0f entries/s, NORMAL, 1000 per commit)\n", path, n,
           dt, (double)n / dt);
    return 0;
}

static int verify(const char *path)
{
    /* The floor: a bare scan of the same rows and columns, no hashing. */
    sqlite3 *db = NULL;
    sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
    sqlite3_exec(db, "PRAGMA mmap_size=2147418112", NULL, NULL, NULL);
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db,
                       "SELECT seq, id, ts, workspace, actor, type, body, local_seq, local_prev, "
                       "prev_hash, hash FROM entries ORDER BY seq",
                       -1, &st, NULL);
    double t0 = now();
    unsigned long rows = 0, bytes = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        bytes += (unsigned long)sqlite3_column_bytes(st, 6) +
                 (unsigned long)sqlite3_column_bytes(st, 10);
        rows++;
    }
    double ts = now() - t0;
    sqlite3_finalize(st);
    sqlite3_close(db);

    struct cerr err = {0};
    uint64_t n = 0, bad_seq = 0;
    t0 = now();
    int r = trail_verify_file_count(path, &n, &bad_seq, &err);
    double tv = now() - t0;
    if (r != 0)
        return die_cerr("verify", &err);
    printf("verify speed over %llu entries:\n", (unsigned long long)n);
    printf(
        "  trail_verify_file (all hashes, both chains):  %6.3f s = %10.0f entries/s (goal >= 1000000)\n",
        tv, (double)n / tv);
    printf(
        "  bare SQLite scan of the same rows (no hashing): %6.3f s = %10.0f rows/s (%lu bytes read)\n",
        ts, (double)rows / ts, bytes);
    printf("  verify costs %.2fx the bare scan\n", tv / ts);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "throughput"))
        return throughput(argv[2], (unsigned)strtoul(argv[3], NULL, 10));
    if (argc == 4 && !strcmp(argv[1], "latency"))
        return latency(argv[2], (unsigned)strtoul(argv[3], NULL, 10));
    if (argc == 4 && !strcmp(argv[1], "call"))
        return call(argv[2], (unsigned)strtoul(argv[3], NULL, 10));
    if (argc == 4 && !strcmp(argv[1], "fill"))
        return fill(argv[2], strtoul(argv[3], NULL, 10));
    if (argc == 3 && !strcmp(argv[1], "verify"))
        return verify(argv[2]);
    fprintf(stderr,
            "usage: trail_bench throughput DIR TURNS | latency DIR N | call DIR N | fill FILE N | verify FILE\n");
    return 2;
}
