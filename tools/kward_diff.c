/* tools/kward_diff.c: the unified diff in write_file's and edit_file's results: Myers' O((N+M)D)
 * shortest edit script over lines, 3 lines of context.
 * Why in-process and not `diff -u` in a command sandbox: both texts are already in the
 * supervisor's memory (one was just written), a sandbox costs ~13 ms and two temp files per
 * edit, and the algorithm here is bounded: common prefix and suffix are trimmed first, the
 * search stops past KWARD_DIFF_MAX_D differences or KWARD_DIFF_MAX_WORK steps (memory
 * O(D^2) ints, at most ~4 MiB), and then the changed middle is shown as one hunk. Files are at
 * most 256 KB (the seed's cap), so line indexes fit an int. */
#include "tools/kward.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONTEXT 3

struct line {
    const char *s;
    size_t len; /* with its '\n', if it has one */
    uint64_t hash;
};

enum op { OP_EQ, OP_DEL, OP_INS };

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static int split(const char *t, size_t len, struct line **out, size_t *n)
{
    size_t cnt = 0;
    for (size_t i = 0; i < len; i++)
        if (t[i] == '\n')
            cnt++;
    if (len && t[len - 1] != '\n')
        cnt++;
    *n = cnt;
    *out = calloc(cnt ? cnt : 1, sizeof(**out));
    if (!*out)
        return -ENOMEM;
    size_t pos = 0;
    for (size_t k = 0; k < cnt; k++) {
        const char *nl = memchr(t + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - t) + 1 : len;
        (*out)[k] = (struct line){t + pos, end - pos, fnv1a(t + pos, end - pos)};
        pos = end;
    }
    return 0;
}

static bool same(const struct line *a, const struct line *b)
{
    return a->hash == b->hash && a->len == b->len && !memcmp(a->s, b->s, a->len);
}

/* Myers' greedy forward search over a[0..n) and b[0..m), keeping each round's V so the path can
 * be walked back (memory grows with D^2, never past KWARD_DIFF_MAX_D^2 ints). Ops are written
 * in order into ops (room for n + m). Returns their number, -1 when the bounds were passed (the
 * caller falls back), -2 when out of memory. */
static long myers(const struct line *a, size_t n, const struct line *b, size_t m, enum op *ops)
{
    long max_d = (long)(n + m) < KWARD_DIFF_MAX_D ? (long)(n + m) : KWARD_DIFF_MAX_D;
    /* trace[d] holds V[k] for k in [-d, d] after round d: offset d*d (sum of 2i+1 for i < d). */
    size_t trace_cap = 256;
    int *trace = malloc(trace_cap * sizeof(int));
    long *v = malloc((size_t)(2 * max_d + 3) * sizeof(long));
    if (!trace || !v) {
        free(trace);
        free(v);
        return -2;
    }
    long off = max_d + 1; /* v[k + off] */
    v[1 + off] = 0;
    uint64_t work = 0;
    long found = -1;
    for (long d = 0; d <= max_d && found < 0; d++) {
        for (long k = -d; k <= d; k += 2) {
            long x;
            if (k == -d || (k != d && v[k - 1 + off] < v[k + 1 + off]))
                x = v[k + 1 + off]; /* down: an insertion */
            else
                x = v[k - 1 + off] + 1; /* right: a deletion */
            long y = x - k;
            while (x < (long)n && y < (long)m && same(&a[x], &b[y])) {
                x++;
                y++;
                work++;
            }
            v[k + off] = x;
            if (x >= (long)n && y >= (long)m)
                found = d;
        }
        size_t need = (size_t)(d + 1) * (size_t)(d + 1);
        if (need > trace_cap) {
            size_t nc = trace_cap * 2 > need ? trace_cap * 2 : need;
            int *t = realloc(trace, nc * sizeof(int));
            if (!t) {
                free(trace);
                free(v);
                return -2;
            }
            trace = t;
            trace_cap = nc;
        }
        int *row = trace + (size_t)d * (size_t)d;
        for (long k = -d; k <= d; k++)
            row[k + d] = (int)v[k + off];
        work += (uint64_t)(2 * d + 1);
        if (work > KWARD_DIFF_MAX_WORK)
            break;
    }
    free(v);
    if (found < 0) {
        free(trace);
        return -1;
    }
    /* Walk back from (n, m), writing ops from the end. */
    size_t w = n + m;
    long x = (long)n, y = (long)m;
    size_t pos = n + m; /* ops are written at [pos-1] downward, then moved to the front */
    for (long d = found; d > 0; d--) {
        const int *prev = trace + (size_t)(d - 1) * (size_t)(d - 1);
        long k = x - y;
        long pk;
        if (k == -d || (k != d && prev[k - 1 + (d - 1)] < prev[k + 1 + (d - 1)]))
            pk = k + 1;
        else
            pk = k - 1;
        long px = prev[pk + (d - 1)], py = px - pk;
        long mx = pk == k + 1 ? px : px + 1; /* where the snake of round d began */
        while (x > mx) {
            ops[--pos] = OP_EQ;
            x--;
            y--;
        }
        ops[--pos] = pk == k + 1 ? OP_INS : OP_DEL;
        x = px;
        y = py;
    }
    while (x > 0) {
        ops[--pos] = OP_EQ;
        x--;
    }
    free(trace);
    size_t cnt = w - pos;
    memmove(ops, ops + pos, cnt * sizeof(*ops));
    return (long)cnt;
}

struct buf {
    char *s;
    size_t len, cap;
    bool oom;
};

static void put(struct buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 4096;
        while (nc < b->len + n + 1)
            nc *= 2;
        char *t = realloc(b->s, nc);
        if (!t) {
            b->oom = true;
            return;
        }
        b->s = t;
        b->cap = nc;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void put_line(struct buf *b, char mark, const struct line *l)
{
    put(b, &mark, 1);
    put(b, l->s, l->len);
    static const char no_nl[] = "\n\\ No newline at end of file\n";
    if (!l->len || l->s[l->len - 1] != '\n')
        put(b, no_nl, sizeof(no_nl) - 1);
}

int kward_diff(const char *label, const char *a, size_t alen, const char *b, size_t blen,
               char **out, size_t *out_len, struct kward_diff_stats *st)
{
    *out = NULL;
    *out_len = 0;
    memset(st, 0, sizeof(*st));
    st->minimal = true;
    struct line *la = NULL, *lb = NULL;
    size_t n, m;
    enum op *ops = NULL;
    int r = -ENOMEM;
    if (split(a, alen, &la, &n) < 0 || split(b, blen, &lb, &m) < 0)
        goto done;
    if (!(ops = malloc((n + m + 1) * sizeof(*ops))))
        goto done;
    size_t pre = 0;
    while (pre < n && pre < m && same(&la[pre], &lb[pre]))
        pre++;
    size_t suf = 0;
    while (suf < n - pre && suf < m - pre && same(&la[n - 1 - suf], &lb[m - 1 - suf]))
        suf++;
    size_t n_ops = 0;
    for (size_t i = 0; i < pre; i++)
        ops[n_ops++] = OP_EQ;
    long mid = myers(la + pre, n - pre - suf, lb + pre, m - pre - suf, ops + n_ops);
    if (mid == -2)
        goto done;
    if (mid < 0) { /* past the bounds: the whole middle as one change */
        st->minimal = false;
        for (size_t i = 0; i < n - pre - suf; i++)
            ops[n_ops++] = OP_DEL;
        for (size_t i = 0; i < m - pre - suf; i++)
            ops[n_ops++] = OP_INS;
    } else {
        n_ops += (size_t)mid;
    }
    for (size_t i = 0; i < suf; i++)
        ops[n_ops++] = OP_EQ;

    struct buf o = {0};
    put(&o, "", 0);
    size_t i = 0, ai = 0, bi = 0; /* ops index and the lines of a and b before it */
    bool header = false;
    while (i < n_ops) {
        if (ops[i] == OP_EQ) {
            i++, ai++, bi++;
            continue;
        }
        /* A hunk: up to CONTEXT equal lines before, changes joined while the equal run between
         * them is at most 2 * CONTEXT, up to CONTEXT after. */
        size_t back = 0;
        while (back < CONTEXT && back < i && ops[i - back - 1] == OP_EQ)
            back++;
        size_t h0 = i - back, ha = ai - back, hb = bi - back;
        size_t j = i, last_change = i;
        while (j < n_ops) {
            if (ops[j] != OP_EQ) {
                last_change = j++;
                continue;
            }
            size_t run = 0;
            while (j + run < n_ops && ops[j + run] == OP_EQ)
                run++;
            if (j + run == n_ops || run > 2 * CONTEXT)
                break;
            j += run;
        }
        size_t h1 = last_change + 1;
        for (size_t c = 0; c < CONTEXT && h1 < n_ops && ops[h1] == OP_EQ; c++)
            h1++;
        size_t ca = 0, cb = 0;
        for (size_t k = h0; k < h1; k++) {
            ca += ops[k] != OP_INS;
            cb += ops[k] != OP_DEL;
        }
        if (!header) {
            char hd[640];
            int hl = snprintf(hd, sizeof(hd), "--- %.300s\n+++ %.300s\n", label, label);
            put(&o, hd, (size_t)hl);
            header = true;
        }
        char hh[96];
        int hl = snprintf(hh, sizeof(hh), "@@ -%zu,%zu +%zu,%zu @@\n", ca ? ha + 1 : ha, ca,
                          cb ? hb + 1 : hb, cb);
        put(&o, hh, (size_t)hl);
        size_t xa = ha, xb = hb;
        for (size_t k = h0; k < h1; k++) {
            if (ops[k] == OP_EQ) {
                put_line(&o, ' ', &la[xa]);
                xa++, xb++;
            } else if (ops[k] == OP_DEL) {
                put_line(&o, '-', &la[xa++]);
                st->deletions++;
            } else {
                put_line(&o, '+', &lb[xb++]);
                st->additions++;
            }
        }
        i = h1;
        ai = xa;
        bi = xb;
    }
    if (o.oom) {
        free(o.s);
        goto done;
    }
    *out = o.s;
    *out_len = o.len;
    r = 0;
done:
    free(la);
    free(lb);
    free(ops);
    return r;
}

char *kward_diff_cap(const char *diff, size_t len, size_t cap, const struct kward_diff_stats *st,
                     bool *cut)
{
    if (cut)
        *cut = len > cap;
    if (len <= cap)
        return strndup(diff, len);
    size_t keep = cap;
    while (keep > 0 && diff[keep - 1] != '\n')
        keep--; /* whole lines only, so no UTF-8 sequence is split either */
    char tail[200];
    int tl = snprintf(tail, sizeof(tail),
                      "... diff truncated to %zu bytes; full diff stats: +%zu|-%zu. Use read_file to inspect current content.",
                      cap, st->additions, st->deletions);
    char *s = malloc(keep + (size_t)tl + 1);
    if (!s)
        return NULL;
    memcpy(s, diff, keep);
    memcpy(s + keep, tail, (size_t)tl + 1);
    return s;
}
