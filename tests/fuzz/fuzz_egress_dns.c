/* tests/fuzz/fuzz_egress_dns.c: hostile datagrams into the DNS stub's parser, and the answer
 * built for each query it accepts (bounded by EGRESS_DNS_MAX). */
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
    struct egress_dns_query q;
    int r = egress_dns_parse(buf, size, &q);
    if (r == 0) {
        uint8_t ans[EGRESS_DNS_MAX];
        static const uint8_t a[4] = {127, 128, 0, 1};
        size_t n = egress_dns_answer(buf, &q, a, 0, ans);
        if (n > EGRESS_DNS_MAX || 12 + q.question_len > size || !q.name[0])
            abort();
    }
    free(buf);
    return 0;
}
