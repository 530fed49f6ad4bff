/* tests/fuzz/fuzz_wacp_call.c: libFuzzer target for the WACP model's calls, gates off: the frame
 * and its invariants are tests/fuzz/wacp_frame.h's. */
#include "tests/fuzz/wacp_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char policy_text[] =
    "{\"version\": 1, \"highway\": {\"preset\": \"autonomous\", \"gates\": {\"task_approval\": false}},"
    " \"roles\": {\"coordinator\": {\"budgets\": {\"memory\": \"512M\", \"pids\": 64}}},"
    " \"agents\": {\"lead\": {\"binary\": \"/usr/bin/true\", \"role\": \"coordinator\"},"
    "  \"coder\": {\"binary\": \"/usr/bin/true\", \"role\": \"worker\"},"
    "  \"watcher\": {\"binary\": \"/usr/bin/true\", \"role\": \"observer\"}}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct wacp_frame frame = {"wacp", policy_text, false};
    return wacp_frame_run(&frame, data, size);
}
