/* common/rate.c: see rate.h. */
#include "common/rate.h"

bool rate_take(struct rate_bucket *b, uint32_t per_second, uint32_t burst, uint64_t now_ms)
{
    if (!per_second)
        return true;
    if (burst < 1)
        burst = 1;
    if (!b->primed) {
        b->primed = true;
        b->tokens = burst;
        b->last_ms = now_ms;
    }
    if (now_ms > b->last_ms) {
        b->tokens += (double)(now_ms - b->last_ms) * per_second / 1000.0;
        if (b->tokens > burst)
            b->tokens = burst;
        b->last_ms = now_ms;
    }
    if (b->tokens < 1.0)
        return false;
    b->tokens -= 1.0;
    return true;
}
