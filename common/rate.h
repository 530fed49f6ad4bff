/* common/rate.h: a token bucket, for the per-workspace rate limits on what an agent may ask of
 * the supervisor (signals, envelopes, checkpoints, tool calls): a flood is refused at the door,
 * before it costs a trail entry or a notification. */
#ifndef CORRAL_RATE_H
#define CORRAL_RATE_H

#include <stdbool.h>
#include <stdint.h>

struct rate_bucket {
    double tokens;
    uint64_t last_ms;
    bool primed;
};

/* Takes one token from B, refilled at PER_SECOND tokens a second up to BURST, at NOW_MS
 * (monotonic). PER_SECOND 0: no limit (always true). A full bucket to begin with. */
bool rate_take(struct rate_bucket *b, uint32_t per_second, uint32_t burst, uint64_t now_ms);

#endif
