/* tools/voltagent/index.h: the in-memory search index behind the VoltAgent search and skills
 * toolkits (upstream's WorkspaceBm25Index, its embedding + vector store, and their scores), the
 * per-session state both toolkits keep in the session slot, and the small argument table the two
 * toolkits share. Internal to tools/. */
#ifndef CORRAL_TOOLS_VOLTAGENT_INDEX_H
#define CORRAL_TOOLS_VOLTAGENT_INDEX_H

#include "tools/broker/broker.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- embedding ------------------------------------------------------------------------------ */

/* The local embedding (the default; deterministic, offline, nothing downloaded): every word
 * (upstream's BM25 tokens: lower-cased ASCII letters and digits) and every character trigram of
 * "^word$" is hashed (FNV-1a, 64 bits) into one of VS_LOCAL_DIM buckets with a sign taken from
 * the hash (signed feature hashing), words weighing 1 and trigrams 0.5; the vector is then
 * L2-normalised, so a dot product is the cosine. Trigrams let "index" meet "indexing". */
#define VS_LOCAL_DIM 512
/* Largest dimension accepted from an external embedding command. */
#define VS_MAX_DIM 4096

/* Embeds one text with the local embedding into out[VS_LOCAL_DIM]. Returns whether the text had
 * any feature (an all-zero vector otherwise). */
bool voltagent_index_embed_local(const char *text, size_t len, float *out);

/* Embeds N texts: with the local embedding, or, when ctx->limits.embedding_command is set, by
 * that command run through broker_command in a command sandbox (texts on stdin as a JSON array
 * of strings, one JSON array of numbers per text printed on stdout as a JSON array; every vector
 * of one dimension, at most VS_MAX_DIM). *vecs gets n * *dim floats, each vector L2-normalised
 * (malloc'd). -1 with e set when the command fails or prints something else. */
int voltagent_index_embed(const struct tool_ctx *ctx, const char *const *texts, const size_t *lens,
                          size_t n, float **vecs, size_t *dim, struct broker_err *e);

/* ---- tokens --------------------------------------------------------------------------------- */

/* Upstream's tokenize: text.toLowerCase().split(/[^a-z0-9]+/). Calls FN for each token
 * (lower-cased into a scratch buffer; tokens longer than 256 bytes are cut there). */
void voltagent_index_tokens(const char *text, size_t len,
                            void (*fn)(const char *tok, size_t n, void *arg), void *arg);

/* ---- the index ------------------------------------------------------------------------------ */

struct voltagent_index_doc {
    char *id;      /* the document's path ("/src/a.ts") or skill id; owned */
    char *content; /* owned, NUL-terminated */
    size_t len;
    cJSON *metadata; /* owned, may be NULL */
    char *label;     /* a second name (the skill's name), may be NULL; owned */
    /* private to the index */
    struct voltagent_index_term *terms; /* sorted by hash */
    size_t n_terms;
    uint64_t n_tokens;
    float *vec; /* dim floats, or NULL */
    size_t dim;
    size_t cost;
};

struct voltagent_index;

/* Caps: at most max_docs documents and max_bytes of memory held for them (content, terms,
 * vectors, metadata) together. */
int voltagent_index_new(size_t max_docs, size_t max_bytes, struct voltagent_index **out);
void voltagent_index_free(struct voltagent_index *ix);
size_t voltagent_index_count(const struct voltagent_index *ix);
size_t voltagent_index_bytes(const struct voltagent_index *ix);
const struct voltagent_index_doc *voltagent_index_doc(const struct voltagent_index *ix, size_t i);
/* The document with that id, or -1. */
long voltagent_index_find(const struct voltagent_index *ix, const char *id);

/* A document ready to be added: content taken over, terms counted, vector (if any) copied.
 * Built outside any lock (tokenising is the costly part). NULL on ENOMEM. */
struct voltagent_index_doc *voltagent_index_doc_new(const char *id, char *content_take, size_t len,
                                                    cJSON *metadata_take, const char *label,
                                                    const float *vec, size_t dim);
void voltagent_index_doc_free(struct voltagent_index_doc *d);

/* Whether adding DOCS (replacing same-id documents) would keep the index within its caps; when
 * not, e says which cap and by how much (BROKER_E_TOO_LARGE). */
int voltagent_index_fits(const struct voltagent_index *ix, struct voltagent_index_doc *const *docs,
                         size_t n, struct broker_err *e);
/* Adds (or replaces) every document, taking them over; check voltagent_index_fits first (this fails
 * the same way, adding nothing). The vectors of one index have one dimension: a document with
 * another is refused. */
int voltagent_index_add(struct voltagent_index *ix, struct voltagent_index_doc **docs, size_t n,
                        struct broker_err *e);
/* Empties the index (skills re-discovery). */
void voltagent_index_clear(struct voltagent_index *ix);

struct voltagent_index_scored {
    size_t doc;
    double score;
};
/* Document filter for a query: true keeps doc D. NULL keeps all. */
typedef bool (*voltagent_index_filter_fn)(const struct voltagent_index_doc *d, void *arg);
/* Upstream's BM25 (k1 1.5, b 0.75, idf ln(1 + (N - df + 0.5) / (df + 0.5))) over the documents
 * the filter keeps; scores > 0 only, best first, at most LIMIT. *out malloc'd (NULL when none). */
int voltagent_index_bm25(const struct voltagent_index *ix, const char *query,
                         voltagent_index_filter_fn filter, void *arg, size_t limit,
                         struct voltagent_index_scored **out, size_t *n);
/* Upstream's in-memory vector store: score (cosine + 1) / 2 against every document with a
 * vector the filter keeps, best first, at most LIMIT. QVEC has the index's dimension. */
int voltagent_index_vector(const struct voltagent_index *ix, const float *qvec, size_t dim,
                           voltagent_index_filter_fn filter, void *arg, size_t limit,
                           struct voltagent_index_scored **out, size_t *n);
/* The dimension of the index's vectors (0 while it holds none). */
size_t voltagent_index_dim(const struct voltagent_index *ix);

/* Upstream's buildSnippet: whitespace runs collapsed to one space; when longer than LENGTH
 * bytes, the LENGTH bytes around the first query token found (cut at character boundaries).
 * malloc'd. */
char *voltagent_index_snippet(const char *content, size_t len, const char *query, size_t length);
/* Upstream's buildLineRange: the first and last line holding any query token. false: none. */
bool voltagent_index_line_range(const char *content, size_t len, const char *query, uint64_t *start,
                                uint64_t *end);

/* ---- per-session state (the session slot of the voltagent surface) -------------------------- */

struct voltagent_skills;
struct voltagent_state {
    struct voltagent_index *search;  /* workspace_index / workspace_search */
    struct voltagent_skills *skills; /* discovered skills, their index, the active set */
    /* Set by the skills toolkit (skills.c, above this file) when it makes `skills`, so dropping
     * the session frees them without this file calling up into the toolkit. */
    void (*skills_free)(struct voltagent_skills *s);
};
/* The session's state, made on first use; NULL when the ctx has no session or on ENOMEM.
 * Every use between tool_session_lock and tool_session_unlock. */
struct voltagent_state *voltagent_state(const struct tool_ctx *ctx);
/* Frees the skills part (voltagent_skills.c). */
void voltagent_skills_free(struct voltagent_skills *s);

/* ---- SKILL.md front matter (voltagent_skills.c) --------------------------------------------- */

/* What upstream takes from a SKILL.md's YAML front matter (gray-matter): strings only where it
 * wants strings (a plain scalar YAML resolves to a number, boolean, null or date is not one),
 * and string lists that may also be given as one string. NULL / 0: not given. */
struct voltagent_skill_meta {
    char *id, *name, *description, *version;
    char **tags, **references, **scripts, **assets;
    size_t n_tags, n_references, n_scripts, n_assets;
};
#define VS_SKILL_MAX_FRONTMATTER (64 * 1024)
#define VS_SKILL_MAX_LIST 256
/* Splits TEXT into front matter and body as gray-matter does (an opening "---" line, YAML up to
 * the next "---" line, or to the end when there is none) and reads the front matter with
 * libyaml. *body points into TEXT (the instructions, trimmed). A file without front matter is
 * all body. -1 with e set (BROKER_E_INVALID) for YAML that does not parse, front matter that
 * is not a mapping, or over VS_SKILL_MAX_FRONTMATTER bytes. Allowlist entries with a ".."
 * segment or '~' are dropped (a skill may only point inside the workspace, by its own root). */
int voltagent_skills_frontmatter(const char *text, size_t len, struct voltagent_skill_meta *m,
                                 const char **body, size_t *body_len, struct broker_err *e);
void voltagent_skills_meta_clear(struct voltagent_skill_meta *m);

/* Per-session caps of the search index. */
#define VS_MAX_DOCS 5000
#define VS_MAX_BYTES ((size_t)64 << 20)

/* ---- arguments (the search and skills toolkits' zod schemas) -------------------------------- */

enum voltagent_index_ptype { VS_STR, VS_BOOL, VS_NUM, VS_INT, VS_MODE, VS_OBJ_NULL };
struct voltagent_index_param {
    const char *name;
    enum voltagent_index_ptype type;
    bool required;
    const char *desc;
};
#define VS_MAX_PARAMS 12
struct voltagent_index_args {
    const cJSON *v[VS_MAX_PARAMS]; /* NULL: absent (or JSON null) */
    double n[VS_MAX_PARAMS];       /* VS_NUM / VS_INT values (z.coerce.number) */
};
/* Checks ARGS against the table: an object, no unknown field, types (numbers may be strings
 * holding one, as z.coerce.number takes them; VS_INT: whole and >= 0), required fields. */
int voltagent_index_args_parse(const char *tool, const struct voltagent_index_param *p, size_t n,
                               const cJSON *args, struct voltagent_index_args *a, struct broker_err *e);
/* The tools/list entry {name, description, inputSchema} for the table. NULL on ENOMEM. */
cJSON *voltagent_index_tool_entry(const char *name, const char *desc,
                                  const struct voltagent_index_param *p, size_t n);
/* {"output": TEXT}, and the error result for E. */
cJSON *voltagent_index_output(const char *text);

#endif
