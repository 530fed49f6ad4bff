/* sandbox/net.c: network set-up inside the sandbox's own network namespace: `--net loopback`
 * brings `lo` up and nothing else. libnl builds the request in the parent; the child only sends
 * those bytes and reads the kernel's answer into a stack buffer. The child is cloned from a
 * multithreaded supervisor, where a malloc could wait forever on a lock another thread held at
 * the clone: so nothing in the child allocates. */
#include "sandbox/internal.h"

#include <linux/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The loopback device is index 1 in every network namespace (the kernel's LOOPBACK_IFINDEX). */
#define LO_IFINDEX 1

int net_loopback_prepare(struct net_request *req, struct cerr *err)
{
    memset(req, 0, sizeof(*req));
    struct nl_msg *msg = nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK);
    struct ifinfomsg ifi = {
        .ifi_family = AF_UNSPEC, .ifi_index = LO_IFINDEX, .ifi_flags = IFF_UP, .ifi_change = IFF_UP};
    if (!msg || nlmsg_append(msg, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0) {
        nlmsg_free(msg);
        return cerr_set(err, ENOMEM, "net: cannot build the request to bring lo up");
    }
    const struct nlmsghdr *h = nlmsg_hdr(msg);
    if (h->nlmsg_len > sizeof(req->buf)) {
        nlmsg_free(msg);
        return cerr_set(err, E2BIG, "net: the request to bring lo up is too large");
    }
    memcpy(req->buf, h, h->nlmsg_len);
    req->len = h->nlmsg_len;
    nlmsg_free(msg);
    return 0;
}

int net_loopback_up(const struct net_request *req, struct cerr *err)
{
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0)
        return cerr_set(err, errno, "net: cannot open rtnetlink: %s", strerror(errno));
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    int r = 0;
    if (sendto(fd, req->buf, req->len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) !=
        (ssize_t)req->len) {
        r = cerr_set(err, errno ? errno : EIO, "net: cannot ask to bring lo up: %s", strerror(errno));
        goto out;
    }
    union {
        struct nlmsghdr h;
        char buf[1024];
    } ans;
    ssize_t n;
    do
        n = recv(fd, ans.buf, sizeof(ans.buf), 0);
    while (n < 0 && errno == EINTR);
    if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) || ans.h.nlmsg_type != NLMSG_ERROR ||
        ans.h.nlmsg_len > (size_t)n) {
        r = cerr_set(err, EIO, "net: no answer from rtnetlink to bringing lo up");
        goto out;
    }
    const struct nlmsgerr *e = NLMSG_DATA(&ans.h);
    if (e->error != 0)
        r = cerr_set(err, -e->error, "net: cannot bring lo up: %s", strerror(-e->error));
out:
    close(fd);
    return r;
}
