/* supervisor/conn/rpc.h: the agent protocol's wire layer: one JSON-RPC 2.0 message per line.
 * A per-connection line reader with a hard cap on one message, and a decoder that checks
 * UTF-8, nesting depth, JSON and the JSON-RPC 2.0 envelope, in that order, before anything
 * acts on a message. Pure: no I/O, no globals; every input is hostile. */
#ifndef CORRAL_RPC_H
#define CORRAL_RPC_H

#include "common/util.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* JSON-RPC 2.0 error codes, plus -32002 (request before initialize, as LSP and MCP servers use). */
enum {
    RPC_PARSE_ERROR = -32700,
    RPC_INVALID_REQUEST = -32600,
    RPC_METHOD_NOT_FOUND = -32601,
    RPC_INVALID_PARAMS = -32602,
    RPC_INTERNAL_ERROR = -32603,
    RPC_NOT_INITIALIZED = -32002,
};

#define RPC_DEFAULT_MAX_MESSAGE ((size_t)8 << 20)
#define RPC_DEFAULT_MAX_DEPTH 64u
#define RPC_MAX_VALUES (1u << 20) /* JSON values in one message: its parsed tree stays under ~90 MB */

/* ---- framing ---- */

enum rpc_frame {
    RPC_FRAME_NONE = 0, /* no complete line buffered: read more */
    RPC_FRAME_LINE,     /* *line / *len: one message, without its '\n' (and a trailing '\r') */
    RPC_FRAME_TOO_LONG, /* a line passed the cap: answer once; the rest of it is discarded */
    RPC_FRAME_FAILED,   /* the reader failed (rpc_reader_fail): sticky, nothing more is returned */
};

struct rpc_reader;

/* A reader whose buffer grows on demand up to max_message + one read's worth. NULL on -ENOMEM. */
struct rpc_reader *rpc_reader_new(size_t max_message);
void rpc_reader_free(struct rpc_reader *r);

/* Where to read into, and how much room there is (at least want bytes, grown within the cap).
 * Returns NULL on -ENOMEM. After read(2), call rpc_reader_commit with the count. */
char *rpc_reader_space(struct rpc_reader *r, size_t want, size_t *room);
void rpc_reader_commit(struct rpc_reader *r, size_t n);

/* Appends bytes (copying); for tests and the fuzz target. 0 or -ENOMEM. */
int rpc_reader_feed(struct rpc_reader *r, const void *data, size_t len);

/* The next event. A returned line points into the reader and is valid until the next call of
 * any rpc_reader_* function. Blank lines are skipped. */
enum rpc_frame rpc_reader_next(struct rpc_reader *r, const char **line, size_t *len);

/* Bytes buffered but not yet returned (a partial line), for back-pressure accounting. */
size_t rpc_reader_pending(const struct rpc_reader *r);
/* The pending bytes themselves (rpc_reader_pending of them), for a look before they are framed. */
const char *rpc_reader_peek(const struct rpc_reader *r);
/* Inside an over-long line, whose bytes are being dropped up to its newline. */
bool rpc_reader_discarding(const struct rpc_reader *r);
/* Marks the reader failed for good: every later rpc_reader_next returns RPC_FRAME_FAILED. */
void rpc_reader_fail(struct rpc_reader *r);
bool rpc_reader_failed(const struct rpc_reader *r);

/* ---- decoding ---- */

/* One decoded message. All pointers are into root, which the message owns. A numeric id that
 * cJSON would not print back as sent (1e400, a 23-digit integer) is a cJSON_Raw holding the
 * client's own text, so every answer echoes it; the trail stores such an id as a string. */
struct rpc_msg {
    cJSON *root;
    const char *method;  /* NULL only for a response (response == true) */
    const cJSON *id;     /* NULL: a notification (no response is sent) */
    const cJSON *params; /* NULL when absent; else an object or an array */
    bool response;       /* an answer to a request corral sent (id set; result or error) */
    const cJSON *result; /* a response's result, or NULL */
    const cJSON *error;  /* a response's error, or NULL */
};

/* A decoding failure: the JSON-RPC error to answer with. id is a copy of the request's id when
 * it could be read (a valid envelope with a bad field), else NULL (answered with id null). */
struct rpc_error {
    int code;
    char message[256];
    cJSON *id;
};

/* Checks the line (UTF-8, depth <= max_depth, one JSON value, a JSON-RPC 2.0 request,
 * notification or response; batches are refused with -32600) and fills msg. A string holding
 * \u0000 is refused (-32602, invalid params) with the request's id whenever the id itself
 * is readable; only an unreadable message is answered with id null. Returns 0, or -EINVAL with err
 * filled (then err->id, if not NULL, is owned by the caller: rpc_error_clear). */
int rpc_decode(const char *line, size_t len, unsigned max_depth, struct rpc_msg *msg,
               struct rpc_error *err);
void rpc_msg_clear(struct rpc_msg *msg);
void rpc_error_clear(struct rpc_error *err);

/* Byte offset of the first invalid UTF-8 sequence (overlongs, surrogates and code points past
 * U+10FFFF are invalid), or len when the whole buffer is valid. */
size_t rpc_utf8_check(const char *s, size_t len);
/* V as JSON, the bytes cJSON_PrintUnformatted gives, faster (long strings copied in runs);
 * LEN (may be NULL) gets its length. NULL when out of memory or V is malformed. */
char *rpc_json_print(const cJSON *v, size_t *len);
#define RPC_PRINT_DEPTH_MAX 10000
/* Deepest nesting of arrays/objects outside strings; stops counting past limit (returns limit+1). */
unsigned rpc_json_depth(const char *s, size_t len, unsigned limit);

/* An upper bound of the JSON values (cJSON nodes) in S, counted like rpc_json_depth; stops past
 * limit (returns limit+1). */
size_t rpc_json_values(const char *s, size_t len, size_t limit);
/* Bytes of heap the parsed tree V holds (V and what is inside it; 0 for NULL), as malloc sees
 * them: what keeping it costs. */
size_t rpc_json_cost(const cJSON *v);

/* ---- encoding: each returns a malloc'd line ending in '\n' (length in *len), or NULL on ENOMEM ---- */

/* {"jsonrpc":"2.0","id":ID,"result":RESULT}; id NULL is written as null. RESULT is borrowed. */
char *rpc_result_line(const cJSON *id, const cJSON *result, size_t *len);
/* {"jsonrpc":"2.0","id":ID,"error":{"code":C,"message":M[,"data":DATA]}}; DATA borrowed, may be NULL. */
char *rpc_error_line(const cJSON *id, int code, const char *message, const cJSON *data, size_t *len);

#endif
