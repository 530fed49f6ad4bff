/* common/util.h: the few helpers every module shares: cleanup attributes and ownership
 * hand-off, an error a person can read, sizes and durations as admins write them. */
#ifndef CORRAL_UTIL_H
#define CORRAL_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(util_freep)
#define _cleanup_close_ _cleanup_(util_closep)
#define _unused_ __attribute__((unused))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static inline void util_freep(void *p)
{
    free(*(void **)p);
}
static inline void util_closep(int *fd)
{
    if (*fd >= 0) {
        int saved = errno;
        close(*fd);
        errno = saved;
    }
}

/* Hand ownership out of a cleanup-managed local: the local becomes NULL / -1. */
static inline void *util_steal_ptr(void *pp)
{
    void **p = (void **)pp;
    void *r = *p;
    *p = NULL;
    return r;
}
#define steal_pointer(pp) ((__typeof__(*(pp)))util_steal_ptr(pp))
static inline int steal_fd(int *fd)
{
    int r = *fd;
    *fd = -1;
    return r;
}

/* An error for a person: what failed and why, in one line, plus a negative errno-style code
 * (common/cerr.c). */
struct cerr {
    int code;
    char msg[768];
};

/* Sets e (if not NULL) and returns -abs(code), so `return cerr_set(e, EINVAL, ...)` reads well. */
int cerr_set(struct cerr *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prefixes an existing message with context ("cgroup: " + msg). */
void cerr_prefix(struct cerr *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Only in a child before execve, or in main during start-up: print one line and exit 125. */
__attribute__((noreturn, format(printf, 1, 2))) void util_die(const char *fmt, ...);

/* "512M", "1G", "64k", "4096" (bytes; K/M/G/T are powers of 1024). 0 on success, -EINVAL/-ERANGE. */
int util_parse_size(const char *s, uint64_t *out);
/* "30", "1.5", "250ms", "2m": seconds as a double, > 0 and finite. */
int util_parse_seconds(const char *s, double *out);
/* A plain decimal unsigned integer, no sign, no trailing junk. */
int util_parse_u64(const char *s, uint64_t *out);

/* Whole-buffer I/O that retries on EINTR and short counts. Return 0 or -errno. */
int util_write_all(int fd, const void *buf, size_t len);
/* Reads FD to EOF into a new NUL-terminated buffer (*out, caller frees); at most MAX bytes.
 * 0, or -E2BIG past MAX, -ENOMEM, or the read's -errno (EINTR retried). */
int util_read_to_eof(int fd, size_t max, char **out);
ssize_t util_read_all(int fd, void *buf, size_t len); /* stops at EOF; returns bytes read or -errno */

/* Opens PATH (FLAGS: O_PATH, O_DIRECTORY, ...; O_CLOEXEC is added) refusing a symbolic link
 * anywhere in it (openat2 RESOLVE_NO_SYMLINKS: ELOOP), so the file opened is the one at that path
 * now, not where a link someone else could swap leads. An fd, or -errno. */
int util_open_nolinks(const char *path, int flags);

/* Small control files (cgroupfs, procfs): write a string / read up to cap-1 bytes, NUL-terminated. */
int util_write_file(const char *path, const char *s);
int util_write_fileat(int dirfd, const char *name, const char *s);
int util_read_file(const char *path, char *buf, size_t cap);
int util_read_fileat(int dirfd, const char *name, char *buf, size_t cap);

/* malloc that dies on failure is NOT offered: callers handle -ENOMEM. asprintf wrapper: NULL on failure. */
char *util_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The JSON escape of byte C, one that must be escaped in a string (a quote, a backslash or a
 * control byte), into OUT: \" \\ \b \f \n \r \t or \u00XX (lower-case hex, as cJSON and the
 * trail's canonical form write it). Returns its length (2 or 6). */
size_t util_json_escape(unsigned char c, char out[6]);
/* How many of the first N bytes of S a JSON string carries as they are (none below 0x20, no
 * '"', no '\\'): the run before the next byte util_json_escape must write. Checks 8 bytes at a
 * time, since what needs escaping is rare in most text. */
size_t util_json_plain(const unsigned char *s, size_t n);

/* Monotonic clock in seconds. */
double util_now(void);

#endif
