/* common/util.c: see util.h. */
#include "util.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

void util_die(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n > sizeof(buf) - 2)
        n = (int)sizeof(buf) - 2;
    buf[n++] = '\n';
    (void)!write(2, "corral: ", 8);
    (void)!write(2, buf, (size_t)n);
    _exit(125);
}

int util_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s < '0' || *s > '9')
        return -EINVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE)
        return -ERANGE;
    if (*end)
        return -EINVAL;
    *out = v;
    return 0;
}

int util_parse_size(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -EINVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE)
        return -ERANGE;
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    case 't':
    case 'T':
        shift = 40;
        end++;
        break;
    default: return -EINVAL;
    }
    if (shift && (*end == 'i' || *end == 'I'))
        end++;
    if (shift && (*end == 'b' || *end == 'B'))
        end++;
    if (*end)
        return -EINVAL;
    if (shift && v > (UINT64_MAX >> shift))
        return -ERANGE;
    *out = (uint64_t)v << shift;
    return 0;
}

int util_parse_seconds(const char *s, double *out)
{
    if (!s || !*s || !((*s >= '0' && *s <= '9') || *s == '.'))
        return -EINVAL;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno == ERANGE)
        return -ERANGE;
    if (strcmp(end, "ms") == 0)
        v /= 1000.0;
    else if (strcmp(end, "s") == 0 || *end == '\0')
        ;
    else if (strcmp(end, "m") == 0)
        v *= 60.0;
    else if (strcmp(end, "h") == 0)
        v *= 3600.0;
    else
        return -EINVAL;
    if (!isfinite(v) || v <= 0 || v > 365.0 * 86400.0)
        return -ERANGE;
    *out = v;
    return 0;
}

int util_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

ssize_t util_read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, p + got, len - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

int util_write_fileat(int dirfd, const char *name, const char *s)
{
    int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    /* Control files take one write; a short or failed write is the kernel refusing the value. */
    ssize_t n = write(fd, s, strlen(s));
    int r = n < 0 ? -errno : ((size_t)n == strlen(s) ? 0 : -EIO);
    close(fd);
    return r;
}

int util_write_file(const char *path, const char *s)
{
    return util_write_fileat(AT_FDCWD, path, s);
}

int util_read_fileat(int dirfd, const char *name, char *buf, size_t cap)
{
    if (cap == 0)
        return -EINVAL;
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    ssize_t n = util_read_all(fd, buf, cap - 1);
    close(fd);
    if (n < 0)
        return (int)n;
    buf[n] = '\0';
    return 0;
}

int util_read_file(const char *path, char *buf, size_t cap)
{
    return util_read_fileat(AT_FDCWD, path, buf, cap);
}

char *util_printf(const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}

double util_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int util_open_nolinks(const char *path, int flags)
{
    struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC),
                           .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
    return fd < 0 ? -errno : (int)fd;
}

int util_read_to_eof(int fd, size_t max, char **out)
{
    size_t len = 0, cap = 65536;
    char *buf = malloc(cap);
    *out = NULL;
    for (;;) {
        if (!buf)
            return -ENOMEM;
        if (len + 1 == cap) {
            if (cap >= max) {
                free(buf);
                return -E2BIG;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                return -ENOMEM;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            return -e;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    *out = buf;
    return 0;
}

/* Whether any byte of W is below 0x20, '"' or '\\' (exact: the has-zero-byte trick applied to
 * W, W ^ '"' and W ^ '\\', with "below 0x20" as W - 0x20 borrowing into the high bit). */
static bool json_word_special(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
    return (((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b)) & highs;
}

size_t util_json_plain(const unsigned char *s, size_t n)
{
    size_t i = 0;
#ifdef __SSE2__
    /* 16 bytes at a time where x86-64 has it (every x86-64 does): the mask gives the stop
     * itself. A tool answer is scanned two or three times on the loop (printed, then the
     * trail's canonical form of the message), so this is on every call's path. */
    const __m128i below = _mm_set1_epi8(0x1f), quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    for (; n - i >= 16; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(v, below), v),
                                   _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)));
        unsigned m = (unsigned)_mm_movemask_epi8(hit);
        if (m)
            return i + (size_t)__builtin_ctz(m);
    }
#endif
    for (; n - i >= 8; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (json_word_special(w))
            break;
    }
    for (; i < n; i++)
        if (s[i] < 0x20 || s[i] == '"' || s[i] == '\\')
            break;
    return i;
}

size_t util_json_escape(unsigned char c, char out[6])
{
    static const char hex[] = "0123456789abcdef";
    out[0] = '\\';
    switch (c) {
    case '"': out[1] = '"'; return 2;
    case '\\': out[1] = '\\'; return 2;
    case '\b': out[1] = 'b'; return 2;
    case '\f': out[1] = 'f'; return 2;
    case '\n': out[1] = 'n'; return 2;
    case '\r': out[1] = 'r'; return 2;
    case '\t': out[1] = 't'; return 2;
    default:
        out[1] = 'u';
        out[2] = out[3] = '0';
        out[4] = hex[c >> 4];
        out[5] = hex[c & 15];
        return 6;
    }
}
