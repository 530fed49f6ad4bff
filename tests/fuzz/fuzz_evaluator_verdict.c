/* tests/fuzz/fuzz_evaluator_verdict.c: libFuzzer target for the semantic evaluator's verdict
 * (supervisor/wacp/conflict.c): the evaluator is the policy's command, but what it judges is an
 * agent's files, so its output is treated as untrusted. Whatever it prints: a verdict or -EINVAL
 * with a message, only paths of the checkpoint in the conflict list, no crash, no leak. */
#include "supervisor/wacp/conflict.h"
#include "supervisor/wacp/files.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct wacp_manifest ch = {0}, out = {0};
    if (wacp_files_manifest_add(&ch, "a.md", "h", 1) < 0 || wacp_files_manifest_add(&ch, "src/b.c", "h", 1) < 0)
        abort();
    cJSON *reasons = cJSON_CreateArray();
    struct cerr e = {0};
    int r = wacp_conflict_evaluator_verdict((const char *)data, size, &ch, &out, reasons, &e);
    if (r != 0 && (r != -EINVAL && r != -ENOMEM))
        abort();
    if (r != 0 && !e.msg[0])
        abort();
    for (size_t i = 0; i < out.n; i++)
        if (!wacp_files_manifest_get(&ch, out.v[i].path))
            abort();
    if (out.n > WACP_EVAL_MAX_REASONS)
        abort();
    cJSON_Delete(reasons);
    wacp_files_manifest_clear(&out);
    wacp_files_manifest_clear(&ch);
    return 0;
}
