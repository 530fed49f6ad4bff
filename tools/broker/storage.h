/* tools/broker/storage.h: how many bytes a workspace holds, for its `storage_bytes` budget. */
#ifndef CORRAL_BROKER_STORAGE_H
#define CORRAL_BROKER_STORAGE_H

#include <stdint.h>

/* The bytes of every regular file beneath the directory ROOT_FD (sizes, hard links counted
 * once per name: what a copy of the workspace would hold), never following a link, at most
 * 256 directories deep and 200000 entries (past either: -EFBIG). 0 or -errno. */
int broker_storage_used(int root_fd, uint64_t *bytes);

#endif
