/* tests/fuzz/fuzz_zygote_request.c: arbitrary bytes as the body of a zygote request (its fds
 * are the first input byte's count of fake ones): decode must refuse or return a request whose
 * every string lies inside the buffer and ends with its NUL, a listener spec only with network
 * "proxy" and within its bounds, and never crash or leak. */
#include "sandbox/zygote.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const char *s, const uint8_t *b, size_t n)
{
    if (s && ((const uint8_t *)s < b || (const uint8_t *)s + strlen(s) >= b + n))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int fds[8] = {10, 11, 12, 13, 14, 15, 16, 17};
    size_t nfds = data[0] % 9;
    struct zygote_decoded d;
    struct cerr e;
    if (zygote_decode(data + 1, size - 1, fds, nfds, &d, &e) == 0) {
        inside(d.program, data + 1, size - 1);
        for (size_t i = 0; d.argv[i]; i++)
            inside(d.argv[i], data + 1, size - 1);
        for (size_t i = 0; d.p.envp && d.p.envp[i]; i++)
            inside(d.p.envp[i], data + 1, size - 1);
        for (size_t i = 0; i < d.p.n_binds; i++)
            if (strncmp(d.p.binds[i].host, "/proc/self/fd/", 14))
                inside(d.p.binds[i].host, data + 1, size - 1);
        /* A proxy request's listener spec: its own, within its array, asking for a listener. */
        if ((d.p.net == SANDBOX_NET_PROXY) != (d.p.egress != NULL))
            abort();
        if (d.p.egress && (d.p.egress != &d.egress || d.egress.n_capture > SANDBOX_EGRESS_MAX_CAPTURE ||
                           !sandbox_egress_count(&d.egress)))
            abort();
        zygote_decoded_free(&d);
    } else if (!e.msg[0])
        abort();
    return 0;
}
