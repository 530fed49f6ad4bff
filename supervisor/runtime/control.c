/* supervisor/runtime/control.c: see control.h. The answer is written without blocking: a client that
 * does not read gets what fits in the socket buffer (sized for a large tree) and then EOF. */
#include "supervisor/runtime/control.h"

#include "supervisor/runtime/control_human.h"
#include "supervisor/conn/rpc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

struct control {
    struct loop *loop;
    struct loop_watch w;
    int fd;
    char *path;
    cJSON *(*state)(void *data);
    control_request_fn request;
    void *data;
    unsigned clients; /* open at once: bounded, so many slow clients cannot hold much memory */
    struct control_client *list;
};

#define CONTROL_MAX_CLIENTS 32
/* When the socket is open to other users, any local uid may connect: each uid other than root
 * and the run's own holds this many slots at most, and root's and the run's user's are counted
 * apart, so nobody else can hold every slot and lock the admin out of ps and approvals. */
#define CONTROL_MAX_PER_UID 4
#define CONTROL_MAX_DEPTH 64
#define CONTROL_MAX_VALUES 65536 /* a request's JSON values: its tree stays under ~6 MB */

static int fill_addr(struct sockaddr_un *a, const char *path, struct cerr *err)
{
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(a->sun_path))
        return cerr_set(
            err, ENAMETOOLONG,
            "control socket path %s is longer than %zu bytes; choose a shorter --db or --control path",
            path, sizeof(a->sun_path) - 1);
    memcpy(a->sun_path, path, strlen(path) + 1);
    return 0;
}

/* One client: its request line (or EOF: the `corral ps` document), answered after the turn's
 * trail commit, so a decision is on disk before the person is told it was taken. */
struct control_client {
    struct control *c;
    struct loop_watch w, timer;
    int fd;
    char *buf;
    size_t len, cap;
    struct control_peer peer;
    bool done;
    struct control_client *next, **pprev;
};

static void client_close(void *data)
{
    struct control_client *k = data;
    k->c->clients--;
    *k->pprev = k->next;
    if (k->next)
        k->next->pprev = k->pprev;
    close(k->fd);
    free(k->buf);
    free(k);
}

static void client_send(struct control_client *k, const cJSON *doc)
{
    char *text = doc ? cJSON_PrintUnformatted(doc) : NULL;
    if (text) {
        size_t len = strlen(text), off = 0;
        while (off < len) {
            ssize_t n = send(k->fd, text + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n <= 0)
                break;
            off += (size_t)n;
        }
        send(k->fd, "\n", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    free(text);
}

struct control_answer {
    struct control_client *k;
    cJSON *doc;
};

static void answer_later(void *data)
{
    struct control_answer *a = data;
    client_send(a->k, a->doc);
    cJSON_Delete(a->doc);
    client_close(a->k);
    free(a);
}

static cJSON *error_doc(const char *code, const char *msg)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddFalseToObject(o, "ok");
    cJSON *e = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(e, "code", code);
    cJSON_AddStringToObject(e, "message", msg);
    return o;
}

/* The live state: for the run's own user and root at once; anyone else (the socket is open to
 * the policy's other users) is asked about like any other request. */
static cJSON *live_state(struct control *c, struct control_client *k)
{
    if (!c->request || k->peer.uid == 0 || k->peer.uid == geteuid())
        return c->state(c->data);
    static const cJSON empty = {.type = cJSON_Object};
    return c->request(c->data, &k->peer, "ps", &empty);
}

static void client_finish(struct control_client *k, bool eof)
{
    struct control *c = k->c;
    k->done = true;
    loop_watch_del(c->loop, &k->w);
    loop_watch_del(c->loop, &k->timer);
    cJSON *doc = NULL;
    size_t n = k->len;
    while (n && (k->buf[n - 1] == '\n' || k->buf[n - 1] == '\r' || k->buf[n - 1] == ' '))
        n--;
    if (n == 0 && eof) {
        doc = live_state(c, k); /* no request: the live state (`corral ps` of old) */
    } else if (!eof && !memchr(k->buf, '\n', k->len)) {
        doc = error_doc("bad_request", "a request is one JSON line, at most 2 MiB, sent within 10 s");
    } else if (rpc_utf8_check(k->buf, n) < n || memchr(k->buf, '\0', n) ||
               rpc_json_depth(k->buf, n, CONTROL_MAX_DEPTH) > CONTROL_MAX_DEPTH ||
               rpc_json_values(k->buf, n, CONTROL_MAX_VALUES) > CONTROL_MAX_VALUES) {
        /* Checked before parsing, as an agent's messages are: any local uid may send one when
         * the socket is open to others, and 2 MiB of "[0,0,...]" is an 80 MB tree. */
        doc = error_doc("bad_request", "a request is valid UTF-8 JSON, nested at most 64 deep, "
                                       "of at most 65536 values");
    } else {
        cJSON *req = cJSON_ParseWithLength(k->buf, n);
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(req, "op");
        if (!cJSON_IsObject(req) || !cJSON_IsString(op))
            doc = error_doc("bad_request", "a request is a JSON object with an \"op\"");
        else if (!strcmp(op->valuestring, "ps"))
            doc = live_state(c, k);
        else if (c->request)
            doc = c->request(c->data, &k->peer, op->valuestring, req);
        else
            doc = error_doc("unknown_op", "this run answers only ps");
        cJSON_Delete(req);
    }
    struct control_answer *a = calloc(1, sizeof(*a));
    if (!a || loop_defer(c->loop, answer_later, a) < 0) {
        free(a);
        client_send(k, doc);
        cJSON_Delete(doc);
        loop_defer(c->loop, client_close, k);
        return;
    }
    a->k = k;
    a->doc = doc;
}

static void on_client_data(void *data, uint32_t events)
{
    struct control_client *k = data;
    (void)events;
    if (k->done)
        return;
    for (;;) {
        if (k->len == k->cap) {
            if (k->cap >= CONTROL_REQUEST_MAX) {
                client_finish(k, false);
                return;
            }
            size_t nc = k->cap ? k->cap * 2 : 4096;
            char *nb = realloc(k->buf, nc);
            if (!nb) {
                client_finish(k, false);
                return;
            }
            k->buf = nb;
            k->cap = nc;
        }
        ssize_t n = recv(k->fd, k->buf + k->len, k->cap - k->len, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            client_finish(k, true);
            return;
        }
        k->len += (size_t)n;
        if (memchr(k->buf + k->len - (size_t)n, '\n', (size_t)n)) {
            client_finish(k, true);
            return;
        }
    }
}

static void on_client_timeout(void *data, uint32_t events)
{
    struct control_client *k = data;
    (void)events;
    if (!k->done)
        client_finish(k, k->len == 0);
}

static bool owner_uid(uid_t uid)
{
    return uid == 0 || uid == geteuid();
}

/* Whether a client of UID may take a slot now (see CONTROL_MAX_PER_UID). */
static bool slot_free(const struct control *c, uid_t uid)
{
    unsigned same = 0, others = 0;
    for (const struct control_client *k = c->list; k; k = k->next) {
        bool own = owner_uid(k->peer.uid);
        if (own == owner_uid(uid))
            same++;
        if (!own && k->peer.uid == uid)
            others++;
    }
    if (owner_uid(uid))
        return same < CONTROL_MAX_CLIENTS;
    return same < CONTROL_MAX_CLIENTS && others < CONTROL_MAX_PER_UID;
}

static void on_client(void *data, uint32_t events)
{
    struct control *c = data;
    (void)events;
    for (;;) {
        int fd = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
        int sz = 1 << 20;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
        struct control_peer peer;
        if (control_human_peer_get(fd, &peer) < 0 || !slot_free(c, peer.uid)) {
            close(fd); /* busy: the client sees EOF and may ask again */
            continue;
        }
        struct control_client *k = calloc(1, sizeof(*k));
        if (k)
            k->peer = peer;
        if (!k || loop_watch_add(c->loop, &k->w, fd, EPOLLIN, on_client_data, k) < 0) {
            free(k);
            close(fd);
            continue;
        }
        k->c = c;
        k->fd = fd;
        c->clients++;
        k->next = c->list;
        if (c->list)
            c->list->pprev = &k->next;
        k->pprev = &c->list;
        c->list = k;
        /* A client that says nothing gets the live state after a moment (old `corral ps`). */
        if (loop_timer_add(c->loop, &k->timer, 10.0, on_client_timeout, k) < 0)
            client_finish(k, true);
    }
}

int control_new(struct loop *loop, const char *path, cJSON *(*state)(void *data),
                control_request_fn request, void *data, bool open_to_all, struct control **out,
                struct cerr *err)
{
    struct sockaddr_un a;
    int r = fill_addr(&a, path, err);
    if (r < 0)
        return r;
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return cerr_set(err, EEXIST,
                            "control socket %s: something that is not a socket is there; remove it or "
                            "choose another path",
                            path);
        /* A live run answers; only a dead one's socket is replaced. */
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        bool live = probe >= 0 && connect(probe, (struct sockaddr *)&a, sizeof(a)) == 0;
        if (probe >= 0)
            close(probe);
        if (live)
            return cerr_set(err, EBUSY,
                            "another run is using the control socket %s (same trail?); give this run "
                            "its own --trail",
                            path);
        unlink(path);
    }
    struct control *c = calloc(1, sizeof(*c));
    if (!c || !(c->path = strdup(path))) {
        free(c);
        return cerr_set(err, ENOMEM, "out of memory");
    }
    c->loop = loop;
    c->state = state;
    c->request = request;
    c->data = data;
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    mode_t old = umask(0177);
    r = c->fd < 0 ? -errno : bind(c->fd, (struct sockaddr *)&a, sizeof(a)) < 0 ? -errno : 0;
    umask(old);
    /* Other users reach it only when the policy maps them: who they are is then the kernel's
     * word (SO_PEERCRED) on every request, and an unmapped one is refused and recorded. */
    if (r == 0 && open_to_all && chmod(path, 0666) < 0)
        r = -errno;
    if (r == 0 && listen(c->fd, 16) < 0)
        r = -errno;
    if (r == 0)
        r = loop_watch_add(loop, &c->w, c->fd, EPOLLIN, on_client, c);
    if (r < 0) {
        cerr_set(err, -r, "control socket %s: %s", path, strerror(-r));
        if (c->fd >= 0)
            close(c->fd);
        free(c->path);
        free(c);
        return r;
    }
    *out = c;
    return 0;
}

void control_free(struct control *c)
{
    if (!c)
        return;
    loop_watch_del(c->loop, &c->w);
    while (c->list) { /* clients still talking when the run ends: dropped */
        struct control_client *k = c->list;
        loop_watch_del(c->loop, &k->w);
        loop_watch_del(c->loop, &k->timer);
        client_close(k);
    }
    close(c->fd);
    unlink(c->path);
    free(c->path);
    free(c);
}

/* A run's whole answer on FD, read to EOF and bounded at 64 MiB (util_read_to_eof); the
 * socket's receive timeout, set by the caller, bounds the wait. */
static int control_read_answer(int fd, const char *path, char **out, struct cerr *err)
{
    int r = util_read_to_eof(fd, (size_t)64 << 20, out);
    if (r == -E2BIG)
        return cerr_set(err, E2BIG, "the run's answer is larger than 64 MiB");
    if (r == -ENOMEM)
        return cerr_set(err, ENOMEM, "out of memory");
    if (r < 0)
        return cerr_set(err, -r, "reading from %s: %s", path,
                        r == -EAGAIN ? "no answer in time" : strerror(-r));
    return 0;
}

int control_fetch(const char *path, char **out, struct cerr *err)
{
    struct sockaddr_un a;
    int r = fill_addr(&a, path, err);
    if (r < 0)
        return r;
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return cerr_set(err, errno, "socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        int e = errno;
        if (e == ENOENT || e == ECONNREFUSED)
            return cerr_set(err, e,
                            "no run is listening at %s: is `corral run` running with this trail?", path);
        return cerr_set(err, e, "cannot connect to %s: %s", path, strerror(e));
    }
    if (control_human_served_by_run(fd, path, err) < 0)
        return -EPERM;
    shutdown(fd, SHUT_WR); /* no request: the live state */
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return control_read_answer(fd, path, out, err);
}
