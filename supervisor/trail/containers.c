/* supervisor/trail/containers.c: the trail's two small containers, shared by the writer, its
 * applier, the ahead log and verify: a growable byte buffer, and the table of workspace heads
 * keyed by name (with the name hash verify's index digest uses). Kept apart so that those files
 * call down into it and never into each other's. */
#include "supervisor/trail/internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- byte buffer ---------------------------------------------------------------------------- */

int trail_buf_reserve(struct trail_buf *b, size_t add)
{
    if (add > SIZE_MAX - b->len)
        return -ENOMEM;
    size_t need = b->len + add;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) {
        if (cap > SIZE_MAX / 2)
            return -ENOMEM;
        cap *= 2;
    }
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        return -ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

int trail_buf_put(struct trail_buf *b, const void *p, size_t n)
{
    int r = trail_buf_reserve(b, n);
    if (r < 0)
        return r;
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

void trail_buf_free(struct trail_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ---- workspace heads ------------------------------------------------------------------------ */

static uint64_t name_key(const char *s, size_t n);

uint64_t trail_index_pair(uint64_t name_key, uint64_t seq)
{
    uint64_t z = name_key ^ (seq * 0x9e3779b97f4a7c15ull); /* splitmix64 finaliser */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t trail_name_key(const char *s, size_t n)
{
    return name_key(s, n);
}

static uint64_t name_key(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static struct trail_wshead *wsmap_find_slot(struct trail_wshead *slots, size_t cap, uint64_t key,
                                            const char *name, size_t len)
{
    size_t i = (size_t)key & (cap - 1);
    for (;;) {
        struct trail_wshead *h = &slots[i];
        if (!h->name || (h->key == key && h->len == len && !memcmp(h->name, name, len)))
            return h;
        i = (i + 1) & (cap - 1);
    }
}

struct trail_wshead *trail_wsmap_get(struct trail_wsmap *m, const char *name, size_t len, bool *created)
{
    uint64_t key = name_key(name, len);
    *created = false;
    if (m->cap) {
        struct trail_wshead *h = wsmap_find_slot(m->slots, m->cap, key, name, len);
        if (h->name)
            return h;
    }
    if ((m->n + 1) * 2 > m->cap) { /* keep the load under one half */
        size_t cap = m->cap ? m->cap * 2 : 64;
        struct trail_wshead *slots = calloc(cap, sizeof(*slots));
        if (!slots)
            return NULL;
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].name)
                *wsmap_find_slot(slots, cap, m->slots[i].key, m->slots[i].name,
                                 m->slots[i].len) = m->slots[i];
        free(m->slots);
        m->slots = slots;
        m->cap = cap;
    }
    struct trail_wshead *h = wsmap_find_slot(m->slots, m->cap, key, name, len);
    h->name = malloc(len + 1);
    if (!h->name)
        return NULL;
    memcpy(h->name, name, len);
    h->name[len] = '\0';
    h->len = len;
    h->key = key;
    h->local_seq = 0;
    m->n++;
    *created = true;
    return h;
}

void trail_wsmap_clear(struct trail_wsmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->slots[i].name);
    free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}

