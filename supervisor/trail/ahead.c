/* supervisor/trail/ahead.c: the trail's ahead log, two segment files beside the SQLite file
 * (FILE-ahead and FILE-ahead2). A commit writes its batch into the current segment as one record
 * (one pwrite, and one fdatasync in `full`) and is then acknowledged; the applier thread
 * (apply.c) puts the batch into SQLite afterwards. So a call pays one append on its path instead
 * of SQLite's insert, b-tree and WAL work, about 150 us of CPU per tool call (docs/trail.md, "The
 * ahead log"). After a crash the next writer applies what SQLite lacks.
 *
 * A record is a header, items and a checksum, all integers little-endian:
 *   header: u32 magic "CRA2" | u32 items | u64 length (header and checksum included) | u64 first
 *           | u64 last (the sequence numbers of its first and last entry: every record holds one
 *           or more)
 *   blob:   'B' | hash[32] | u64 size | data
 *   entry:  'E' | u64 seq | i64 ts | u64 local_seq | u8 flags (1 workspace, 2 local_prev,
 *           4 prev_hash) | u16 id | u16 workspace | u16 actor | u16 type | u32 body (lengths)
 *           | id | workspace | actor | type | body | [local_prev 32] | [prev_hash 32] | hash 32
 *   checksum: u64 XXH3-64 of every byte before it, seeded with the checksum of the record before
 *           it in its segment (0 for the record at offset 0)
 * An entry's links and hash are zeros in the file: the event loop that writes the record does
 * not hash (BLAKE2b over a 4 KiB read's answer was a fifth of the loop's time per call); the
 * applier hashes the chain from the record in memory (apply.c, trail_chain_batch), and recovery
 * from the record read back, in the same order. So the checksum, not the chain, is what tells a
 * torn or damaged record, and the sequence numbers and the trail's id in each entry's id, checked
 * by recovery (writer.c), what tells a stale one or another trail's. The seed ties a record to the
 * one the writer put before it: bytes left in a segment from an earlier lap (a blob's: content an
 * agent chose) are never taken for a record that continues the one before them, as a CRA1 record
 * had to carry the hash of the entry before it, which nobody knew when those bytes were written.
 * A writer's recovery empties both segments once what it applied is flushed, so records another
 * writer left and that recovery did not apply (an abandoned history: their sequence numbers are
 * then used again) are never applied later (trail_ahead_clear).
 * "CRA1" records (the format before, written with their hashes and no checksum) are still read
 * by recovery, which then checks the hashes it computes against theirs.
 * Records follow each other in a segment from offset 0. Once the current segment is past
 * TRAIL_AHEAD_LAP the writer switches to the other one and starts it over at 0, which it may
 * only when every record there is in SQLite (and flushed there, in `full`): it was written a
 * whole lap ago. Overwriting in place keeps a `full` commit's fdatasync to its data (no size
 * change to journal). Recovery reads each segment from 0 while the records continue each other
 * and applies, across both, the one that continues the trail's head, until none does. */
#include "supervisor/trail/internal.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#define REC_MAGIC 0x32415243u  /* "CRA2" */
#define REC_MAGIC1 0x31415243u /* "CRA1" */
#define REC_SUM TRAIL_REC_SUM  /* the checksum at a CRA2 record's end */

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

int trail_rec_begin(struct trail_buf *b)
{
    b->len = 0;
    int r = trail_buf_reserve(b, TRAIL_REC_HDR);
    if (r == 0) {
        memset(b->p, 0, TRAIL_REC_HDR);
        b->len = TRAIL_REC_HDR;
    }
    return r;
}

int trail_rec_put_blob(struct trail_buf *b, const uint8_t hash[TRAIL_HASH_LEN], const void *data,
                       size_t len)
{
    int r = trail_buf_reserve(b, 1 + TRAIL_HASH_LEN + 8 + len);
    if (r < 0)
        return r;
    uint8_t *p = b->p + b->len;
    *p++ = 'B';
    memcpy(p, hash, TRAIL_HASH_LEN);
    p += TRAIL_HASH_LEN;
    put_le(p, len, 8);
    p += 8;
    if (len)
        memcpy(p, data, len);
    b->len += 1 + TRAIL_HASH_LEN + 8 + len;
    return 0;
}

int trail_rec_put_entry(struct trail_buf *b, const struct trail_fields *f)
{
    size_t n = 1 + 8 + 8 + 8 + 1 + 2 * 4 + 4 + f->id_len + f->ws_len + f->actor_len + f->type_len +
               f->body_len + (f->local_prev ? TRAIL_HASH_LEN : 0) + (f->prev_hash ? TRAIL_HASH_LEN : 0) +
               TRAIL_HASH_LEN;
    int r = trail_buf_reserve(b, n);
    if (r < 0)
        return r;
    uint8_t *p = b->p + b->len;
    *p++ = 'E';
    put_le(p, f->seq, 8);
    put_le(p + 8, (uint64_t)f->ts_us, 8);
    put_le(p + 16, f->local_seq, 8);
    p[24] = (uint8_t)((f->workspace ? 1 : 0) | (f->local_prev ? 2 : 0) | (f->prev_hash ? 4 : 0));
    put_le(p + 25, f->id_len, 2);
    put_le(p + 27, f->ws_len, 2);
    put_le(p + 29, f->actor_len, 2);
    put_le(p + 31, f->type_len, 2);
    put_le(p + 33, f->body_len, 4);
    p += 37;
    memcpy(p, f->id, f->id_len);
    p += f->id_len;
    if (f->ws_len)
        memcpy(p, f->workspace, f->ws_len);
    p += f->ws_len;
    memcpy(p, f->actor, f->actor_len);
    p += f->actor_len;
    memcpy(p, f->type, f->type_len);
    p += f->type_len;
    memcpy(p, f->body, f->body_len);
    p += f->body_len;
    /* the links' and the hash's slots, filled by trail_chain_batch */
    memset(p, 0, (f->local_prev ? TRAIL_HASH_LEN : 0) + (f->prev_hash ? TRAIL_HASH_LEN : 0) + TRAIL_HASH_LEN);
    b->len += n;
    return 0;
}

int trail_rec_end(struct trail_buf *b, uint32_t items, uint64_t first, uint64_t last, uint64_t seed)
{
    int r = trail_buf_reserve(b, REC_SUM);
    if (r < 0)
        return r;
    put_le(b->p, REC_MAGIC, 4);
    put_le(b->p + 4, items, 4);
    put_le(b->p + 8, b->len + REC_SUM, 8);
    put_le(b->p + 16, first, 8);
    put_le(b->p + 24, last, 8);
    put_le(b->p + b->len, XXH3_64bits_withSeed(b->p, b->len, seed), REC_SUM);
    b->len += REC_SUM;
    return 0;
}

int trail_rec_header(const uint8_t *p, size_t len, struct trail_rec_hdr *h)
{
    uint64_t magic = len < TRAIL_REC_HDR ? 0 : get_le(p, 4);
    if (magic != REC_MAGIC && magic != REC_MAGIC1)
        return -EINVAL;
    h->hashed = magic == REC_MAGIC1;
    h->items = (uint32_t)get_le(p + 4, 4);
    h->len = get_le(p + 8, 8);
    h->first = get_le(p + 16, 8);
    h->last = get_le(p + 24, 8);
    if (h->len < TRAIL_REC_HDR + (h->hashed ? 0 : REC_SUM) || h->len > SIZE_MAX || h->items == 0 ||
        h->first > h->last)
        return -EINVAL;
    h->end = (size_t)h->len - (h->hashed ? 0 : REC_SUM);
    return 0;
}

int trail_rec_check(const uint8_t *p, const struct trail_rec_hdr *h, uint64_t seed)
{
    if (h->hashed)
        return 0;
    return XXH3_64bits_withSeed(p, h->end, seed) == get_le(p + h->end, REC_SUM) ? 0 : -EINVAL;
}

uint64_t trail_rec_sum(const uint8_t *p, size_t len)
{
    return len >= TRAIL_REC_HDR + REC_SUM ? get_le(p + len - REC_SUM, REC_SUM) : 0;
}

/* Bounds-checked: a record read back after a crash may be torn anywhere (fuzz_trail_ahead.c). */
int trail_rec_next(const uint8_t *p, size_t len, size_t *pos, struct trail_rec_item *it)
{
    size_t at = *pos;
    if (at >= len)
        return 0;
    memset(it, 0, sizeof(*it));
    size_t left = len - at;
    const uint8_t *q = p + at;
    it->kind = (char)q[0];
    if (q[0] == 'B') {
        if (left < 1 + TRAIL_HASH_LEN + 8)
            return -EINVAL;
        uint64_t size = get_le(q + 1 + TRAIL_HASH_LEN, 8);
        if (size > TRAIL_BLOB_MAX || size > left - (1 + TRAIL_HASH_LEN + 8))
            return -EINVAL;
        it->blob_hash = q + 1;
        it->data = q + 1 + TRAIL_HASH_LEN + 8;
        it->size = (size_t)size;
        *pos = at + 1 + TRAIL_HASH_LEN + 8 + (size_t)size;
        return 1;
    }
    if (q[0] != 'E' || left < 38)
        return -EINVAL;
    struct trail_fields *f = &it->f;
    f->seq = get_le(q + 1, 8);
    f->ts_us = (int64_t)get_le(q + 9, 8);
    f->local_seq = get_le(q + 17, 8);
    uint8_t flags = q[25];
    f->id_len = (size_t)get_le(q + 26, 2);
    f->ws_len = (size_t)get_le(q + 28, 2);
    f->actor_len = (size_t)get_le(q + 30, 2);
    f->type_len = (size_t)get_le(q + 32, 2);
    f->body_len = (size_t)get_le(q + 34, 4);
    if ((flags & ~7u) || !(flags & 1) != !f->ws_len || ((flags & 2) && !(flags & 1)))
        return -EINVAL;
    uint64_t need = 38 + (uint64_t)f->id_len + f->ws_len + f->actor_len + f->type_len + f->body_len +
                    ((flags & 2) ? TRAIL_HASH_LEN : 0) + ((flags & 4) ? TRAIL_HASH_LEN : 0) +
                    TRAIL_HASH_LEN;
    if (need > left)
        return -EINVAL;
    const char *s = (const char *)q + 38;
    f->id = s;
    s += f->id_len;
    f->workspace = (flags & 1) ? s : NULL;
    s += f->ws_len;
    f->actor = s;
    s += f->actor_len;
    f->type = s;
    s += f->type_len;
    f->body = s;
    s += f->body_len;
    const uint8_t *h = (const uint8_t *)s;
    if (flags & 2) {
        f->local_prev = h;
        h += TRAIL_HASH_LEN;
    }
    if (flags & 4) {
        f->prev_hash = h;
        h += TRAIL_HASH_LEN;
    }
    it->hash = h;
    *pos = at + (size_t)need;
    return 1;
}

/* ---- the file ------------------------------------------------------------------------------ */

static int seg_path(char *buf, size_t cap, const char *db_path, int seg)
{
    return (size_t)snprintf(buf, cap, "%s-ahead%s", db_path, seg ? "2" : "") < cap ? 0 : -ENAMETOOLONG;
}

static int seg_open(const char *db_path, const char *path, struct stat *st, struct cerr *err)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return cerr_set(err, errno, "trail %s: cannot open its ahead log %s: %s", db_path, path,
                        strerror(errno));
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || st->st_nlink != 1 || st->st_uid != geteuid()) {
        close(fd);
        return cerr_set(err, EPERM,
                        "trail %s: its ahead log %s is not a regular file of this user with one link; "
                        "move it away (it is corral's, beside the trail)",
                        db_path, path);
    }
    return fd;
}

int trail_ahead_open(const char *db_path, int fds[2], struct cerr *err)
{
    char path[PATH_MAX], path2[PATH_MAX];
    if (seg_path(path, sizeof(path), db_path, 0) < 0 || seg_path(path2, sizeof(path2), db_path, 1) < 0)
        return cerr_set(err, ENAMETOOLONG, "trail %s: the path is too long", db_path);
    /* The lock on the first segment says who writes the trail. A writer that closes unlinks the
     * files: if that happened between our open and our lock, we hold a lock on a file nobody
     * will find, so look again. */
    for (int tries = 0; tries < 8; tries++) {
        struct stat st, pst;
        int fd = seg_open(db_path, path, &st, err);
        if (fd < 0)
            return fd;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
            int e = errno;
            close(fd);
            if (e == EWOULDBLOCK)
                return cerr_set(err, EBUSY,
                                "trail %s is being written by another corral process (it holds the "
                                "lock on %s): one writer per trail file; stop it or choose another "
                                "trail",
                                db_path, path);
            return cerr_set(err, e, "trail %s: cannot lock %s: %s", db_path, path, strerror(e));
        }
        if (stat(path, &pst) < 0 || pst.st_ino != st.st_ino || pst.st_dev != st.st_dev) {
            close(fd);
            continue;
        }
        /* And a record lock on the same open file, which readers test (F_OFD_GETLK) without
         * taking anything: a reader that took the flock, even shared and for microseconds, made
         * a writer opening at that moment fail. Both go with the open file (fork, close). */
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        if (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
            int e = errno;
            close(fd);
            return cerr_set(err, e == EAGAIN || e == EACCES ? EBUSY : e,
                            "trail %s: cannot lock %s: %s", db_path, path, strerror(e));
        }
        int fd2 = seg_open(db_path, path2, &st, err);
        if (fd2 < 0) {
            close(fd);
            return fd2;
        }
        fds[0] = fd;
        fds[1] = fd2;
        return 0;
    }
    return cerr_set(err, EBUSY, "trail %s: its ahead log %s keeps being replaced", db_path, path);
}

int trail_ahead_index(int fd, struct trail_rec_ref **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    uint64_t size = (uint64_t)st.st_size, off = 0, seed = 0;
    size_t cap = 0;
    uint8_t hdr[TRAIL_REC_HDR], sum[REC_SUM];
    /* No record starts past TRAIL_AHEAD_MAX (record_place): what does is not the writer's, and
     * a reader's memory stays bounded whatever file it is given. */
    while (off + TRAIL_REC_HDR <= size && off < TRAIL_AHEAD_MAX) {
        struct trail_rec_hdr h;
        if (pread(fd, hdr, sizeof(hdr), (off_t)off) != (ssize_t)sizeof(hdr) ||
            trail_rec_header(hdr, sizeof(hdr), &h) < 0 || h.len > size - off || h.first == 0 ||
            (*n && h.first != (*out)[*n - 1].h.last + 1) ||
            (!h.hashed &&
             pread(fd, sum, sizeof(sum), (off_t)(off + h.len - REC_SUM)) != (ssize_t)sizeof(sum)))
            break; /* the end of this lap: what follows is older, or torn */
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            struct trail_rec_ref *p = reallocarray(*out, cap, sizeof(*p));
            if (!p) {
                free(*out);
                *out = NULL;
                *n = 0;
                return -ENOMEM;
            }
            *out = p;
        }
        (*out)[(*n)++] = (struct trail_rec_ref){.off = off, .h = h, .seed = seed};
        seed = h.hashed ? 0 : get_le(sum, REC_SUM); /* the next record's seed */
        off += h.len;
    }
    return 0;
}

int trail_ahead_write(int fd, const void *p, size_t len, uint64_t off, bool sync)
{
    const uint8_t *q = p;
    size_t done = 0;
    while (done < len) {
        ssize_t w = pwrite(fd, q + done, len - done, (off_t)(off + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -ENOSPC;
        done += (size_t)w;
    }
    if (sync && fdatasync(fd) < 0)
        return -errno;
    return 0;
}

/* A record whose write or flush failed was never acknowledged: its batch never happened. Its
 * header is zeroed so that a crash before the next record is written over it does not leave a
 * whole record for recovery to apply (a failed fdatasync leaves the pwrite's bytes in place).
 * Best effort: after an I/O error the disk may keep either. */
void trail_ahead_erase(int fd, uint64_t off, bool sync)
{
    static const uint8_t zero[TRAIL_REC_HDR];
    if (pwrite(fd, zero, sizeof(zero), (off_t)off) == (ssize_t)sizeof(zero) && sync)
        (void)fdatasync(fd);
}

int trail_ahead_clear(const int fds[2])
{
    for (int s = 0; s < 2; s++) {
        struct stat st;
        if (fstat(fds[s], &st) < 0)
            return -errno;
        if (st.st_size && (ftruncate(fds[s], 0) < 0 || fdatasync(fds[s]) < 0))
            return -errno;
    }
    return 0;
}

void trail_ahead_remove(const char *db_path)
{
    char path[PATH_MAX];
    for (int seg = 1; seg >= 0; seg--)
        if (seg_path(path, sizeof(path), db_path, seg) == 0)
            unlink(path);
}

/* For readers: whoever can write the trail's directory may have put anything there, and an
 * open of a FIFO for reading would wait for a writer forever (O_NONBLOCK). Regular files only. */
int trail_ahead_open_read(const char *db_path, int seg)
{
    char path[PATH_MAX];
    if (seg_path(path, sizeof(path), db_path, seg) < 0)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

bool trail_ahead_left(const char *db_path)
{
    int fd = trail_ahead_open_read(db_path, 0);
    if (fd < 0)
        return false;
    struct stat st;
    struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
    bool left = fstat(fd, &st) == 0 && st.st_size > 0 && fcntl(fd, F_OFD_GETLK, &fl) == 0 &&
                fl.l_type == F_UNLCK; /* no writer holds it */
    close(fd);
    return left;
}
