/* common/cerr.c: struct cerr, the error every module returns with (declared in util.h, which
 * every file includes). */
#include "common/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int cerr_set(struct cerr *e, int code, const char *fmt, ...)
{
    if (code > 0)
        code = -code;
    if (code == 0)
        code = -EIO;
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
        va_end(ap);
        e->code = code;
    }
    return code;
}

void cerr_prefix(struct cerr *e, const char *fmt, ...)
{
    if (!e)
        return;
    char pre[256], old[sizeof(e->msg)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof(pre), fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof(old));
    size_t pl = strnlen(pre, sizeof(pre));
    memcpy(e->msg, pre, pl);
    size_t ol = strnlen(old, sizeof(e->msg) - 1 - pl);
    memcpy(e->msg + pl, old, ol);
    e->msg[pl + ol] = '\0';
}
