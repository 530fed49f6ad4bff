/* tools/broker/storage.c: a workspace's size (see storage.h). Walked afresh for each write that a
 * budget governs: commands change the workspace behind the broker's back, so a kept counter would
 * drift; the walk is bounded like the copies the runtime makes. */
#include "tools/broker/storage.h"

#include "tools/broker/broker.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STORAGE_MAX_DEPTH 256 /* past the 64 a checkpoint takes: a deeper tree is still counted */
#define STORAGE_MAX_ENTRIES 200000

struct tally {
    uint64_t bytes;
    size_t entries;
};

static int walk(int dfd, struct tally *t, unsigned depth)
{
    if (depth > STORAGE_MAX_DEPTH)
        return -EFBIG;
    struct broker_dirents d = {0};
    int r = broker_dirents_read(&d, dfd);
    for (size_t i = 0; r == 0 && i < d.n; i++) {
        if (++t->entries > STORAGE_MAX_ENTRIES) {
            r = -EFBIG;
            break;
        }
        const char *name = broker_dirent_name(&d, i);
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* gone meanwhile */
        if (S_ISREG(st.st_mode)) {
            t->bytes += (uint64_t)st.st_size;
        } else if (S_ISDIR(st.st_mode)) {
            int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0)
                continue;
            r = walk(sub, t, depth + 1);
            close(sub);
        }
    }
    broker_dirents_free(&d);
    return r;
}

int broker_storage_used(int root_fd, uint64_t *bytes)
{
    int fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct tally t = {0};
    int r = walk(fd, &t, 0);
    close(fd);
    *bytes = t.bytes;
    return r;
}
