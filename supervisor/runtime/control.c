/* supervisor/runtime/control.c: see control.h. The answer is written without blocking: a client that
 * does not read gets what fits in the socket buffer (sized for a large tree) and then EOF. */
#include "supervisor/runtime/control.h"

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
    void *data;
};

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
        cJSON *doc = c->state(c->data);
        char *text = doc ? cJSON_PrintUnformatted(doc) : NULL;
        cJSON_Delete(doc);
        if (text) {
            size_t len = strlen(text), off = 0;
            while (off < len) {
                ssize_t n = send(fd, text + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n <= 0)
                    break;
                off += (size_t)n;
            }
            send(fd, "\n", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        free(text);
        close(fd);
    }
}

int control_new(struct loop *loop, const char *path, cJSON *(*state)(void *data), void *data,
                struct control **out, struct cerr *err)
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
    c->data = data;
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    mode_t old = umask(0177);
    r = c->fd < 0 ? -errno : bind(c->fd, (struct sockaddr *)&a, sizeof(a)) < 0 ? -errno : 0;
    umask(old);
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
    close(c->fd);
    unlink(c->path);
    free(c->path);
    free(c);
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
    /* Only a run of root's (or our own user's) is believed: anyone can bind a socket where a
     * world-writable directory lets them, and answer with a tree of their choosing. */
    struct ucred cred;
    socklen_t cl = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0)
        return cerr_set(err, errno, "%s: cannot tell who serves it: %s", path, strerror(errno));
    if (cred.uid != 0 && cred.uid != geteuid())
        return cerr_set(err, EPERM,
                        "%s is served by uid %u (pid %d), not by root: not a corral run's; not believed",
                        path, (unsigned)cred.uid, (int)cred.pid);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    size_t len = 0, cap = 65536;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf)
            return cerr_set(err, ENOMEM, "out of memory");
        if (len + 1 == cap) {
            if (cap >= ((size_t)64 << 20)) {
                free(buf);
                return cerr_set(err, E2BIG, "the run's answer is larger than 64 MiB");
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                return cerr_set(err, ENOMEM, "out of memory");
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            return cerr_set(err, e, "reading from %s: %s", path, strerror(e));
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    *out = buf;
    return 0;
}
