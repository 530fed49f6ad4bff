/* supervisor/runtime/control_human.h: the request side of the control socket, for the human
 * highway. A client writes one JSON request line {"op": ..., ...} and reads one JSON answer line
 * {"ok": true, "result": ...} or {"ok": false, "error": {"code", "message"}}. Who asks is the
 * kernel's word (SO_PEERCRED), never the request's. */
#ifndef CORRAL_CONTROL_HUMAN_H
#define CORRAL_CONTROL_HUMAN_H

#include "common/util.h"

#include <sys/types.h>

#define CONTROL_REQUEST_MAX ((size_t)2 << 20) /* one request line: an injected payload fits */

struct control_peer {
    pid_t pid;
    uid_t uid;
    gid_t gid;
};
/* The credentials of the process at the other end of FD (a connected Unix socket). */
int control_human_peer_get(int fd, struct control_peer *p);
/* 0 when the socket FD (connected to PATH) is served by root or by this process's own user;
 * else an error that says by whom. */
int control_human_served_by_run(int fd, const char *path, struct cerr *err);

/* Client side: connects to PATH, sends LINE (a newline is added) and reads the answer to EOF
 * (malloc'd, NUL terminated, at most 64 MiB). -ENOENT / -ECONNREFUSED when no run listens. */
int control_human_request(const char *path, const char *line, char **out, struct cerr *err);

#endif
