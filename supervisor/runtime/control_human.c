/* supervisor/runtime/control_human.c: see control_human.h. */
#include "supervisor/runtime/control_human.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int control_human_peer_get(int fd, struct control_peer *p)
{
    struct ucred uc;
    socklen_t len = sizeof(uc);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0 || len != sizeof(uc))
        return -errno;
    p->pid = uc.pid;
    p->uid = uc.uid;
    p->gid = uc.gid;
    return 0;
}

/* LEN bytes of P, or -errno. MSG_NOSIGNAL: a run that ends while we write resets the socket,
 * and SIGPIPE would kill the CLI (status 141) instead of its saying so. */
static int send_all(int fd, const char *p, size_t len)
{
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int control_human_served_by_run(int fd, const char *path, struct cerr *err)
{
    /* Anyone can bind a socket where a world-writable directory lets them, and answer with a
     * tree of their choosing (or take a person's approval): only root's or our own is believed. */
    struct ucred cred;
    socklen_t cl = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0)
        return cerr_set(err, errno, "%s: cannot tell who serves it: %s", path, strerror(errno));
    if (cred.uid != 0 && cred.uid != geteuid())
        return cerr_set(err, EPERM,
                        "%s is served by uid %u (pid %d), not by root: not a corral run's; not believed",
                        path, (unsigned)cred.uid, (int)cred.pid);
    return 0;
}

int control_human_request(const char *path, const char *line, char **out, struct cerr *err)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(a.sun_path))
        return cerr_set(err, ENAMETOOLONG, "control socket path %s is too long", path);
    memcpy(a.sun_path, path, strlen(path) + 1);
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return cerr_set(err, errno, "socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        int e = errno;
        if (e == ENOENT || e == ECONNREFUSED)
            return cerr_set(err, e,
                            "no run is listening at %s: is `corral run` running with this trail?", path);
        if (e == EACCES)
            return cerr_set(err, e,
                            "cannot reach %s: permission denied (the run's policy maps no uid of yours, "
                            "or the directory is closed to you)",
                            path);
        return cerr_set(err, e, "cannot connect to %s: %s", path, strerror(e));
    }
    /* A person's decision or words go only to a run of root's (or their own user's). */
    if (control_human_served_by_run(fd, path, err) < 0)
        return -EPERM;
    struct timeval tv = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    size_t n = strlen(line);
    int w = send_all(fd, line, n);
    if (w == 0)
        w = send_all(fd, "\n", 1);
    if (w < 0)
        return cerr_set(err, -w, "cannot send to %s: %s", path, strerror(-w));
    shutdown(fd, SHUT_WR);
    int r = util_read_to_eof(fd, (size_t)64 << 20, out);
    if (r == -E2BIG)
        return cerr_set(err, E2BIG, "the run's answer is larger than 64 MiB");
    if (r < 0)
        return cerr_set(err, -r, "reading from %s: %s", path,
                        r == -EAGAIN ? "no answer within 30 s" : strerror(-r));
    return 0;
}
