/* supervisor/trail/chain.c: the hash chain (docs/trail.md, "Hashes"): an entry's hash, shared
 * with the readers that check it (verify.c), and the chain of a committed batch, which the
 * applier (apply.c) and recovery (writer.c) compute; the event loop that commits does not hash
 * (docs/trail.md, "The ahead log"). */
#include "supervisor/trail/internal.h"

#include <string.h>

#include <sodium.h>

/* ---- an entry's hash ---------------------------------------------------------------------------- */

static void enc_u64(struct trail_buf *b, uint64_t v)
{
    uint8_t *p = b->p + b->len;
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
    b->len += 8;
}

static void enc_lp(struct trail_buf *b, const void *s, size_t n)
{
    uint8_t *p = b->p + b->len;
    p[0] = (uint8_t)(n >> 24);
    p[1] = (uint8_t)(n >> 16);
    p[2] = (uint8_t)(n >> 8);
    p[3] = (uint8_t)n;
    if (n)
        memcpy(p + 4, s, n);
    b->len += 4 + n;
}

static void enc_hash_opt(struct trail_buf *b, const uint8_t *h)
{
    b->p[b->len++] = h ? 1 : 0;
    if (h) {
        memcpy(b->p + b->len, h, TRAIL_HASH_LEN);
        b->len += TRAIL_HASH_LEN;
    }
}

/* The entry's own fields, C in docs/trail.md, up to the body's length (the body itself goes
 * into the hash from where it lies, uncopied). */
static void enc_content(struct trail_buf *b, const struct trail_fields *f)
{
    enc_lp(b, f->id, f->id_len);
    enc_u64(b, (uint64_t)f->ts_us);
    b->p[b->len++] = f->workspace ? 1 : 0;
    if (f->workspace)
        enc_lp(b, f->workspace, f->ws_len);
    enc_lp(b, f->actor, f->actor_len);
    enc_lp(b, f->type, f->type_len);
    enc_lp(b, NULL, 0);
    uint8_t *p = b->p + b->len - 4;
    p[0] = (uint8_t)(f->body_len >> 24);
    p[1] = (uint8_t)(f->body_len >> 16);
    p[2] = (uint8_t)(f->body_len >> 8);
    p[3] = (uint8_t)f->body_len;
}

static const char tag_entry[] = "crlt.entry.v1"; /* with its NUL: 14 bytes */
/* What an entry's hash input holds besides its strings (and the body, hashed where it lies). */
#define HASH_FIXED (sizeof(tag_entry) + 2 * (1 + TRAIL_HASH_LEN + 8) + 8 + 1 + 5 * 4)

int trail_hash_entry(struct trail_buf *scratch, const struct trail_fields *f,
                     uint8_t hash[TRAIL_HASH_LEN])
{
    /* Lengths are encoded on 4 bytes: every string is far below 4 GiB (SQLite's own limit is
     * 1 GB), and the sum below cannot wrap for the same reason. */
    if (f->id_len > UINT32_MAX || f->ws_len > UINT32_MAX || f->actor_len > UINT32_MAX ||
        f->type_len > UINT32_MAX || f->body_len > UINT32_MAX)
        return -E2BIG;
    size_t need = HASH_FIXED + f->id_len + f->ws_len + f->actor_len + f->type_len;
    scratch->len = 0;
    int r = trail_buf_reserve(scratch, need);
    if (r < 0)
        return r;
    struct trail_buf *b = scratch;
    memcpy(b->p, tag_entry, sizeof(tag_entry));
    b->len = sizeof(tag_entry);
    enc_hash_opt(b, f->prev_hash);
    enc_u64(b, f->seq);
    enc_hash_opt(b, f->local_prev);
    enc_u64(b, f->local_seq);
    enc_content(b, f);
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, TRAIL_HASH_LEN);
    crypto_generichash_update(&st, b->p, b->len);
    if (f->body_len)
        crypto_generichash_update(&st, (const uint8_t *)f->body, f->body_len);
    crypto_generichash_final(&st, hash, TRAIL_HASH_LEN);
    return 0;
}

/* ---- a batch's chain (the applier's, and recovery's) ------------------------------------------ */

int trail_chain_batch(struct trail *t, struct trail_batch *b, const char **why)
{
    struct trail_rec_hdr h;
    *why = "the record's header is not valid";
    if (trail_rec_header(b->rec.p, b->rec.len, &h) < 0 || h.len != b->rec.len)
        return -EINVAL;
    size_t pos = TRAIL_REC_HDR;
    struct trail_rec_item it;
    int r;
    /* First every workspace's head and the hashing's room, the only steps that can fail for
     * want of memory: then the hashes below cannot, and a CRA2 batch is hashed whole or not at
     * all (its retry must find the head where it was). */
    *why = "a record's item is not valid";
    while ((r = trail_rec_next(b->rec.p, h.end, &pos, &it)) > 0) {
        bool created;
        t->a_scratch.len = 0;
        if (it.kind == 'E' &&
            ((it.f.workspace && !trail_wsmap_get(&t->a_ws, it.f.workspace, it.f.ws_len, &created)) ||
             trail_buf_reserve(&t->a_scratch, HASH_FIXED + it.f.id_len + it.f.ws_len + it.f.actor_len +
                                                  it.f.type_len) < 0))
            return -ENOMEM;
    }
    if (r < 0)
        return r;
    pos = TRAIL_REC_HDR;
    while ((r = trail_rec_next(b->rec.p, h.end, &pos, &it)) > 0) {
        if (it.kind != 'E')
            continue;
        struct trail_fields *f = &it.f;
        struct trail_wshead *wh = NULL;
        bool created;
        if (f->workspace)
            wh = trail_wsmap_get(&t->a_ws, f->workspace, f->ws_len, &created);
        /* The slots this entry's flags gave it are exactly the links the chain has: the loop
         * set them from the same sequence numbers (trail_append), recovery checked them. */
        *why = "it does not link to the entry before it";
        if (f->seq != t->h_seq + 1 || !f->prev_hash != (f->seq == 1))
            return -EINVAL;
        *why = "it does not link to its workspace's entry before it";
        if (wh ? (f->local_seq != wh->local_seq + 1 || !f->local_prev != (wh->local_seq == 0))
               : (f->local_seq || f->local_prev))
            return -EINVAL;
        uint8_t gh[TRAIL_HASH_LEN];
        if (h.hashed) { /* CRA1: its links and hash were written; they must be the chain's */
            *why = "it does not link to the entry before it";
            if (f->prev_hash && memcmp(f->prev_hash, t->h_head, TRAIL_HASH_LEN))
                return -EINVAL;
            *why = "it does not link to its workspace's entry before it";
            if (f->local_prev && memcmp(f->local_prev, wh->last_hash, TRAIL_HASH_LEN))
                return -EINVAL;
        } else { /* the slots are in our own buffer: fill them */
            if (f->prev_hash)
                memcpy((uint8_t *)f->prev_hash, t->h_head, TRAIL_HASH_LEN);
            if (f->local_prev)
                memcpy((uint8_t *)f->local_prev, wh->last_hash, TRAIL_HASH_LEN);
        }
        *why = "a field is too long";
        if (trail_hash_entry(&t->a_scratch, f, gh) < 0)
            return -EINVAL; /* cannot be: a record's lengths are 16 and 32 bits */
        if (h.hashed) {
            *why = "its content does not match its hash";
            if (memcmp(gh, it.hash, TRAIL_HASH_LEN))
                return -EINVAL;
        } else {
            memcpy((uint8_t *)it.hash, gh, TRAIL_HASH_LEN);
        }
        t->h_seq = f->seq;
        memcpy(t->h_head, gh, TRAIL_HASH_LEN);
        if (wh) {
            wh->local_seq = f->local_seq;
            memcpy(wh->last_hash, gh, TRAIL_HASH_LEN);
        }
    }
    if (r < 0)
        return r;
    b->chained = true;
    return 0;
}
