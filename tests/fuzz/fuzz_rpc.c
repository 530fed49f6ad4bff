/* tests/fuzz/fuzz_rpc.c: libFuzzer target for the agent protocol's wire layer: the line reader
 * (fed in pieces, with a small cap so over-long lines are common), then for every line the
 * decoder (UTF-8, depth, JSON, JSON-RPC envelope), then the answer encoders. Invariants: no
 * crash or leak, a decoded message has a method (or is a response), every encoded answer is one
 * line of valid JSON (an id kept as the client's raw text included), and rpc_json_print gives
 * exactly cJSON_PrintUnformatted's bytes. */
#include "supervisor/conn/rpc.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(const char *s, size_t n)
{
    if (!s || n == 0 || s[n - 1] != '\n' || memchr(s, '\n', n - 1))
        __builtin_trap();
    cJSON *j = cJSON_ParseWithLength(s, n);
    if (!j)
        __builtin_trap();
    cJSON_Delete(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    /* First byte: the chunk size for feeding; second: the message cap (small, to hit the limit). */
    size_t chunk = (size_t)data[0] % 64 + 1;
    size_t cap = (size_t)data[1] * 64 + 16;
    data += 2;
    size -= 2;
    struct rpc_reader *r = rpc_reader_new(cap);
    if (!r)
        return 0;
    for (size_t off = 0; off < size; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        if (rpc_reader_feed(r, data + off, n) < 0)
            break;
        const char *line;
        size_t len;
        enum rpc_frame f;
        while ((f = rpc_reader_next(r, &line, &len)) != RPC_FRAME_NONE) {
            if (f == RPC_FRAME_FAILED)
                break;
            if (f == RPC_FRAME_TOO_LONG)
                continue;
            if (len > cap)
                __builtin_trap();
            struct rpc_msg m;
            struct rpc_error e;
            size_t out_len;
            char *out;
            if (rpc_decode(line, len, RPC_DEFAULT_MAX_DEPTH, &m, &e) == 0) {
                if ((!m.method && !m.response) || !m.root)
                    __builtin_trap();
                /* The fast printer gives cJSON's bytes exactly. */
                char *mine = rpc_json_print(m.root, &out_len), *theirs = cJSON_PrintUnformatted(m.root);
                if (mine && theirs && (strlen(theirs) != out_len || memcmp(mine, theirs, out_len)))
                    __builtin_trap();
                free(mine);
                free(theirs);
                out = rpc_result_line(m.id, m.params ? m.params : m.root, &out_len);
                if (out)
                    check_line(out, out_len);
                free(out);
                rpc_msg_clear(&m);
            } else {
                out = rpc_error_line(e.id, e.code, e.message, NULL, &out_len);
                if (out)
                    check_line(out, out_len);
                free(out);
                rpc_error_clear(&e);
            }
        }
    }
    rpc_reader_free(r);
    return 0;
}
