/* sandbox/net.c: network set-up inside the sandbox's own network namespace, through libnl:
 * `--net loopback` brings `lo` up and nothing else. */
#include "sandbox/internal.h"

#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <string.h>

int net_loopback_up(struct cerr *err)
{
    struct nl_sock *sk = nl_socket_alloc();
    if (!sk)
        return cerr_set(err, ENOMEM, "net: cannot allocate a netlink socket");
    struct rtnl_link *link = NULL, *change = NULL;
    int r = nl_connect(sk, NETLINK_ROUTE);
    if (r < 0) {
        r = cerr_set(err, EIO, "net: cannot connect to rtnetlink: %s", nl_geterror(r));
        goto out;
    }
    if ((r = rtnl_link_get_kernel(sk, 0, "lo", &link)) < 0) {
        r = cerr_set(err, ENODEV, "net: no loopback device in the new namespace: %s", nl_geterror(r));
        goto out;
    }
    change = rtnl_link_alloc();
    if (!change) {
        r = cerr_set(err, ENOMEM, "net: out of memory");
        goto out;
    }
    rtnl_link_set_flags(change, IFF_UP);
    if ((r = rtnl_link_change(sk, link, change, 0)) < 0)
        r = cerr_set(err, EIO, "net: cannot bring lo up: %s", nl_geterror(r));
out:
    rtnl_link_put(change);
    rtnl_link_put(link);
    nl_socket_free(sk);
    return r < 0 ? r : 0;
}
