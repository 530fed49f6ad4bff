/* tests/fuzz/fuzz_trail_canonical.c: bodies reach the trail from agents (tool arguments), so the
 * canonical JSON encoder must take any parsed JSON without crashing, and be a fixed point: the
 * canonical text of a value parses back to a value whose canonical text is the same bytes. */
#include "supervisor/trail/internal.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    cJSON *j = cJSON_Parse(s);
    free(s);
    if (!j)
        return 0;
    struct trail_buf a = {0}, b = {0};
    if (trail_canonical_json(j, &a) == 0) {
        if (trail_buf_put(&a, "", 1) < 0)
            abort();
        cJSON *k = cJSON_Parse((const char *)a.p);
        if (!k)
            abort(); /* canonical output must be JSON */
        if (trail_canonical_json(k, &b) != 0 || trail_buf_put(&b, "", 1) < 0 || a.len != b.len ||
            memcmp(a.p, b.p, a.len))
            abort(); /* and a fixed point */
        cJSON_Delete(k);
    }
    trail_buf_free(&a);
    trail_buf_free(&b);
    cJSON_Delete(j);
    /* the time parser sees what people type on the command line */
    char t[64];
    size_t n = size < sizeof(t) - 1 ? size : sizeof(t) - 1;
    memcpy(t, data, n);
    t[n] = '\0';
    int64_t us;
    (void)trail_parse_time(t, &us);
    return 0;
}
