/* sandbox/landlock.c: Landlock as a second wall behind the mount namespace: the program may
 * write only beneath its writable binds and /tmp (and to the device nodes), and may not signal
 * or reach abstract sockets outside its domain where the kernel supports scoping. */
#include "sandbox/internal.h"

#include <fcntl.h>
#include <stddef.h>
#include <sys/stat.h>
#include <linux/landlock.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/* Newer than this system's headers may know. */
#define LL_ACCESS_FS_TRUNCATE (1ULL << 14)        /* ABI 3 */
#define LL_ACCESS_FS_IOCTL_DEV (1ULL << 15)       /* ABI 5 */
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)               /* ABI 6 */

struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

int sandbox_landlock_abi(void)
{
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return v < 0 ? -errno : (int)v;
}

int landlock_ruleset_for_writes(const char *const *paths, size_t n, struct cerr *err)
{
    int abi = sandbox_landlock_abi();
    if (abi < 1)
        return cerr_set(err, -abi,
                        "landlock: not available in this kernel (%s); turn landlock off in the policy "
                        "to run without it",
                        strerror(-abi));
    uint64_t write_access = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                            LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
                            LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                            LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                            LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
    if (abi >= 2)
        write_access |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3)
        write_access |= LL_ACCESS_FS_TRUNCATE;
    struct ll_ruleset_attr attr = {.handled_access_fs = write_access};
    size_t attr_size = offsetof(struct ll_ruleset_attr, handled_access_net);
    if (abi >= 6) {
        attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
        attr_size = sizeof(attr);
    }
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
    if (rs < 0)
        return cerr_set(err, errno, "landlock: cannot create a ruleset: %s", strerror(errno));
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++) {
        int fd = open(paths[i], O_PATH | O_CLOEXEC);
        if (fd < 0) {
            r = cerr_set(err, errno, "landlock: %s: %s", paths[i], strerror(errno));
            break;
        }
        struct landlock_path_beneath_attr pb = {.allowed_access = write_access, .parent_fd = fd};
        struct stat st;
        if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
            pb.allowed_access = LANDLOCK_ACCESS_FS_WRITE_FILE | (abi >= 3 ? LL_ACCESS_FS_TRUNCATE : 0);
        if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
            r = cerr_set(err, errno, "landlock: cannot allow writes beneath %s: %s", paths[i],
                         strerror(errno));
        close(fd);
    }
    if (r < 0) {
        close(rs);
        return r;
    }
    return rs;
}

int landlock_restrict_to(int rs, struct cerr *err)
{
    int r = 0;
    if (syscall(SYS_landlock_restrict_self, rs, 0) < 0)
        r = cerr_set(err, errno, "landlock: cannot restrict the program: %s", strerror(errno));
    close(rs);
    return r;
}
