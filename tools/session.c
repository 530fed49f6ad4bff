/* tools/session.c: per-connection read records (path -> identity + content hash) and the
 * surface slot. A change behind the agent's back is caught by the content hash, not the
 * mtime, whose granularity and settability make it no proof. */
#include "tools/session.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HASH_LEN crypto_generichash_BYTES
/* A file larger than this is never recorded as read, so it can never be written through the
 * read-first rule: each surface's own size cap is far below it. */
#define MAX_HASHED ((uint64_t)256 << 20)

struct read_rec {
    char *rel;
    unsigned char hash[HASH_LEN];
};

struct tool_session {
    pthread_mutex_t lock; /* guards recs and the slot's contents (held by slot users) */
    pthread_mutex_t recs_lock;
    struct read_rec *recs;
    size_t n, cap;
    void *slot;
    void (*slot_drop)(void *);
};

int tool_session_new(struct tool_session **out)
{
    struct tool_session *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->recs_lock, NULL);
    *out = s;
    return 0;
}

void tool_session_free(struct tool_session *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->recs[i].rel);
    free(s->recs);
    if (s->slot && s->slot_drop)
        s->slot_drop(s->slot);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->recs_lock);
    free(s);
}

/* 1 with HASH filled when REL is a regular file we could read whole, 0 when it does not
 * exist, -1 when it exists but cannot be hashed. */
static int hash_file(const struct tool_ctx *ctx, const char *rel, unsigned char hash[HASH_LEN])
{
    struct broker_err e;
    _cleanup_close_ int fd = broker_openat(
        ctx->root_fd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0, 0, "path", &e);
    if (fd < 0)
        return e.kind == BROKER_E_NOT_FOUND ? 0 : -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > MAX_HASHED)
        return -1;
    crypto_generichash_state h;
    crypto_generichash_init(&h, NULL, 0, HASH_LEN);
    char buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        crypto_generichash_update(&h, (const unsigned char *)buf, (size_t)n);
    }
    crypto_generichash_final(&h, hash, HASH_LEN);
    return 1;
}

static struct read_rec *rec_find(struct tool_session *s, const char *rel)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->recs[i].rel, rel))
            return &s->recs[i];
    return NULL;
}

int tool_session_note_read(struct tool_session *s, const struct tool_ctx *ctx, const char *rel)
{
    if (!s)
        return 0;
    unsigned char hash[HASH_LEN];
    int h = hash_file(ctx, rel, hash);
    pthread_mutex_lock(&s->recs_lock);
    int r = 0;
    struct read_rec *rec = rec_find(s, rel);
    if (h <= 0) {
        if (rec) { /* what was read is gone or unreadable: the old record proves nothing */
            free(rec->rel);
            *rec = s->recs[--s->n];
        }
    } else if (rec) {
        memcpy(rec->hash, hash, HASH_LEN);
    } else {
        if (s->n == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 16;
            struct read_rec *v = reallocarray(s->recs, cap, sizeof(*v));
            if (!v) {
                r = -ENOMEM;
                goto out;
            }
            s->recs = v;
            s->cap = cap;
        }
        char *copy = strdup(rel);
        if (!copy) {
            r = -ENOMEM;
            goto out;
        }
        s->recs[s->n].rel = copy;
        memcpy(s->recs[s->n].hash, hash, HASH_LEN);
        s->n++;
    }
out:
    pthread_mutex_unlock(&s->recs_lock);
    return r;
}

int tool_session_note_write(struct tool_session *s, const struct tool_ctx *ctx, const char *rel)
{
    return tool_session_note_read(s, ctx, rel);
}

void tool_session_forget(struct tool_session *s, const char *rel)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->recs_lock);
    struct read_rec *rec = rec_find(s, rel);
    if (rec) {
        free(rec->rel);
        *rec = s->recs[--s->n];
    }
    pthread_mutex_unlock(&s->recs_lock);
}

int tool_session_check_fresh(struct tool_session *s, const struct tool_ctx *ctx, const char *rel,
                             const char *field, enum tool_fresh *why, struct broker_err *e)
{
    if (why)
        *why = TOOL_FRESH_OK;
    unsigned char now[HASH_LEN];
    int h = hash_file(ctx, rel, now);
    if (h == 0)
        return 0;
    _cleanup_free_ char *shown = broker_path_display(rel);
    bool known = false, same = false;
    if (s) {
        pthread_mutex_lock(&s->recs_lock);
        struct read_rec *rec = rec_find(s, rel);
        known = rec != NULL;
        same = rec && h > 0 && sodium_memcmp(rec->hash, now, HASH_LEN) == 0;
        pthread_mutex_unlock(&s->recs_lock);
    }
    if (same)
        return 0;
    if (!known) {
        if (why)
            *why = TOOL_FRESH_UNREAD;
        return broker_fail(e, BROKER_E_DENIED, field,
                           "%s has not been read in this session; read it first, then write it",
                           shown ? shown : "the file");
    }
    if (why)
        *why = TOOL_FRESH_CHANGED;
    return broker_fail(e, BROKER_E_DENIED, field,
                       "%s has changed since it was last read; read it again, then write it",
                       shown ? shown : "the file");
}

void *tool_session_slot(struct tool_session *s, void *(*make)(void), void (*drop)(void *))
{
    if (!s)
        return NULL;
    pthread_mutex_lock(&s->lock);
    if (!s->slot && make) {
        s->slot = make();
        s->slot_drop = s->slot ? drop : NULL;
    }
    void *v = s->slot;
    pthread_mutex_unlock(&s->lock);
    return v;
}

void tool_session_lock(struct tool_session *s)
{
    if (s)
        pthread_mutex_lock(&s->lock);
}

void tool_session_unlock(struct tool_session *s)
{
    if (s)
        pthread_mutex_unlock(&s->lock);
}
