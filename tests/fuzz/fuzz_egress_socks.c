/* tests/fuzz/fuzz_egress_socks.c: hostile SOCKS5 greetings and requests, as the proxy reads them
 * (greeting first, the request from what follows). */
#include "supervisor/egress/internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    bool no_auth;
    ssize_t g = egress_socks_greeting(buf, size, &no_auth);
    if (g > (ssize_t)size)
        abort();
    size_t off = g > 0 ? (size_t)g : 0;
    struct egress_socks_req q;
    ssize_t r = egress_socks_request(buf + off, size - off, &q);
    if (r > 0 &&
        ((size_t)r > size - off || q.port == 0 || !q.host[0] || strlen(q.host) > EGRESS_NAME_MAX))
        abort();
    free(buf);
    return 0;
}
