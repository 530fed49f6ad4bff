/* tests/fuzz/fuzz_policy.c: arbitrary bytes to the policy loader (comment stripping, cJSON, the
 * position scanner, every check): it must never crash, leak or read out of bounds, and it must
 * either load a policy or say at least one problem. */
#include "policy/policy.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct policy *p = NULL;
    struct policy_diags d = {0};
    int r = policy_load_buffer("fuzz.json", (const char *)data, size, &p, &d);
    if (r == 0) {
        for (size_t i = 0; i < policy_role_count(p); i++) {
            struct policy_role_view v;
            struct cerr err;
            if (policy_role_resolve(p, policy_role_name(p, i), &v, &err) != 0)
                abort();
            FILE *f = fopen("/dev/null", "w");
            if (f) {
                policy_role_print(p, policy_role_name(p, i), f, &err);
                fclose(f);
            }
        }
        policy_free(p);
    } else if (d.n == 0) {
        abort(); /* a refusal always says why */
    }
    policy_diags_free(&d);
    return 0;
}
