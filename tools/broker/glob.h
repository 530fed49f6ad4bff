/* tools/broker/glob.h: glob matching for exclusion and inclusion patterns, with `**` (any number of
 * whole path segments), which fnmatch(FNM_PATHNAME) lacks. Matching simulates the pattern as an
 * automaton, linear in pattern x subject: a hostile pattern cannot make it backtrack. */
#ifndef CORRAL_GLOB_H
#define CORRAL_GLOB_H

#include <stdbool.h>
#include <stddef.h>

/* Longest pattern accepted (bytes). */
#define GLOB_MAX_PATTERN 1024

struct glob;

/* Syntax: `*` any run of characters but '/'; `?` one character but '/'; `[abc]`, `[a-z]`,
 * `[!x]` / `[^x]` one byte of (not of) a set, never '/'; `\c` the character c; `**` as a whole
 * segment: `**` + "/" any number of leading segments (none included), "/" + `**` at the end
 * everything beneath. Elsewhere `**` acts as `*`. Returns 0, -EINVAL for a malformed pattern
 * (empty, unterminated class, over GLOB_MAX_PATTERN) or -ENOMEM. */
int glob_new(const char *pattern, struct glob **out);
void glob_free(struct glob *g);
bool glob_matches(const struct glob *g, const char *path);

/* One-shot convenience: false for a malformed pattern. */
bool glob_match(const char *pattern, const char *path);

#endif
