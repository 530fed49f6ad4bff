/* sandbox/egress_sockets.c: the proxy listeners made in the sandbox's network namespace by its
 * init and handed to the supervisor (see egress_sockets.h). */
#include "sandbox/egress_sockets.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

size_t sandbox_egress_count(const struct sandbox_egress *spec)
{
    size_t n = (spec->http_port ? 1 : 0) + (spec->socks_port ? 1 : 0) + (spec->dns ? 1 : 0);
    for (size_t i = 0; i < spec->n_capture && i < SANDBOX_EGRESS_MAX_CAPTURE; i++)
        if (spec->capture[i] != spec->http_port && spec->capture[i] != spec->socks_port)
            n++;
    return n;
}

static int open_one(int type, uint32_t addr, uint16_t port, struct cerr *err)
{
    int fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return cerr_set(err, errno, "egress: socket: %s", strerror(errno));
    int one = 1;
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(addr)};
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        (type == SOCK_STREAM && listen(fd, SOMAXCONN) < 0)) {
        int e = errno;
        close(fd);
        return cerr_set(err, e, "egress: cannot listen on %s port %u in the sandbox: %s",
                        type == SOCK_STREAM ? "TCP" : "UDP", (unsigned)port, strerror(e));
    }
    return fd;
}

int sandbox_egress_open(const struct sandbox_egress *spec, int *fds, struct cerr *err)
{
    size_t n = 0;
    int fd;
    if (spec->http_port) {
        if ((fd = open_one(SOCK_STREAM, INADDR_LOOPBACK, spec->http_port, err)) < 0)
            goto fail;
        fds[n++] = fd;
    }
    if (spec->socks_port) {
        if ((fd = open_one(SOCK_STREAM, INADDR_LOOPBACK, spec->socks_port, err)) < 0)
            goto fail;
        fds[n++] = fd;
    }
    if (spec->dns) {
        if ((fd = open_one(SOCK_DGRAM, INADDR_LOOPBACK, 53, err)) < 0)
            goto fail;
        fds[n++] = fd;
    }
    for (size_t i = 0; i < spec->n_capture && i < SANDBOX_EGRESS_MAX_CAPTURE; i++) {
        uint16_t p = spec->capture[i];
        if (p == spec->http_port || p == spec->socks_port)
            continue;
        if ((fd = open_one(SOCK_STREAM, INADDR_ANY, p, err)) < 0)
            goto fail;
        fds[n++] = fd;
    }
    return 0;
fail:
    while (n)
        close(fds[--n]);
    return fd;
}

int sandbox_egress_hand_up(const struct sandbox_egress *spec, int sock, struct cerr *err)
{
    int fds[SANDBOX_EGRESS_MAX_FDS];
    size_t n = sandbox_egress_count(spec);
    if (n == 0)
        return 0;
    int r = sandbox_egress_open(spec, fds, err);
    if (r < 0)
        return r;
    r = sandbox_egress_send(sock, fds, n);
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
    if (r < 0)
        return cerr_set(err, -r, "egress: cannot pass the listeners to the supervisor: %s",
                        strerror(-r));
    return 0;
}

int sandbox_egress_send(int sock, const int *fds, size_t n)
{
    if (n == 0 || n > SANDBOX_EGRESS_MAX_FDS)
        return -EINVAL;
    char byte = 'E';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * SANDBOX_EGRESS_MAX_FDS)];
    } u;
    memset(&u, 0, sizeof(u));
    struct msghdr m = {.msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = u.buf,
                       .msg_controllen = CMSG_SPACE(sizeof(int) * n)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * n);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
    return sendmsg(sock, &m, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

int sandbox_egress_recv(int sock, int *fds, size_t n)
{
    if (n == 0 || n > SANDBOX_EGRESS_MAX_FDS)
        return -EINVAL;
    char byte;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * SANDBOX_EGRESS_MAX_FDS)];
    } u;
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    if (recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != 1)
        return -EPROTO;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
        return -EPROTO;
    size_t got = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    int tmp[SANDBOX_EGRESS_MAX_FDS];
    memcpy(tmp, CMSG_DATA(c), got * sizeof(int));
    bool ok = got == n && !(m.msg_flags & MSG_CTRUNC);
    for (size_t i = 0; i < got && ok; i++) {
        struct stat st;
        ok = fstat(tmp[i], &st) == 0 && S_ISSOCK(st.st_mode);
    }
    if (!ok) {
        for (size_t i = 0; i < got; i++)
            close(tmp[i]);
        return -EPROTO;
    }
    memcpy(fds, tmp, n * sizeof(int));
    return 0;
}
