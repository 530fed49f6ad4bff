/* tests/fuzz/fuzz_trail_ahead.c: a record of the trail's ahead log is read back after a crash,
 * when it may be cut short or overwritten anywhere, and its bytes hold agent content (bodies,
 * blobs). The header and item parser must take any bytes without reading outside them, and an
 * item it accepts must lie wholly inside the record. A record it encodes must read back the
 * same, and match its checksum (with the seed it was written with, no other) until a byte of it
 * changes. */
#include "supervisor/trail/internal.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trail_rec_hdr h;
    if (trail_rec_header(data, size, &h) == 0 && h.len <= size) {
        if (h.end > h.len || h.end < TRAIL_REC_HDR)
            abort();
        (void)trail_rec_check(data, &h, size);
    }
    size_t pos = size < TRAIL_REC_HDR ? size : TRAIL_REC_HDR;
    struct trail_rec_item it;
    int r;
    unsigned items = 0;
    uint64_t sum = 0;
    while ((r = trail_rec_next(data, size, &pos, &it)) > 0) {
        if (pos > size)
            abort();
        if (it.kind == 'B') {
            const uint8_t *d = it.data;
            if (d < data || d + it.size > data + size || it.blob_hash < data ||
                it.blob_hash + TRAIL_HASH_LEN > data + size)
                abort();
            for (size_t i = 0; i < it.size; i += 64)
                sum += d[i];
        } else {
            const struct trail_fields *f = &it.f;
            const uint8_t *end = data + size;
            if ((const uint8_t *)f->body + f->body_len > end || (const uint8_t *)f->id < data ||
                it.hash + TRAIL_HASH_LEN > end ||
                (f->local_prev && f->local_prev + TRAIL_HASH_LEN > end) ||
                (f->prev_hash && f->prev_hash + TRAIL_HASH_LEN > end))
                abort();
            sum += f->id_len + f->ws_len + f->actor_len + f->type_len + f->body_len;
            if (f->body_len)
                sum += (uint8_t)f->body[f->body_len - 1];
        }
        items++;
    }
    (void)sum;
    /* Round trip: the bytes as one blob and one entry, encoded, read back the same. */
    struct trail_buf b = {0};
    uint8_t hash[TRAIL_HASH_LEN] = {1};
    size_t n = size < 300 ? size : 300;
    struct trail_fields f = {.seq = 7, .id = "id-7", .id_len = 4, .ts_us = 9, .workspace = "w",
                             .ws_len = 1, .actor = "a", .actor_len = 1, .type = "t", .type_len = 1,
                             .body = (const char *)data, .body_len = n, .local_seq = 1,
                             .prev_hash = hash};
    if (trail_rec_begin(&b) < 0 || trail_rec_put_blob(&b, hash, data, size) < 0 ||
        trail_rec_put_entry(&b, &f) < 0 || trail_rec_end(&b, 2, 7, 7, size) < 0)
        abort();
    if (trail_rec_header(b.p, b.len, &h) < 0 || h.len != b.len || h.items != 2 || h.hashed ||
        trail_rec_check(b.p, &h, size) != 0)
        abort();
    /* Seeded with the checksum of the record before it: another seed does not match. */
    if (trail_rec_check(b.p, &h, size + 1) == 0)
        abort();
    pos = TRAIL_REC_HDR;
    if (trail_rec_next(b.p, h.end, &pos, &it) != 1 || it.kind != 'B' || it.size != size ||
        (size && memcmp(it.data, data, size)))
        abort();
    if (trail_rec_next(b.p, h.end, &pos, &it) != 1 || it.kind != 'E' || it.f.seq != 7 ||
        it.f.body_len != n || (n && memcmp(it.f.body, data, n)) || !it.f.prev_hash ||
        it.f.local_prev || pos != h.end || trail_rec_next(b.p, h.end, &pos, &it) != 0)
        abort();
    /* A byte changed (the entry's last before its two hash slots) no longer matches the
     * checksum. */
    b.p[h.end - 1 - 2 * TRAIL_HASH_LEN] ^= 0x20;
    if (trail_rec_check(b.p, &h, size) == 0)
        abort();
    trail_buf_free(&b);
    (void)items;
    return 0;
}
