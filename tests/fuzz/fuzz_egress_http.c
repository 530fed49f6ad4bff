/* tests/fuzz/fuzz_egress_http.c: hostile request heads into the egress HTTP proxy's parser. A
 * head is either complete (and then its host is a checked name or literal with a port, its
 * rewritten line within bounds), incomplete, or refused: never a read past len. */
#include "supervisor/egress/internal.h"

#include <stdlib.h>
#include <string.h>

static struct egress_http_req req;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly size bytes: ASan sees any read past the end. */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    ssize_t r = egress_http_parse(buf, size, &req);
    if (r > 0) {
        if ((size_t)r > size || req.port == 0 || !req.host[0])
            abort();
        if (!req.connect &&
            (req.line_len == 0 || req.line_len >= sizeof(req.line) || req.rest_off > (size_t)r))
            abort();
        struct egress_rule rule;
        (void)egress_rule_parse(req.host, &rule, NULL, 0);
    }
    free(buf);
    return 0;
}
