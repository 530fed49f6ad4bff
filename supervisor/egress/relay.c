/* supervisor/egress/relay.c: the egress proxies of one sandbox on the supervisor's event loop
 * (see egress.h). A connection goes: accepted -> request head read (bounded, timed) -> decided
 * by the rules (the name first, then, after the supervisor's own lookup on a worker thread, the
 * address) -> recorded and committed -> connected to the address that was checked -> relayed
 * with splice until both sides end -> its end recorded. Nothing here blocks the loop: a client
 * that sends slowly or never costs one slot of its own sandbox's connection cap until its head
 * timeout, and nothing of anyone else's. */
#include "supervisor/egress/egress.h"
#include "supervisor/conn/loop.h"
#include "supervisor/egress/internal.h"
#include "supervisor/egress/resolve.h"
#include "supervisor/trail/trail.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#define RESOLVE_MAX EGRESS_RESOLVE_MAX /* addresses of one name considered */
#define PIPE_SIZE \
    (256u << 10)        /* splice pipe per direction: at most 2 of these per connection are held */
#define PUMP_ROUNDS 16  /* splices per direction per wake-up: fairness between agents */
#define CAP_RECORDED 16 /* cap refusals recorded one by one; the rest counted */
#define SOCKS_BUF 600   /* greeting (<= 257) + request (<= 262) */

enum lkind { L_HTTP, L_SOCKS, L_DNS, L_CAPTURE };
static const char *const lkind_name[] = {"http", "socks5", "dns", "transparent"};

struct listener {
    struct loop_watch w;
    struct egress *e;
    int fd;
    enum lkind kind;
    uint16_t port;
};

enum cstate {
    C_HEAD,       /* reading the HTTP head / SOCKS greeting */
    C_SOCKS_REQ,  /* greeting answered, reading the SOCKS request */
    C_RESOLVING,  /* the supervisor's lookup (resolve.c) */
    C_COMMIT,     /* decided, recorded, waiting for the commit */
    C_CONNECTING, /* non-blocking connect to the checked address */
    C_RELAY,
};

struct dir {
    int src, dst;
    int pipe[2];
    size_t in_pipe;
    uint8_t *stage; /* bytes to send to dst before splicing (a rewritten head, early data) */
    size_t stage_off, stage_len;
    bool src_eof, done, want_in, want_out;
    uint64_t bytes;
};

struct conn {
    struct egress *e;
    struct conn *next, *prev;  /* e->conns */
    struct conn *next_pending; /* e->pending, waiting for the commit */
    enum lkind kind;
    enum cstate state;
    int cfd, ufd;
    struct loop_watch cw, uw;
    bool dead;    /* closed while on the pending list: freed by flush */
    uint8_t *buf; /* request bytes */
    size_t blen, bcap;
    char host[EGRESS_NAME_MAX + 1];
    uint16_t port;
    struct egress_decision d;
    const char *refuse_why; /* set when refused or failed; answered after the commit */
    bool refused_by_rule;
    bool http_connect;
    uint8_t *up_head; /* absolute-URI: the head rewritten for the upstream server */
    size_t up_head_len;
    struct sockaddr_storage addr;
    socklen_t alen;
    char addr_text[INET6_ADDRSTRLEN];
    bool connected_recorded; /* an allowed network_connect was staged: record the end */
    uint64_t id;
    double started, deadline;
    struct dir cu, uc;        /* client->upstream, upstream->client */
    struct egress_lookup *lk; /* while resolving */
    int n_res;
    struct sockaddr_storage res[RESOLVE_MAX];
    socklen_t res_len[RESOLVE_MAX];
};

struct egress {
    struct loop *loop;
    struct egress_resolver *resolver;
    const struct egress_policy *p;
    struct trail *trail;
    char *workspace, *actor, *sandbox;
    double head_timeout;
    struct listener ls[SANDBOX_EGRESS_MAX_FDS];
    size_t n_ls;
    struct conn *conns;
    size_t n_conns;
    struct conn *pending;
    bool flush_queued;
    struct loop_watch sweep;
    bool sweep_on;
    char *fake[EGRESS_FAKE_MAX]; /* names by fake address index */
    size_t n_fake;
    uint64_t next_id, bytes_total, cap_refused;
    bool bytes_exceeded, budget_recorded;
    struct loop_watch flush_w; /* an eventfd: the commit of a turn's decisions, next turn */
    int flush_fd;
    struct egress_stats st;
    struct egress_http_req req; /* scratch for the head parser (16 KiB; one loop thread) */
    struct cerr err;
};

static void conn_close(struct conn *c, const char *outcome);
static void conn_decided(struct conn *c);
static void conn_update(struct conn *c);

/* ---- trail ---------------------------------------------------------------------------------- */

/* Decisions are staged as they are made and committed together at the start of the next turn
 * (an eventfd the loop watches), before any of them is carried out: group commit. */
static void flush(void *data, uint32_t events);

static void queue_flush(struct egress *e)
{
    uint64_t one = 1;
    if (!e->flush_queued && write(e->flush_fd, &one, sizeof(one)) == (ssize_t)sizeof(one))
        e->flush_queued = true;
}

/* 0, or -EIO when the entry could not be staged (what it records must then not happen). */
static int stage(struct egress *e, const char *type, cJSON *body)
{
    int r = 0;
    if (!e->trail) {
        cJSON_Delete(body);
        return 0;
    }
    if (!body || trail_append(e->trail, e->workspace, e->actor, type, body, NULL, &e->err) < 0)
        r = -EIO;
    cJSON_Delete(body);
    queue_flush(e);
    return r;
}

static void add_str_or_null(cJSON *b, const char *k, const char *v)
{
    if (v && *v)
        cJSON_AddStringToObject(b, k, v);
    else
        cJSON_AddNullToObject(b, k);
}

/* network_connect, and for a refusal by the rules a denial naming the rule. */
static void record_decision(struct conn *c)
{
    struct egress *e = c->e;
    bool ok = !c->refuse_why;
    const char *rule = c->d.rule ? c->d.rule->text : NULL;
    cJSON *b = cJSON_CreateObject();
    if (b) {
        cJSON_AddNumberToObject(b, "conn", (double)c->id);
        cJSON_AddStringToObject(b, "sandbox", e->sandbox);
        cJSON_AddStringToObject(b, "proxy", lkind_name[c->kind]);
        cJSON_AddStringToObject(b, "host", c->host);
        cJSON_AddNumberToObject(b, "port", c->port);
        add_str_or_null(b, "address", c->addr_text);
        add_str_or_null(b, "rule", rule);
        cJSON_AddStringToObject(b, "decision", ok ? "allowed" : "refused");
        cJSON_AddStringToObject(b, "reason", ok ? "allowed" : c->refuse_why);
    }
    if (stage(e, "network_connect", b) < 0 && ok) {
        c->refuse_why = "the trail cannot record the connection";
        ok = false;
    }
    if (ok) {
        c->connected_recorded = true;
        e->st.allowed++;
        return;
    }
    e->st.refused++;
    if (!c->refused_by_rule)
        return;
    char subject[EGRESS_NAME_MAX + 16];
    snprintf(subject, sizeof(subject), "%s:%u", c->host, (unsigned)c->port);
    cJSON *d = cJSON_CreateObject();
    if (d) {
        cJSON_AddStringToObject(d, "kind", "network");
        cJSON_AddStringToObject(d, "subject", subject);
        cJSON_AddStringToObject(d, "rule",
                                rule                                   ? rule
                                : c->d.verdict == EGRESS_DENY_PRIVATE  ? "egress.private"
                                : c->d.verdict == EGRESS_DENY_UNLISTED ? "egress.allow (no rule matches)"
                                                                       : "egress");
        cJSON_AddStringToObject(d, "reason", c->refuse_why);
        cJSON_AddNumberToObject(d, "conn", (double)c->id);
    }
    stage(e, "denial", d);
}

static void record_end(struct conn *c, const char *outcome)
{
    if (!c->connected_recorded)
        return;
    cJSON *b = cJSON_CreateObject();
    if (b) {
        cJSON_AddNumberToObject(b, "conn", (double)c->id);
        cJSON_AddStringToObject(b, "sandbox", c->e->sandbox);
        cJSON_AddStringToObject(b, "host", c->host);
        cJSON_AddNumberToObject(b, "port", c->port);
        add_str_or_null(b, "address", c->addr_text);
        cJSON_AddNumberToObject(b, "bytes_out", (double)c->cu.bytes);
        cJSON_AddNumberToObject(b, "bytes_in", (double)c->uc.bytes);
        cJSON_AddNumberToObject(b, "duration_ms", (util_now() - c->started) * 1e3);
        cJSON_AddStringToObject(b, "outcome", outcome);
    }
    stage(c->e, "network_closed", b);
}

/* ---- answers to the program ------------------------------------------------------------------ */

static void send_small(int fd, const void *buf, size_t len)
{
    /* A fresh socket's send buffer takes these few hundred bytes whole; a client that shrank
     * its window to make them block only loses its own answer. */
    (void)!send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void http_answer(struct conn *c, int status, const char *title, const char *why)
{
    char body[600], msg[900];
    const char *rule = c->d.rule ? c->d.rule->text : NULL;
    int bl = snprintf(body, sizeof(body), "corral egress: %s%s%u %s%s%s%s\n", c->host[0] ? c->host : "",
                      c->host[0] ? ":" : "", (unsigned)c->port, why, rule ? " (rule: " : "",
                      rule ? rule : "", rule ? ")" : "");
    if (bl < 0 || (size_t)bl >= sizeof(body))
        bl = (int)strlen(body);
    int n = snprintf(msg, sizeof(msg),
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                     "Content-Length: %d\r\nX-Corral-Egress: %s\r\n\r\n%s",
                     status, title, bl, status == 403 ? "refused" : "failed", body);
    if (n > 0)
        send_small(c->cfd, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

static void socks_answer(struct conn *c, uint8_t rep)
{
    uint8_t r[10];
    egress_socks_reply(r, rep);
    send_small(c->cfd, r, sizeof(r));
}

/* The refusal / failure as the program's protocol says it, then the connection closes. */
static void refuse_now(struct conn *c, int http_status, uint8_t socks_rep)
{
    if (c->kind == L_HTTP)
        http_answer(c, http_status,
                    http_status == 403   ? "Forbidden"
                    : http_status == 400 ? "Bad Request"
                    : http_status == 501 ? "Not Implemented"
                                         : "Bad Gateway",
                    c->refuse_why);
    else if (c->kind == L_SOCKS)
        socks_answer(c, socks_rep);
    else {
        /* Transparent: reset, so the program sees ECONNREFUSED-like failure at once. */
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    }
}

/* ---- the sweep: head timeouts ---------------------------------------------------------------- */

static void sweep_fire(void *data, uint32_t events);

static void sweep_arm(struct egress *e)
{
    if (e->sweep_on)
        return;
    if (loop_timer_add(e->loop, &e->sweep, 1.0, sweep_fire, e) == 0)
        e->sweep_on = true;
}

static void sweep_fire(void *data, uint32_t events)
{
    struct egress *e = data;
    loop_watch_del(e->loop, &e->sweep);
    e->sweep_on = false;
    double now = util_now();
    bool waiting = false;
    for (struct conn *c = e->conns, *next; c; c = next) {
        next = c->next;
        if (c->state != C_HEAD && c->state != C_SOCKS_REQ && c->state != C_CONNECTING)
            continue;
        if (now >= c->deadline) {
            if (c->state == C_CONNECTING) {
                c->refuse_why = "the connection to the host timed out";
                refuse_now(c, 504, 4);
                conn_close(c, "connect timed out");
            } else {
                conn_close(c, "request head timed out");
            }
        } else {
            waiting = true;
        }
    }
    if (waiting)
        sweep_arm(e);
}

/* ---- connections ----------------------------------------------------------------------------- */

static void conn_free(struct conn *c)
{
    free(c->buf);
    free(c->up_head);
    free(c);
}

static void dir_close_pipe(struct dir *d)
{
    for (int i = 0; i < 2; i++)
        if (d->pipe[i] >= 0) {
            close(d->pipe[i]);
            d->pipe[i] = -1;
        }
}

static void conn_close(struct conn *c, const char *outcome)
{
    struct egress *e = c->e;
    if (c->dead)
        return;
    record_end(c, outcome);
    loop_watch_del(e->loop, &c->cw);
    loop_watch_del(e->loop, &c->uw);
    if (c->cfd >= 0)
        close(c->cfd);
    if (c->ufd >= 0)
        close(c->ufd);
    c->cfd = c->ufd = -1;
    dir_close_pipe(&c->cu);
    dir_close_pipe(&c->uc);
    e->st.bytes_out += c->cu.bytes;
    e->st.bytes_in += c->uc.bytes;
    if (c->prev)
        c->prev->next = c->next;
    else
        e->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    e->n_conns--;
    c->dead = true;
    if (c->state == C_RESOLVING)
        egress_resolve_cancel(e->resolver, c->lk); /* never delivered now */
    /* Still on the pending list: freed by flush. Otherwise after this turn, as events of this
     * turn may name its watches. */
    if (c->state != C_COMMIT)
        loop_defer(e->loop, (void (*)(void *))conn_free, c) == 0 ? (void)0 : conn_free(c);
}

static void conn_refuse(struct conn *c, const char *why, bool by_rule)
{
    c->refuse_why = why;
    c->refused_by_rule = by_rule;
    conn_decided(c);
}

/* Decided (allowed with c->addr set, or refused with c->refuse_why): record, and wait for the
 * commit before acting on it (write-ahead). */
static void conn_decided(struct conn *c)
{
    struct egress *e = c->e;
    record_decision(c);
    c->state = C_COMMIT;
    loop_watch_del(e->loop, &c->cw); /* nothing more is read until the decision is carried out */
    c->next_pending = e->pending;
    e->pending = c;
    if (!e->trail)
        flush(e, 0); /* nothing to commit: carried out at once */
    else
        queue_flush(e);
}

static void on_connected(struct conn *c);

static void upstream_event(void *data, uint32_t events)
{
    on_connected(data);
}

static void start_connect(struct conn *c)
{
    struct egress *e = c->e;
    c->state = C_CONNECTING; /* off the pending list: a failure below frees it */
    c->ufd = socket(c->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->ufd < 0) {
        c->refuse_why = "the supervisor cannot open a socket";
        refuse_now(c, 502, 1);
        conn_close(c, "socket failed");
        return;
    }
    int one = 1;
    setsockopt(c->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(c->ufd, (struct sockaddr *)&c->addr, c->alen) < 0 && errno != EINPROGRESS) {
        c->refuse_why = strerror(errno);
        refuse_now(c, 502, errno == ECONNREFUSED ? 5 : 4);
        conn_close(c, "connect failed");
        return;
    }
    c->deadline = util_now() + 30;
    sweep_arm(e);
    if (loop_watch_add(e->loop, &c->uw, c->ufd, EPOLLOUT, upstream_event, c) < 0)
        conn_close(c, "loop failure");
}

static void flush(void *data, uint32_t events)
{
    struct egress *e = data;
    uint64_t ticks;
    if (e->flush_queued)
        (void)!read(e->flush_fd, &ticks, sizeof(ticks));
    e->flush_queued = false;
    bool committed = true;
    if (e->trail && trail_pending(e->trail) && trail_commit(e->trail, &e->err) < 0)
        committed = false; /* degraded: nothing recorded may happen */
    struct conn *list = e->pending;
    e->pending = NULL;
    while (list) {
        struct conn *c = list;
        list = c->next_pending;
        if (c->dead) {
            conn_free(c);
            continue;
        }
        if (!committed && !c->refuse_why)
            c->refuse_why = "the trail cannot record the connection";
        if (c->refuse_why) {
            refuse_now(c, c->refused_by_rule ? 403 : 502, c->refused_by_rule ? 2 : 4);
            c->state = C_HEAD; /* not C_COMMIT any more: conn_close frees it */
            conn_close(c, "refused");
            continue;
        }
        start_connect(c);
    }
}

static void addr_bytes(const struct sockaddr_storage *ss, uint8_t out[16])
{
    memset(out, 0, 16);
    if (ss->ss_family == AF_INET)
        memcpy(out, &((const struct sockaddr_in *)ss)->sin_addr, 4);
    else
        memcpy(out, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
}

static void set_addr(struct conn *c, const struct sockaddr_storage *ss, socklen_t len)
{
    c->addr = *ss;
    c->alen = len;
    uint8_t a[16];
    addr_bytes(ss, a);
    inet_ntop(ss->ss_family, a, c->addr_text, sizeof(c->addr_text));
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)&c->addr)->sin_port = htons(c->port);
    else
        ((struct sockaddr_in6 *)&c->addr)->sin6_port = htons(c->port);
}

/* The addresses a name resolved to, checked one by one: the first the rules allow is the one
 * connected to, with no second lookup. */
static void decide_addresses(struct conn *c)
{
    struct egress_decision first = {0};
    bool have_first = false;
    struct egress_decision by_name = c->d;
    for (int i = 0; i < c->n_res; i++) {
        uint8_t a[16];
        addr_bytes(&c->res[i], a);
        struct egress_decision d = by_name;
        egress_decide_addr(c->e->p, c->res[i].ss_family, a, c->port, &d);
        if (d.verdict == EGRESS_ALLOW) {
            c->d = d;
            set_addr(c, &c->res[i], c->res_len[i]);
            conn_decided(c);
            return;
        }
        if (!have_first) {
            first = d;
            have_first = true;
            set_addr(c, &c->res[i], c->res_len[i]);
        }
    }
    if (!have_first) {
        c->d.rule = NULL;
        return conn_refuse(c, "the name does not resolve", false);
    }
    c->d = first;
    conn_refuse(c, first.reason, true);
}

static void resolve_done(void *owner, const struct egress_lookup *lk)
{
    struct conn *c = owner;
    c->lk = NULL;
    c->state = C_HEAD;
    c->n_res = lk->n;
    memcpy(c->res, lk->addr, sizeof(c->res));
    memcpy(c->res_len, lk->len, sizeof(c->res_len));
    decide_addresses(c);
}

static const struct egress_host *pinned(const struct egress_policy *p, const char *name)
{
    for (size_t i = 0; i < p->n_hosts; i++)
        if (!strcmp(p->hosts[i].name, name))
            return &p->hosts[i];
    return NULL;
}

/* host and port are known: decide by name, then look it up (or take the literal). */
static void conn_request(struct conn *c)
{
    struct egress *e = c->e;
    if (e->bytes_exceeded) {
        c->d.rule = NULL;
        return conn_refuse(c, "the sandbox's egress byte budget (egress.max_bytes) is spent", true);
    }
    egress_decide_name(e->p, c->host, c->port, &c->d);
    if (c->d.verdict != EGRESS_ALLOW)
        return conn_refuse(c, c->d.reason, true);
    int fam;
    uint8_t a[16];
    struct sockaddr_storage ss = {0};
    socklen_t len;
    const struct egress_host *pin = NULL;
    if (egress_addr_parse(c->host, &fam, a) || (pin = pinned(e->p, c->host))) {
        if (pin) {
            fam = pin->family;
            memcpy(a, pin->addr, 16);
        }
        if (fam == AF_INET) {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
            s4->sin_family = AF_INET;
            memcpy(&s4->sin_addr, a, 4);
            len = sizeof(*s4);
        } else {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
            s6->sin6_family = AF_INET6;
            memcpy(&s6->sin6_addr, a, 16);
            len = sizeof(*s6);
        }
        if (pin) {
            c->res[0] = ss;
            c->res_len[0] = len;
            c->n_res = 1;
            return decide_addresses(c);
        }
        set_addr(c, &ss, len);
        return conn_decided(c); /* a literal: the address rules decided already */
    }
    loop_watch_del(e->loop, &c->cw);
    if (egress_resolve(e->resolver, c->host, c, &c->lk) < 0) {
        c->d.rule = NULL;
        return conn_refuse(c, "the supervisor is out of memory", false);
    }
    c->state = C_RESOLVING;
}

/* ---- reading requests ------------------------------------------------------------------------ */

static void conn_bad(struct conn *c, const char *why, int status)
{
    c->refuse_why = why;
    refuse_now(c, status, 1);
    conn_close(c, "bad request");
}

static void on_http_head(struct conn *c)
{
    struct egress *e = c->e;
    ssize_t r = egress_http_parse((const char *)c->buf, c->blen, &e->req);
    if (r == EGRESS_NEED_MORE)
        return;
    if (r < 0)
        return conn_bad(c,
                        r == -ENOTSUP ? "this proxy serves CONNECT and absolute http:// URIs only"
                        : r == -E2BIG ? "the request head is too long"
                                      : "malformed request",
                        r == -ENOTSUP ? 501 : 400);
    snprintf(c->host, sizeof(c->host), "%s", e->req.host);
    c->port = e->req.port;
    c->http_connect = e->req.connect;
    size_t early = c->blen - (size_t)r; /* bytes after the head: the body's start, or TLS */
    if (e->req.connect) {
        if (early) {
            c->up_head = malloc(early);
            if (!c->up_head)
                return conn_close(c, "out of memory");
            memcpy(c->up_head, c->buf + r, early);
            c->up_head_len = early;
        }
    } else {
        size_t rest = c->blen - e->req.rest_off;
        c->up_head = malloc(e->req.line_len + rest);
        if (!c->up_head)
            return conn_close(c, "out of memory");
        memcpy(c->up_head, e->req.line, e->req.line_len);
        memcpy(c->up_head + e->req.line_len, c->buf + e->req.rest_off, rest);
        c->up_head_len = e->req.line_len + rest;
    }
    conn_request(c);
}

static void on_socks(struct conn *c)
{
    if (c->state == C_HEAD) {
        bool no_auth;
        ssize_t r = egress_socks_greeting(c->buf, c->blen, &no_auth);
        if (r == EGRESS_NEED_MORE)
            return;
        if (r < 0)
            return conn_close(c, "bad request");
        uint8_t ans[2] = {5, no_auth ? 0 : 0xff};
        send_small(c->cfd, ans, 2);
        if (!no_auth)
            return conn_close(c, "bad request");
        memmove(c->buf, c->buf + r, c->blen - (size_t)r);
        c->blen -= (size_t)r;
        c->state = C_SOCKS_REQ;
    }
    struct egress_socks_req q;
    ssize_t r = egress_socks_request(c->buf, c->blen, &q);
    if (r == EGRESS_NEED_MORE)
        return;
    if (r < 0 || q.cmd != 1) {
        socks_answer(c, r == -EPROTONOSUPPORT ? 8 : r < 0 ? 1 : 7);
        return conn_close(c, "bad request");
    }
    snprintf(c->host, sizeof(c->host), "%s", q.host);
    c->port = q.port;
    size_t early = c->blen - (size_t)r;
    if (early) {
        c->up_head = malloc(early);
        if (!c->up_head)
            return conn_close(c, "out of memory");
        memcpy(c->up_head, c->buf + r, early);
        c->up_head_len = early;
    }
    conn_request(c);
}

/* ---- relaying -------------------------------------------------------------------------------- */

static int dir_init(struct dir *d, int src, int dst)
{
    d->src = src;
    d->dst = dst;
    if (pipe2(d->pipe, O_NONBLOCK | O_CLOEXEC) < 0)
        return -errno;
    (void)fcntl(d->pipe[1], F_SETPIPE_SZ, PIPE_SIZE);
    return 0;
}

/* Moves what it can; returns < 0 when the connection must end. Sets want_in / want_out. */
static int dir_pump(struct egress *e, struct dir *d)
{
    d->want_in = d->want_out = false;
    if (d->done)
        return 0;
    for (int round = 0; round < PUMP_ROUNDS; round++) {
        if (d->stage_off < d->stage_len) {
            ssize_t n = send(d->dst, d->stage + d->stage_off, d->stage_len - d->stage_off,
                             MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    d->want_out = true;
                    return 0;
                }
                return -errno;
            }
            d->stage_off += (size_t)n;
            continue;
        }
        if (d->in_pipe) {
            ssize_t n = splice(d->pipe[0], NULL, d->dst, NULL, d->in_pipe,
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n < 0) {
                if (errno == EAGAIN) {
                    d->want_out = true;
                    return 0;
                }
                return -errno;
            }
            d->in_pipe -= (size_t)n;
            continue;
        }
        if (d->src_eof) {
            shutdown(d->dst, SHUT_WR);
            d->done = true;
            return 0;
        }
        size_t want = PIPE_SIZE;
        if (e->p->max_bytes) {
            if (e->bytes_total >= e->p->max_bytes) {
                e->bytes_exceeded = true;
                return -EDQUOT;
            }
            if (e->p->max_bytes - e->bytes_total < want)
                want = (size_t)(e->p->max_bytes - e->bytes_total);
        }
        ssize_t n = splice(d->src, NULL, d->pipe[1], NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n == 0) {
            d->src_eof = true;
            continue;
        }
        if (n < 0) {
            if (errno == EAGAIN) {
                d->want_in = true;
                return 0;
            }
            if (errno == ECONNRESET) {
                d->src_eof = true;
                continue;
            }
            return -errno;
        }
        d->in_pipe += (size_t)n;
        d->bytes += (uint64_t)n;
        e->bytes_total += (uint64_t)n;
    }
    d->want_in = true; /* more may be waiting: level-triggered epoll comes back next turn */
    return 0;
}

static void budget_record(struct egress *e)
{
    cJSON *b = cJSON_CreateObject();
    if (b) {
        /* the shape of the sandbox's other budgets (docs/trail.md) */
        if (e->workspace)
            cJSON_AddStringToObject(b, "workspace_id", e->workspace);
        cJSON_AddStringToObject(b, "budget_dimension", "egress_bytes");
        cJSON_AddNumberToObject(b, "consumed", (double)e->bytes_total);
        cJSON_AddNumberToObject(b, "limit", (double)e->p->max_bytes);
    }
    stage(e, "budget_exceeded", b);
}

static void relay_event(void *data, uint32_t events)
{
    struct conn *c = data;
    conn_update(c);
}

static void conn_update(struct conn *c)
{
    struct egress *e = c->e;
    int r = dir_pump(e, &c->cu);
    if (r == 0)
        r = dir_pump(e, &c->uc);
    if (r < 0) {
        if (r == -EDQUOT) {
            if (!e->budget_recorded)
                budget_record(e);
            e->budget_recorded = true;
        }
        return conn_close(c, r == -EDQUOT ? "egress byte budget spent" : "reset");
    }
    if (c->cu.done && c->uc.done)
        return conn_close(c, "closed");
    uint32_t ce = (c->cu.want_in ? EPOLLIN : 0) | (c->uc.want_out ? EPOLLOUT : 0);
    uint32_t ue = (c->uc.want_in ? EPOLLIN : 0) | (c->cu.want_out ? EPOLLOUT : 0);
    if (loop_watch_mod(e->loop, &c->cw, ce) < 0 || loop_watch_mod(e->loop, &c->uw, ue) < 0)
        conn_close(c, "loop failure");
}

static void relay_start(struct conn *c)
{
    struct egress *e = c->e;
    loop_watch_del(e->loop, &c->uw);
    loop_watch_del(e->loop, &c->cw);
    if (dir_init(&c->cu, c->cfd, c->ufd) < 0 || dir_init(&c->uc, c->ufd, c->cfd) < 0)
        return conn_close(c, "out of file descriptors");
    c->cu.stage = c->up_head;
    c->cu.stage_len = c->up_head_len;
    c->state = C_RELAY;
    if (loop_watch_add(e->loop, &c->cw, c->cfd, 0, relay_event, c) < 0 ||
        loop_watch_add(e->loop, &c->uw, c->ufd, 0, relay_event, c) < 0)
        return conn_close(c, "loop failure");
    conn_update(c);
}

static void on_connected(struct conn *c)
{
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
        soerr = errno;
    if (soerr) {
        c->refuse_why = strerror(soerr);
        refuse_now(c, 502, soerr == ECONNREFUSED ? 5 : 4);
        return conn_close(c, "connect failed");
    }
    if (c->kind == L_HTTP && c->http_connect) {
        static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        send_small(c->cfd, ok, sizeof(ok) - 1);
    } else if (c->kind == L_SOCKS) {
        socks_answer(c, 0);
    }
    relay_start(c);
}

static void client_event(void *data, uint32_t events)
{
    struct conn *c = data;
    size_t cap = c->bcap;
    if (c->blen >= cap)
        return conn_bad(c, "the request head is too long", 400);
    ssize_t n = recv(c->cfd, c->buf + c->blen, cap - c->blen, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
        return conn_close(c, "client went away");
    if (n < 0)
        return;
    c->blen += (size_t)n;
    if (c->kind == L_HTTP)
        on_http_head(c);
    else
        on_socks(c);
}

static void capture_request(struct conn *c, uint16_t port)
{
    struct egress *e = c->e;
    struct sockaddr_in local;
    socklen_t ll = sizeof(local);
    c->port = port;
    if (getsockname(c->cfd, (struct sockaddr *)&local, &ll) < 0 || local.sin_family != AF_INET)
        return conn_close(c, "no local address");
    uint32_t a = ntohl(local.sin_addr.s_addr);
    c->port = ntohs(local.sin_port);
    uint32_t idx = a - EGRESS_FAKE_NET - 1;
    if ((a & 0xffff0000u) != EGRESS_FAKE_NET || idx >= e->n_fake) {
        inet_ntop(AF_INET, &local.sin_addr, c->host, sizeof(c->host));
        c->d.rule = NULL;
        return conn_refuse(c, "not an address the sandbox's DNS stub handed out", true);
    }
    snprintf(c->host, sizeof(c->host), "%s", e->fake[idx]);
    conn_request(c);
}

static void on_accept(void *data, uint32_t events)
{
    struct listener *l = data;
    struct egress *e = l->e;
    for (int i = 0; i < 32; i++) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        uint64_t max = e->p->max_connections ? e->p->max_connections : EGRESS_DEFAULT_CONNECTIONS;
        if (e->n_conns >= max) {
            /* At the cap: refused at once; the first few recorded, the rest counted. */
            if (e->cap_refused++ < CAP_RECORDED) {
                cJSON *d = cJSON_CreateObject();
                if (d) {
                    cJSON_AddStringToObject(d, "kind", "network");
                    cJSON_AddStringToObject(d, "subject", lkind_name[l->kind]);
                    cJSON_AddStringToObject(d, "rule", "egress.max_connections");
                    cJSON_AddStringToObject(
                        d, "reason", "the sandbox has as many connections open as its policy allows");
                    cJSON_AddNumberToObject(d, "limit", (double)max);
                }
                stage(e, "denial", d);
            }
            e->st.refused++;
            struct linger lg = {.l_onoff = 1, .l_linger = 0};
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
            close(fd);
            continue;
        }
        struct conn *c = calloc(1, sizeof(*c));
        size_t cap = l->kind == L_HTTP ? EGRESS_HTTP_HEAD_MAX : l->kind == L_SOCKS ? SOCKS_BUF : 0;
        if (!c || (cap && !(c->buf = malloc(cap)))) {
            free(c);
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* the relay forwards as it gets */
        c->e = e;
        c->kind = l->kind;
        c->bcap = cap;
        c->cfd = fd;
        c->ufd = -1;
        c->cu.pipe[0] = c->cu.pipe[1] = c->uc.pipe[0] = c->uc.pipe[1] = -1;
        c->id = ++e->next_id;
        c->started = util_now();
        c->deadline = c->started + e->head_timeout;
        c->state = C_HEAD;
        c->next = e->conns;
        if (e->conns)
            e->conns->prev = c;
        e->conns = c;
        e->n_conns++;
        if (l->kind == L_CAPTURE) {
            capture_request(c, l->port);
            continue;
        }
        if (loop_watch_add(e->loop, &c->cw, fd, EPOLLIN, client_event, c) < 0) {
            conn_close(c, "loop failure");
            continue;
        }
        sweep_arm(e);
        /* A client usually sends its request with its connect: read it now, not a turn later. */
        client_event(c, EPOLLIN);
    }
}

/* ---- the DNS stub ---------------------------------------------------------------------------- */

static int fake_index(struct egress *e, const char *name)
{
    for (size_t i = 0; i < e->n_fake; i++)
        if (!strcmp(e->fake[i], name))
            return (int)i;
    if (e->n_fake >= EGRESS_FAKE_MAX)
        return -ENOSPC;
    if (!(e->fake[e->n_fake] = strdup(name)))
        return -ENOMEM;
    return (int)e->n_fake++;
}

static void on_dns(void *data, uint32_t events)
{
    struct listener *l = data;
    struct egress *e = l->e;
    for (int i = 0; i < 64; i++) {
        uint8_t q[EGRESS_DNS_MAX], ans[EGRESS_DNS_MAX];
        struct sockaddr_in from;
        socklen_t fl = sizeof(from);
        ssize_t n = recvfrom(l->fd, q, sizeof(q), MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *)&from,
                             &fl);
        if (n < 0)
            return;
        if ((size_t)n > sizeof(q))
            continue; /* truncated: not a query this stub reads */
        struct egress_dns_query dq;
        int r = egress_dns_parse(q, (size_t)n, &dq);
        size_t al;
        if (r == -ENOTSUP) {
            al = egress_dns_answer(q, &dq, NULL, 4 /* NOTIMP */, ans);
        } else if (r < 0) {
            continue;
        } else if (!strcmp(dq.name, "localhost")) {
            static const uint8_t lo[4] = {127, 0, 0, 1};
            al = egress_dns_answer(q, &dq, dq.qtype == 1 ? lo : NULL, 0, ans);
        } else if (dq.qtype == 1) {
            int idx = fake_index(e, dq.name);
            uint32_t a = htonl(EGRESS_FAKE_NET + (uint32_t)idx + 1);
            al = egress_dns_answer(q, &dq, idx >= 0 ? (const uint8_t *)&a : NULL, idx >= 0 ? 0 : 2, ans);
        } else {
            al = egress_dns_answer(q, &dq, NULL, 0, ans); /* AAAA and others: no records */
        }
        (void)sendto(l->fd, ans, al, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&from, fl);
    }
}

/* ---- set-up ---------------------------------------------------------------------------------- */

void egress_sandbox_spec(const struct egress_policy *p, struct sandbox_egress *spec)
{
    memset(spec, 0, sizeof(*spec));
    spec->http_port = EGRESS_HTTP_PORT;
    spec->socks_port = EGRESS_SOCKS_PORT;
    if (p->transparent) {
        spec->dns = true;
        spec->n_capture = egress_ports(p, spec->capture, SANDBOX_EGRESS_MAX_CAPTURE);
    }
}

const char *const *egress_env(void)
{
    static const char *const env[] = {
        "HTTP_PROXY=http://127.0.0.1:3128",
        "HTTPS_PROXY=http://127.0.0.1:3128",
        "http_proxy=http://127.0.0.1:3128",
        "https_proxy=http://127.0.0.1:3128",
        "ALL_PROXY=socks5h://127.0.0.1:1080",
        "all_proxy=socks5h://127.0.0.1:1080",
        "NO_PROXY=localhost,127.0.0.1,::1",
        "no_proxy=localhost,127.0.0.1,::1",
        NULL,
    };
    return env;
}

int egress_new(struct loop *l, const struct egress_opts *o, const struct sandbox_egress *spec, int *fds,
               size_t n_fds, struct egress **out, struct cerr *err)
{
    struct egress *e = calloc(1, sizeof(*e));
    int r;
    if (!e) {
        r = cerr_set(err, ENOMEM, "egress: out of memory");
        goto fail_fds;
    }
    e->flush_fd = -1;
    e->loop = l;
    e->p = o->policy;
    e->trail = o->trail;
    e->head_timeout = o->head_timeout > 0 ? o->head_timeout : EGRESS_HEAD_TIMEOUT;
    e->flush_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (e->flush_fd < 0 || loop_watch_add(l, &e->flush_w, e->flush_fd, EPOLLIN, flush, e) < 0) {
        r = cerr_set(err, errno, "egress: eventfd: %s", strerror(errno));
        goto fail;
    }
    e->workspace = o->workspace ? strdup(o->workspace) : NULL;
    e->actor = strdup(o->actor ? o->actor : "system");
    e->sandbox = strdup(o->sandbox ? o->sandbox : "agent");
    if ((o->workspace && !e->workspace) || !e->actor || !e->sandbox) {
        r = cerr_set(err, ENOMEM, "egress: out of memory");
        goto fail;
    }
    /* Lookups run on two threads of the egress's own: a slow resolver delays only the
     * connections waiting for it, and never the loop, not even when the sandbox ends. */
    if ((r = egress_resolver_new(l, resolve_done, &e->resolver, err)) < 0)
        goto fail;
    enum lkind kinds[SANDBOX_EGRESS_MAX_FDS];
    uint16_t ports[SANDBOX_EGRESS_MAX_FDS];
    size_t k = 0;
    if (spec->http_port)
        kinds[k] = L_HTTP, ports[k++] = spec->http_port;
    if (spec->socks_port)
        kinds[k] = L_SOCKS, ports[k++] = spec->socks_port;
    if (spec->dns)
        kinds[k] = L_DNS, ports[k++] = 53;
    for (size_t i = 0; i < spec->n_capture; i++)
        if (spec->capture[i] != spec->http_port && spec->capture[i] != spec->socks_port)
            kinds[k] = L_CAPTURE, ports[k++] = spec->capture[i];
    if (k != n_fds) {
        r = cerr_set(err, EINVAL, "egress: %zu sockets for %zu listeners", n_fds, k);
        goto fail;
    }
    for (size_t i = 0; i < n_fds; i++) {
        struct listener *ls = &e->ls[i];
        ls->e = e;
        ls->fd = fds[i];
        fds[i] = -1;
        ls->kind = kinds[i];
        ls->port = ports[i];
        e->n_ls++;
        if ((r = loop_watch_add(l, &ls->w, ls->fd, EPOLLIN, ls->kind == L_DNS ? on_dns : on_accept,
                                ls)) < 0) {
            cerr_set(err, -r, "egress: cannot watch a listener: %s", strerror(-r));
            goto fail;
        }
    }
    *out = e;
    return 0;
fail:
    egress_free(e);
fail_fds:
    for (size_t i = 0; i < n_fds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return r;
}

void egress_get_stats(const struct egress *e, struct egress_stats *s)
{
    *s = e->st;
    s->open = e->n_conns;
    for (const struct conn *c = e->conns; c; c = c->next) {
        s->bytes_out += c->cu.bytes;
        s->bytes_in += c->uc.bytes;
    }
}

void egress_free(struct egress *e)
{
    if (!e)
        return;
    while (e->conns)
        conn_close(e->conns, "sandbox ended");
    if (e->cap_refused > CAP_RECORDED) {
        cJSON *d = cJSON_CreateObject();
        if (d) {
            cJSON_AddStringToObject(d, "kind", "network");
            cJSON_AddStringToObject(d, "subject", "(connections over the cap)");
            cJSON_AddStringToObject(d, "rule", "egress.max_connections");
            cJSON_AddStringToObject(d, "reason", "refused at accept");
            cJSON_AddBoolToObject(d, "aggregate", true);
            cJSON_AddNumberToObject(d, "count", (double)e->cap_refused);
            cJSON_AddNumberToObject(d, "recorded", CAP_RECORDED);
        }
        stage(e, "denial", d);
    }
    egress_resolver_free(e->resolver); /* does not wait for a lookup in progress */
    struct conn *list = e->pending;
    while (list) {
        struct conn *c = list;
        list = c->next_pending;
        conn_free(c);
    }
    if (e->sweep_on)
        loop_watch_del(e->loop, &e->sweep);
    for (size_t i = 0; i < e->n_ls; i++) {
        loop_watch_del(e->loop, &e->ls[i].w);
        close(e->ls[i].fd);
    }
    if (e->trail && trail_pending(e->trail))
        (void)trail_commit(e->trail, &e->err);
    loop_watch_del(e->loop, &e->flush_w);
    if (e->flush_fd >= 0)
        close(e->flush_fd);
    for (size_t i = 0; i < e->n_fake; i++)
        free(e->fake[i]);
    free(e->workspace);
    free(e->actor);
    free(e->sandbox);
    free(e);
}
