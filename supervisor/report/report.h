/* supervisor/report/report.h: `corral trail report`: one self-contained HTML page of a run, read
 * from its trail (summary and verification, workspace tree, task graph laid out by Graphviz,
 * timeline, denials by rule, network connections). Every string from the trail is escaped: the
 * page never runs or loads anything but its own inline script and style (docs/report.md). */
#ifndef CORRAL_REPORT_H
#define CORRAL_REPORT_H

#include "common/util.h"

#include <stdio.h>

/* Reads the trail at db (read-only; the entries up to the head `trail verify` checked) and writes
 * the page to out. 0, or a negative code with err set: -ENOENT/-EINVAL the file is missing or not
 * a trail, -ENOMEM, -EIO the page could not be written. A trail that fails verification still
 * gives a page, which says so at the top. */
int report_write(const char *db, FILE *out, struct cerr *err);

#endif
