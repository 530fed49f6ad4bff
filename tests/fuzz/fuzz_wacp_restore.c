/* tests/fuzz/fuzz_wacp_restore.c: libFuzzer target for `corral run --resume`'s model loader
 * (supervisor/wacp/restore.c). One entry a line, "TYPE WORKSPACE {body}" (WORKSPACE "-": none),
 * fed to wacp_restore_entry in order; then wacp_resume (agents "start" at once) and a tick.
 * The trail a resume reads is verified first, but its bodies hold what agents sent: any shape
 * of entry, any order, ids that clash or dangle, must give no crash, no leak, no unbounded
 * memory. The seeds are entries of a real run (tests/fuzz/seeds/wacp_restore/). */
#include "tests/fuzz/wacp_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char policy_text[] =
    "{\"version\": 1, \"highway\": {\"preset\": \"autonomous\", \"gates\": {\"task_approval\": false}},"
    " \"agents\": {\"coord\": {\"binary\": \"/usr/bin/true\", \"role\": \"coordinator\"},"
    "  \"w1\": {\"binary\": \"/usr/bin/true\", \"role\": \"worker\"},"
    "  \"w2\": {\"binary\": \"/usr/bin/true\", \"role\": \"worker\"}}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char tmp[64];
    if (!tmp[0]) {
        snprintf(tmp, sizeof(tmp), "/tmp/fuzz-restore.XXXXXX");
        if (!mkdtemp(tmp))
            __builtin_trap();
        char p[128];
        snprintf(p, sizeof(p), "%s/root", tmp);
        mkdir(p, 0700);
    }
    char root[128], run[128];
    snprintf(root, sizeof(root), "%s/root", tmp);
    snprintf(run, sizeof(run), "%s/run", tmp);
    struct fz f = {0};
    struct wacp_hooks h = {.data = &f, .record = rec, .start = start, .stop = stop, .notify = notify};
    struct wacp_opts o = {.policy = policy_once(policy_text),
                          .run_dir = run,
                          .root_dir = root,
                          .root_owner = "fuzz",
                          .max_workspaces = 8,
                          .max_envelopes = 8,
                          .max_payload = 4096};
    struct wacp *w = NULL;
    struct cerr err = {0};
    if (wacp_new(&o, &h, &w, &err) < 0)
        __builtin_trap();
    char *text = malloc(size + 1);
    if (!text)
        __builtin_trap();
    memcpy(text, data, size);
    text[size] = '\0';
    int64_t ts = 1000000;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *sp1 = strchr(line, ' ');
        char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
        if (!sp2)
            continue;
        *sp1 = *sp2 = '\0';
        cJSON *b = cJSON_Parse(sp2 + 1);
        if (wacp_restore_entry(w, line, strcmp(sp1 + 1, "-") ? sp1 + 1 : NULL, ts += 1000, b) < 0 &&
            size < 4096)
            __builtin_trap(); /* out of memory on a small input: a leak or a runaway */
        cJSON_Delete(b);
    }
    free(text);
    struct wacp_resume_stats st;
    wacp_resume(w, ts + 1000, &st, &err);
    wacp_tick(w, wacp_next_deadline(w));
    cJSON_Delete(wacp_tree_json(w));
    wacp_free(w);
    /* The run directory is made by each model: its files go with it. */
    nftw(run, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
