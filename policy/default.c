/* policy/default.c: the policy `corral exec` applies when no --policy is given: safe by default
 * (no network, default budgets, minimal read-only root), one role "default" that may run
 * commands so that `corral exec -- sh -c '...'` works. */
#include "policy/policy.h"

#include <string.h>

static const char default_policy[] =
    "// The embedded default policy of corral exec (corral policy show --default --role default).\n"
    "{\n"
    "  \"version\": 1,\n"
    "  \"description\": \"corral exec without --policy\",\n"
    "  \"roles\": {\n"
    "    \"default\": {\n"
    "      \"extends\": \"worker\",\n"
    "      \"description\": \"one program, no network, default budgets, may run commands\",\n"
    "      \"authority\": { \"write\": true, \"commands\": true, \"network\": false },\n"
    "      \"sandbox\": { \"network\": \"none\", \"landlock\": true, \"tmp_size\": \"64M\" },\n"
    "      \"budgets\": { \"memory\": \"256M\", \"pids\": 256, \"cpus\": 1.0 }\n"
    "    }\n"
    "  }\n"
    "}\n";

const char *policy_default_text(void)
{
    return default_policy;
}

int policy_load_default(struct policy **out)
{
    struct policy_diags d = {0};
    int r = policy_load_buffer("(default policy)", default_policy, strlen(default_policy), out, &d);
    policy_diags_free(&d); /* a test proves the embedded text loads without a problem */
    return r;
}
