/* tools/voltagent/index.c: the search index of the VoltAgent surface (upstream's BM25 index and
 * in-memory vector store, with a local feature-hashing embedding or an external one), bounded in
 * documents and bytes, and the per-session state the search and skills toolkits share. */
#include "tools/voltagent/index.h"
#include "tools/params.h"

#include "tools/session.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct voltagent_index_term {
    uint64_t hash;
    uint32_t tf;
};

struct voltagent_index {
    struct voltagent_index_doc **v;
    size_t n, cap;
    size_t max_docs, max_bytes;
    size_t bytes;
    uint64_t total_tokens;
    size_t dim;
};

/* ---- tokens and hashing --------------------------------------------------------------------- */

static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
#define FNV_OFFSET 0xcbf29ce484222325ULL

static bool tok_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z');
}

#define MAX_TOKEN 256

void voltagent_index_tokens(const char *text, size_t len,
                            void (*fn)(const char *tok, size_t n, void *arg), void *arg)
{
    char buf[MAX_TOKEN];
    size_t i = 0;
    while (i < len) {
        while (i < len && !tok_char((unsigned char)text[i]))
            i++;
        size_t n = 0;
        while (i < len && tok_char((unsigned char)text[i])) {
            unsigned char c = (unsigned char)text[i++];
            if (n < MAX_TOKEN)
                buf[n++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
        }
        if (n)
            fn(buf, n, arg);
    }
}

static uint64_t term_hash(const char *tok, size_t n)
{
    return fnv1a(FNV_OFFSET, tok, n);
}

/* ---- the local embedding -------------------------------------------------------------------- */

struct embed_acc {
    float *v;
    bool any;
};

static void embed_feature(struct embed_acc *a, char tag, const char *s, size_t n, float w)
{
    uint64_t h = fnv1a(fnv1a(FNV_OFFSET, &tag, 1), s, n);
    /* The low bits pick the bucket, the top bit the sign: collisions then cancel out on
     * average instead of piling up. */
    a->v[h % VS_LOCAL_DIM] += (h >> 63) ? -w : w;
    a->any = true;
}

static void embed_token(const char *tok, size_t n, void *arg)
{
    struct embed_acc *a = arg;
    embed_feature(a, 'w', tok, n, 1.0f);
    char pad[MAX_TOKEN + 2];
    pad[0] = '^';
    memcpy(pad + 1, tok, n);
    pad[n + 1] = '$';
    for (size_t i = 0; i + 3 <= n + 2; i++)
        embed_feature(a, 't', pad + i, 3, 0.5f);
}

static void l2_normalise(float *v, size_t dim)
{
    double sum = 0;
    for (size_t i = 0; i < dim; i++)
        sum += (double)v[i] * v[i];
    if (sum <= 0)
        return;
    double inv = 1.0 / sqrt(sum);
    for (size_t i = 0; i < dim; i++)
        v[i] = (float)(v[i] * inv);
}

bool voltagent_index_embed_local(const char *text, size_t len, float *out)
{
    memset(out, 0, VS_LOCAL_DIM * sizeof(*out));
    struct embed_acc a = {.v = out};
    voltagent_index_tokens(text, len, embed_token, &a);
    l2_normalise(out, VS_LOCAL_DIM);
    return a.any;
}

/* ---- the external embedding ----------------------------------------------------------------- */

/* Texts are cut to this many bytes before they go to the command, and a batch holds at most
 * this many texts, so one call's stdin stays small whatever was indexed. */
#define EXT_MAX_TEXT (32 * 1024)
#define EXT_BATCH 32

static int embed_batch_ext(const struct tool_ctx *ctx, const char *const *texts, const size_t *lens,
                           size_t n, float *vecs, size_t *dim, struct broker_err *e)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < n; i++) {
        _cleanup_free_ char *t = broker_utf8_sanitize(texts[i], lens[i], EXT_MAX_TEXT, NULL);
        cJSON *s = t ? cJSON_CreateString(t) : NULL;
        if (!s || !cJSON_AddItemToArray(arr, s)) {
            cJSON_Delete(s);
            cJSON_Delete(arr);
            arr = NULL;
        }
    }
    _cleanup_free_ char *input = arr ? cJSON_PrintUnformatted(arr) : NULL;
    cJSON_Delete(arr);
    if (!input)
        return broker_fail(e, BROKER_E_IO, NULL, "out of memory for the embedding request");
    /* The command is the policy's, not the agent's: it runs whatever the role's own command
     * authority, in a command sandbox: the role's command profile when the role may run
     * commands, else the sandbox module's default one (a role without command authority has a
     * profile that lets nothing be executed). */
    struct tool_ctx c = *ctx;
    if (!ctx->allow_commands)
        c.command_profile = NULL;
    c.allow_commands = true;
    c.egress_spec = NULL; /* no network (docs/policy.md), even for a network "proxy" role */
    struct broker_command_opts o = {
        .command = ctx->limits.embedding_command, .input = input, .input_len = strlen(input)};
    struct broker_command_result r = {0};
    if (broker_command(&c, &o, &r, e) < 0)
        return broker_fail(e, e->kind, NULL, "the embedding command could not run: %s", e->msg);
    int rc = -1;
    cJSON *out = NULL;
    if (r.timed_out)
        broker_fail(e, BROKER_E_TIMEOUT, NULL, "the embedding command ran out of time");
    else if (r.exit_code != 0)
        broker_fail(e, BROKER_E_EXEC, NULL, "the embedding command exited with status %d: %.200s",
                    r.exit_code, r.err);
    else if (r.truncated)
        broker_fail(e, BROKER_E_TOO_LARGE, NULL,
                    "the embedding command printed more than the output cap; raise "
                    "limits.max_output_bytes or print shorter vectors");
    else if (!(out = cJSON_ParseWithLength(r.out, r.out_len)) || !cJSON_IsArray(out) ||
             (size_t)cJSON_GetArraySize(out) != n)
        broker_fail(e, BROKER_E_EXEC, NULL,
                    "the embedding command must print a JSON array of %zu vectors (arrays of "
                    "numbers), one per text it was given",
                    n);
    else
        rc = 0;
    size_t k = 0;
    for (const cJSON *vec = rc == 0 ? out->child : NULL; vec; vec = vec->next, k++) {
        size_t d = cJSON_IsArray(vec) ? (size_t)cJSON_GetArraySize(vec) : 0;
        if (!d || d > VS_MAX_DIM || (*dim && d != *dim)) {
            rc = broker_fail(e, BROKER_E_EXEC, NULL,
                             "the embedding command's vector %zu has %zu numbers; every vector "
                             "must have the same dimension, 1 to %d",
                             k, d, VS_MAX_DIM);
            break;
        }
        *dim = d;
        size_t j = 0;
        for (const cJSON *x = vec->child; x; x = x->next, j++) {
            if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble)) {
                rc = broker_fail(e, BROKER_E_EXEC, NULL,
                                 "the embedding command's vector %zu holds a non-number", k);
                break;
            }
            vecs[k * VS_MAX_DIM + j] = (float)x->valuedouble;
        }
        if (rc < 0)
            break;
    }
    cJSON_Delete(out);
    broker_command_result_clear(&r);
    return rc;
}

int voltagent_index_embed(const struct tool_ctx *ctx, const char *const *texts, const size_t *lens,
                          size_t n, float **vecs, size_t *dim, struct broker_err *e)
{
    *vecs = NULL;
    *dim = 0;
    if (!n)
        return 0;
    if (!ctx->limits.embedding_command || !*ctx->limits.embedding_command) {
        float *v = calloc(n, VS_LOCAL_DIM * sizeof(float));
        if (!v)
            return broker_fail(e, BROKER_E_IO, NULL, "out of memory for %zu embeddings", n);
        for (size_t i = 0; i < n; i++)
            voltagent_index_embed_local(texts[i], lens[i], v + i * VS_LOCAL_DIM);
        *vecs = v;
        *dim = VS_LOCAL_DIM;
        return 0;
    }
    /* Room for the largest dimension first (stride VS_MAX_DIM), packed once it is known. */
    float *v = calloc(n, VS_MAX_DIM * sizeof(float));
    if (!v)
        return broker_fail(e, BROKER_E_IO, NULL, "out of memory for %zu embeddings", n);
    size_t d = 0;
    for (size_t i = 0; i < n; i += EXT_BATCH) {
        size_t m = n - i < EXT_BATCH ? n - i : EXT_BATCH;
        if (embed_batch_ext(ctx, texts + i, lens + i, m, v + i * VS_MAX_DIM, &d, e) < 0) {
            free(v);
            return -1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        memmove(v + i * d, v + i * VS_MAX_DIM, d * sizeof(float));
        l2_normalise(v + i * d, d);
    }
    *vecs = v;
    *dim = d;
    return 0;
}

/* ---- documents ------------------------------------------------------------------------------ */

struct term_acc {
    struct voltagent_index_term *v;
    size_t n, cap;
    uint64_t tokens;
    bool failed;
};

static void count_token(const char *tok, size_t n, void *arg)
{
    struct term_acc *a = arg;
    if (a->failed)
        return;
    a->tokens++;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        struct voltagent_index_term *v = reallocarray(a->v, cap, sizeof(*v));
        if (!v) {
            a->failed = true;
            return;
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = (struct voltagent_index_term){.hash = term_hash(tok, n), .tf = 1};
}

static int term_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct voltagent_index_term *)a)->hash,
             y = ((const struct voltagent_index_term *)b)->hash;
    return x < y ? -1 : x > y;
}

void voltagent_index_doc_free(struct voltagent_index_doc *d)
{
    if (!d)
        return;
    free(d->id);
    free(d->content);
    cJSON_Delete(d->metadata);
    free(d->label);
    free(d->terms);
    free(d->vec);
    free(d);
}

struct voltagent_index_doc *voltagent_index_doc_new(const char *id, char *content_take, size_t len,
                                                    cJSON *metadata_take, const char *label,
                                                    const float *vec, size_t dim)
{
    struct voltagent_index_doc *d = calloc(1, sizeof(*d));
    if (!d) {
        free(content_take);
        cJSON_Delete(metadata_take);
        return NULL;
    }
    d->content = content_take;
    d->len = len;
    d->metadata = metadata_take;
    d->id = strdup(id);
    d->label = label ? strdup(label) : NULL;
    struct term_acc a = {0};
    voltagent_index_tokens(content_take, len, count_token, &a);
    if (!d->id || (label && !d->label) || a.failed) {
        free(a.v);
        voltagent_index_doc_free(d);
        return NULL;
    }
    /* Sorted by hash, duplicates folded into counts: a query term is then one bsearch. */
    if (a.n)
        qsort(a.v, a.n, sizeof(*a.v), term_cmp);
    size_t k = 0;
    for (size_t i = 0; i < a.n; i++) {
        if (k && a.v[k - 1].hash == a.v[i].hash)
            a.v[k - 1].tf++;
        else
            a.v[k++] = a.v[i];
    }
    d->terms = a.v;
    d->n_terms = k;
    d->n_tokens = a.tokens;
    if (vec && dim) {
        d->vec = malloc(dim * sizeof(float));
        if (!d->vec) {
            voltagent_index_doc_free(d);
            return NULL;
        }
        memcpy(d->vec, vec, dim * sizeof(float));
        d->dim = dim;
    }
    char *meta = metadata_take ? cJSON_PrintUnformatted(metadata_take) : NULL;
    d->cost = sizeof(*d) + strlen(id) + 1 + len + 1 + a.cap * sizeof(struct voltagent_index_term) +
              (vec ? dim * sizeof(float) : 0) + (meta ? strlen(meta) : 0) +
              (label ? strlen(label) + 1 : 0);
    free(meta);
    return d;
}

/* ---- the index ------------------------------------------------------------------------------ */

int voltagent_index_new(size_t max_docs, size_t max_bytes, struct voltagent_index **out)
{
    struct voltagent_index *ix = calloc(1, sizeof(*ix));
    if (!ix)
        return -ENOMEM;
    ix->max_docs = max_docs;
    ix->max_bytes = max_bytes;
    *out = ix;
    return 0;
}

void voltagent_index_clear(struct voltagent_index *ix)
{
    if (!ix)
        return;
    for (size_t i = 0; i < ix->n; i++)
        voltagent_index_doc_free(ix->v[i]);
    ix->n = 0;
    ix->bytes = 0;
    ix->total_tokens = 0;
    ix->dim = 0;
}

void voltagent_index_free(struct voltagent_index *ix)
{
    if (!ix)
        return;
    voltagent_index_clear(ix);
    free(ix->v);
    free(ix);
}

size_t voltagent_index_count(const struct voltagent_index *ix)
{
    return ix->n;
}
size_t voltagent_index_bytes(const struct voltagent_index *ix)
{
    return ix->bytes;
}
size_t voltagent_index_dim(const struct voltagent_index *ix)
{
    return ix->dim;
}
const struct voltagent_index_doc *voltagent_index_doc(const struct voltagent_index *ix, size_t i)
{
    return ix->v[i];
}

long voltagent_index_find(const struct voltagent_index *ix, const char *id)
{
    for (size_t i = 0; i < ix->n; i++)
        if (!strcmp(ix->v[i]->id, id))
            return (long)i;
    return -1;
}

int voltagent_index_fits(const struct voltagent_index *ix, struct voltagent_index_doc *const *docs,
                         size_t n, struct broker_err *e)
{
    size_t count = ix->n, bytes = ix->bytes;
    for (size_t i = 0; i < n; i++) {
        long old = voltagent_index_find(ix, docs[i]->id);
        /* An id given twice in one batch: the later one replaces the earlier. */
        bool dup = false;
        for (size_t j = i + 1; j < n && !dup; j++)
            dup = !strcmp(docs[j]->id, docs[i]->id);
        if (dup)
            continue;
        if (old >= 0)
            bytes -= ix->v[old]->cost;
        else
            count++;
        bytes += docs[i]->cost;
    }
    if (count > ix->max_docs)
        return broker_fail(e, BROKER_E_TOO_LARGE, NULL,
                           "the search index of this session holds at most %zu documents; this "
                           "would make %zu (%zu now). Index a narrower path or glob",
                           ix->max_docs, count, ix->n);
    if (bytes > ix->max_bytes)
        return broker_fail(e, BROKER_E_TOO_LARGE, NULL,
                           "the search index of this session holds at most %zu MiB; this would "
                           "make %.1f MiB (%.1f MiB now). Index a narrower path or glob, or "
                           "smaller files (max_file_bytes)",
                           ix->max_bytes >> 20, (double)bytes / 1048576.0,
                           (double)ix->bytes / 1048576.0);
    return 0;
}

static void remove_at(struct voltagent_index *ix, size_t i)
{
    struct voltagent_index_doc *d = ix->v[i];
    ix->bytes -= d->cost;
    ix->total_tokens -= d->n_tokens;
    voltagent_index_doc_free(d);
    memmove(ix->v + i, ix->v + i + 1, (ix->n - i - 1) * sizeof(*ix->v));
    ix->n--;
}

int voltagent_index_add(struct voltagent_index *ix, struct voltagent_index_doc **docs, size_t n,
                        struct broker_err *e)
{
    if (voltagent_index_fits(ix, docs, n, e) < 0)
        return -1;
    size_t dim = ix->n ? ix->dim : 0;
    for (size_t i = 0; i < n; i++) {
        if (!docs[i]->vec)
            continue;
        if (dim && docs[i]->dim != dim)
            return broker_fail(e, BROKER_E_INVALID, NULL,
                               "the embedding has %zu dimensions but this session's index holds "
                               "vectors of %zu; the embedding changed mid-session",
                               docs[i]->dim, dim);
        dim = docs[i]->dim;
    }
    if (ix->n + n > ix->cap) {
        size_t cap = ix->cap ? ix->cap : 16;
        while (cap < ix->n + n)
            cap *= 2;
        struct voltagent_index_doc **v = reallocarray(ix->v, cap, sizeof(*v));
        if (!v)
            return broker_fail(e, BROKER_E_IO, NULL, "out of memory for the search index");
        ix->v = v;
        ix->cap = cap;
    }
    for (size_t i = 0; i < n; i++) {
        long old = voltagent_index_find(ix, docs[i]->id);
        if (old >= 0)
            remove_at(ix, (size_t)old);
        ix->v[ix->n++] = docs[i];
        ix->bytes += docs[i]->cost;
        ix->total_tokens += docs[i]->n_tokens;
        docs[i] = NULL;
    }
    ix->dim = dim;
    return 0;
}

/* ---- queries -------------------------------------------------------------------------------- */

static int scored_cmp(const void *a, const void *b)
{
    const struct voltagent_index_scored *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    /* Equal scores keep index order (insertion), as a stable JavaScript sort would. */
    return x->doc < y->doc ? -1 : x->doc > y->doc;
}

static int finish(struct voltagent_index_scored *v, size_t n, size_t limit,
                  struct voltagent_index_scored **out, size_t *nout)
{
    if (n)
        qsort(v, n, sizeof(*v), scored_cmp);
    if (limit && n > limit)
        n = limit;
    if (!n) {
        free(v);
        v = NULL;
    }
    *out = v;
    *nout = n;
    return 0;
}

static uint32_t doc_tf(const struct voltagent_index_doc *d, uint64_t h)
{
    struct voltagent_index_term key = {.hash = h};
    const struct voltagent_index_term *t = d->n_terms ? bsearch(&key, d->terms, d->n_terms, sizeof(key),
                                                                term_cmp)
                                                      : NULL;
    return t ? t->tf : 0;
}

struct qterms {
    uint64_t v[64];
    size_t n;
};

static void add_qterm(const char *tok, size_t n, void *arg)
{
    struct qterms *q = arg;
    uint64_t h = term_hash(tok, n);
    for (size_t i = 0; i < q->n; i++)
        if (q->v[i] == h)
            return;
    if (q->n < ARRAY_SIZE(q->v))
        q->v[q->n++] = h;
}

int voltagent_index_bm25(const struct voltagent_index *ix, const char *query,
                         voltagent_index_filter_fn filter, void *arg, size_t limit,
                         struct voltagent_index_scored **out, size_t *n)
{
    const double k1 = 1.5, b = 0.75;
    struct qterms q = {0};
    voltagent_index_tokens(query, strlen(query), add_qterm, &q);
    *out = NULL;
    *n = 0;
    if (!q.n || !ix->n)
        return 0;
    /* Document frequencies over the whole index, as upstream keeps them (the filter narrows the
     * scored documents, not the statistics). */
    double df[ARRAY_SIZE(q.v)];
    for (size_t t = 0; t < q.n; t++) {
        df[t] = 0;
        for (size_t i = 0; i < ix->n; i++)
            df[t] += doc_tf(ix->v[i], q.v[t]) > 0;
    }
    double avg = (double)ix->total_tokens / (double)ix->n;
    if (avg <= 0)
        avg = 1;
    struct voltagent_index_scored *v = calloc(ix->n, sizeof(*v));
    if (!v)
        return -ENOMEM;
    size_t m = 0;
    for (size_t i = 0; i < ix->n; i++) {
        const struct voltagent_index_doc *d = ix->v[i];
        if (filter && !filter(d, arg))
            continue;
        double score = 0;
        for (size_t t = 0; t < q.n; t++) {
            uint32_t tf = doc_tf(d, q.v[t]);
            if (!tf || !df[t])
                continue;
            double idf = log(1.0 + ((double)ix->n - df[t] + 0.5) / (df[t] + 0.5));
            score += idf * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * (double)d->n_tokens / avg));
        }
        if (score > 0)
            v[m++] = (struct voltagent_index_scored){.doc = i, .score = score};
    }
    return finish(v, m, limit, out, n);
}

int voltagent_index_vector(const struct voltagent_index *ix, const float *qvec, size_t dim,
                           voltagent_index_filter_fn filter, void *arg, size_t limit,
                           struct voltagent_index_scored **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!ix->n)
        return 0;
    struct voltagent_index_scored *v = calloc(ix->n, sizeof(*v));
    if (!v)
        return -ENOMEM;
    size_t m = 0;
    for (size_t i = 0; i < ix->n; i++) {
        const struct voltagent_index_doc *d = ix->v[i];
        if (!d->vec || d->dim != dim || (filter && !filter(d, arg)))
            continue;
        double dot = 0;
        for (size_t k = 0; k < dim; k++)
            dot += (double)d->vec[k] * qvec[k];
        v[m++] = (struct voltagent_index_scored){.doc = i, .score = (dot + 1.0) / 2.0};
    }
    return finish(v, m, limit, out, n);
}

/* ---- snippets and line ranges --------------------------------------------------------------- */

struct find_first {
    const char *hay;
    size_t hay_len;
    size_t found; /* offset, or SIZE_MAX */
};

static void find_token(const char *tok, size_t n, void *arg)
{
    struct find_first *f = arg;
    if (f->found != SIZE_MAX)
        return;
    for (size_t i = 0; i + n <= f->hay_len; i++)
        if (!memcmp(f->hay + i, tok, n)) {
            f->found = i;
            return;
        }
}

static bool is_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Start of the UTF-8 character holding byte I. */
static size_t char_start(const char *s, size_t i)
{
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
        i--;
    return i;
}

char *voltagent_index_snippet(const char *content, size_t len, const char *query, size_t length)
{
    char *c = malloc(len + 1);
    if (!c)
        return NULL;
    size_t n = 0;
    bool space = false;
    for (size_t i = 0; i < len; i++) {
        if (is_space((unsigned char)content[i])) {
            space = n > 0;
            continue;
        }
        if (space)
            c[n++] = ' ';
        space = false;
        c[n++] = content[i];
    }
    c[n] = '\0';
    if (n <= length)
        return c;
    char *lower = strdup(c);
    if (!lower) {
        free(c);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (lower[i] >= 'A' && lower[i] <= 'Z')
            lower[i] = (char)(lower[i] + 32);
    struct find_first f = {.hay = lower, .hay_len = n, .found = SIZE_MAX};
    voltagent_index_tokens(query, strlen(query), find_token, &f);
    free(lower);
    size_t start = 0;
    if (f.found != SIZE_MAX)
        start = f.found > length / 2 ? char_start(c, f.found - length / 2) : 0;
    size_t end = start + length < n ? start + length : n;
    end = start + broker_utf8_cut(c + start, end - start, end - start);
    while (start < end && c[start] == ' ')
        start++;
    while (end > start && c[end - 1] == ' ')
        end--;
    memmove(c, c + start, end - start);
    c[end - start] = '\0';
    return c;
}

struct line_match {
    const char *line;
    size_t len;
    bool hit;
};

static void line_token(const char *tok, size_t n, void *arg)
{
    struct line_match *m = arg;
    if (m->hit)
        return;
    for (size_t i = 0; i + n <= m->len && !m->hit; i++) {
        size_t k = 0;
        while (k < n) {
            char ch = m->line[i + k];
            if (ch >= 'A' && ch <= 'Z')
                ch = (char)(ch + 32);
            if (ch != tok[k])
                break;
            k++;
        }
        m->hit = k == n;
    }
}

bool voltagent_index_line_range(const char *content, size_t len, const char *query, uint64_t *start,
                                uint64_t *end)
{
    uint64_t line = 1;
    *start = *end = 0;
    for (size_t i = 0; i <= len;) {
        const char *nl = memchr(content + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - content) : len;
        struct line_match m = {.line = content + i, .len = e - i};
        voltagent_index_tokens(query, strlen(query), line_token, &m);
        if (m.hit) {
            if (!*start)
                *start = line;
            *end = line;
        }
        if (!nl)
            break;
        i = e + 1;
        line++;
    }
    return *start != 0;
}

/* ---- per-session state ---------------------------------------------------------------------- */

static void *state_make(void)
{
    struct voltagent_state *s = calloc(1, sizeof(*s));
    if (s && voltagent_index_new(VS_MAX_DOCS, VS_MAX_BYTES, &s->search) < 0) {
        free(s);
        return NULL;
    }
    return s;
}

static void state_drop(void *p)
{
    struct voltagent_state *s = p;
    if (!s)
        return;
    voltagent_index_free(s->search);
    if (s->skills && s->skills_free)
        s->skills_free(s->skills);
    free(s);
}

struct voltagent_state *voltagent_state(const struct tool_ctx *ctx)
{
    return ctx->session ? tool_session_slot(ctx->session, state_make, state_drop) : NULL;
}

/* ---- arguments ------------------------------------------------------------------------------ */

/* The search and skills toolkits' tables, as tools/params tables: numbers are coerced from text
 * (z.coerce.number), integers are whole and >= 0, mode is one of three, metadata may be null. */
static const char *const voltagent_index_modes[] = {"bm25", "vector", "hybrid", NULL};

static int voltagent_index_params_of(const struct voltagent_index_param *p, size_t n,
                                     struct tool_param *out)
{
    if (n > VS_MAX_PARAMS)
        return -E2BIG;
    for (size_t i = 0; i < n; i++) {
        out[i] = (struct tool_param){.name = p[i].name, .required = p[i].required, .desc = p[i].desc};
        switch (p[i].type) {
        case VS_STR: out[i].type = TOOL_PARAM_STRING; break;
        case VS_MODE:
            out[i].type = TOOL_PARAM_STRING;
            out[i].choices = voltagent_index_modes;
            break;
        case VS_BOOL: out[i].type = TOOL_PARAM_BOOL; break;
        case VS_NUM:
            out[i].type = TOOL_PARAM_NUMBER_TEXT;
            out[i].min = -HUGE_VAL;
            out[i].max = HUGE_VAL;
            break;
        case VS_INT:
            out[i].type = TOOL_PARAM_INT_TEXT;
            out[i].max = TOOL_PARAMS_JSON_MAX;
            break;
        case VS_OBJ_NULL: out[i].type = TOOL_PARAM_OBJECT_NULL; break;
        }
    }
    return 0;
}

int voltagent_index_args_parse(const char *tool, const struct voltagent_index_param *p, size_t n,
                               const cJSON *args, struct voltagent_index_args *a, struct broker_err *e)
{
    struct tool_param tp[VS_MAX_PARAMS];
    struct tool_param_bad b;
    memset(a, 0, sizeof(*a));
    if (voltagent_index_params_of(p, n, tp) < 0)
        return broker_fail(e, BROKER_E_INVALID, NULL, "%s has too many parameters", tool);
    if (tool_params_check(tp, n, args, a->v, a->n, NULL, NULL, &b) == 0)
        return 0;
    const char *nm = b.param ? b.param->name : NULL;
    switch (b.fault) {
    case TOOL_PARAM_NOT_OBJECT:
        return broker_fail(e, BROKER_E_INVALID, "arguments", "arguments must be an object");
    case TOOL_PARAM_UNKNOWN: /* zod would drop it; a typo must not become a call with the default */
        return broker_fail(e, BROKER_E_INVALID, NULL, "%s takes no argument \"%.60s\"", tool, b.key);
    case TOOL_PARAM_REQUIRED: return broker_fail(e, BROKER_E_INVALID, nm, "%s is required", nm);
    case TOOL_PARAM_NOT_FINITE:
        return broker_fail(e, BROKER_E_INVALID, nm, "%s must be a finite number", nm);
    case TOOL_PARAM_NOT_WHOLE:
    case TOOL_PARAM_RANGE:
        return broker_fail(e, BROKER_E_INVALID, nm, "%s must be a whole number from 0", nm);
    default: break;
    }
    switch (b.param->type) {
    case TOOL_PARAM_STRING:
        if (b.param->choices)
            return broker_fail(e, BROKER_E_INVALID, nm,
                               "%s must be one of \"bm25\", \"vector\", \"hybrid\"", nm);
        return broker_fail(e, BROKER_E_INVALID, nm, "%s must be a string", nm);
    case TOOL_PARAM_BOOL: return broker_fail(e, BROKER_E_INVALID, nm, "%s must be a boolean", nm);
    case TOOL_PARAM_OBJECT_NULL:
        return broker_fail(e, BROKER_E_INVALID, nm, "%s must be an object or null", nm);
    default: return broker_fail(e, BROKER_E_INVALID, nm, "%s must be a number", nm);
    }
}

cJSON *voltagent_index_tool_entry(const char *name, const char *desc,
                                  const struct voltagent_index_param *p, size_t n)
{
    struct tool_param tp[VS_MAX_PARAMS];
    if (voltagent_index_params_of(p, n, tp) < 0)
        return NULL;
    return tool_params_entry(name, desc, tp, n, TOOL_PARAMS_ALWAYS_REQUIRED | TOOL_PARAMS_NO_BOUNDS,
                             NULL);
}

cJSON *voltagent_index_output(const char *text)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "output", text)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
