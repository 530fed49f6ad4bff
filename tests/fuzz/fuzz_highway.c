/* tests/fuzz/fuzz_highway.c: libFuzzer target for the human highway in the WACP model, every gate
 * on, with a person's requests ("H OP {params}" / "N OP {params}"): the frame and its invariants
 * are tests/fuzz/wacp_frame.h's. */
#include "tests/fuzz/wacp_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char policy_text[] =
    "{\"version\": 1, \"highway\": {\"preset\": \"gated\", \"gate_defaults\": {\"timeout\": \"2s\", "
    "\"fallback\": \"escalate_to_coordinator\"},"
    " \"escalation\": {\"timeout\": \"1s\"}},"
    " \"roles\": {\"coordinator\": {\"budgets\": {\"memory\": \"512M\", \"pids\": 64}}},"
    " \"agents\": {\"lead\": {\"binary\": \"/usr/bin/true\", \"role\": \"coordinator\"},"
    "  \"coder\": {\"binary\": \"/usr/bin/true\", \"role\": \"worker\"},"
    "  \"watcher\": {\"binary\": \"/usr/bin/true\", \"role\": \"observer\"}}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct wacp_frame frame = {"highway", policy_text, true};
    return wacp_frame_run(&frame, data, size);
}
