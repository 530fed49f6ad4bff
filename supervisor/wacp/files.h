/* supervisor/wacp/files.h: the files of workspaces (host directories), never following links. */
#ifndef CORRAL_WACP_FILES_H
#define CORRAL_WACP_FILES_H

#include "supervisor/wacp/internal.h"

#define WACP_FILES_MAX_FILES 20000
#define WACP_FILES_MAX_BYTES (1ull << 30) /* per copy or snapshot */
#define WACP_FILES_MAX_FILE (256ull << 20)
void wacp_files_manifest_clear(struct wacp_manifest *m);
int wacp_files_manifest_add(struct wacp_manifest *m, const char *path, const char *hash, uint64_t size);
/* Appends every entry of FROM (NULL: none) to TO, for file work that must not read the model. */
int wacp_files_manifest_copy(struct wacp_manifest *to, const struct wacp_manifest *from);
const struct wacp_file *wacp_files_manifest_get(const struct wacp_manifest *m, const char *path);
/* mkdir -p of an absolute host path the runtime made itself (RUN_DIR). */
int wacp_files_mkdirs(const char *path, struct cerr *err);
/* Workspace directories are named by fd (DIR: the root's is opened once at the start of the
 * run, without links, and never looked up by path again: a user who owns a directory above it
 * cannot swap it). Opens a directory the runtime made (RUN_DIR/ws/ID), not through a final
 * link: an fd, or < 0 with ERR set. */
int wacp_files_dir_open(const char *path, struct cerr *err);
/* Copies the regular files and directories of SRC_FD into DST (created), skipping anything else,
 * bounded; fills BASE with the hashes of what was copied. */
int wacp_files_copy_tree(int src_fd, const char *dst, struct wacp_manifest *base, struct cerr *err);
/* Removes the directory PATH and everything under it, never following a link (a failed or
 * abandoned copy). Best effort. */
void wacp_files_remove_tree(const char *path);
/* Hashes every regular file under DIR. */
int wacp_files_scan(int dir_fd, struct wacp_manifest *out, struct cerr *err);
/* Snapshots PATHS (NULL: every file that differs from BASE, and the deletions) of DIR into
 * OBJECTS/HASH; fills OUT (sorted by path). */
int wacp_files_snapshot(int dir_fd, const char *const *paths, size_t n_paths,
                        const struct wacp_manifest *base, const char *objects, struct wacp_manifest *out,
                        struct cerr *err);
/* How DIR/REL is now, as a resume compares it with the trail: its content's hash (HEX), ""
 * when absent (or a link, or not a regular file), WACP_FILES_IS_DIR for a directory. */
#define WACP_FILES_IS_DIR "dir" /* never a hash (not 64 hex digits) */
int wacp_files_state_at(int dir_fd, const char *rel, char hex[WACP_HASH_HEX], struct cerr *err);
/* The paths of M whose copy in DIR differs from their hash in BASE (changed behind the child). */
int wacp_files_overlaps(int dir_fd, const struct wacp_manifest *m, const struct wacp_manifest *base,
                        struct wacp_manifest *out, struct cerr *err);
/* The rules integration and checkpoints apply to paths (files.c). */
#define WACP_FILES_MAX_DEPTH 64 /* directories a workspace may nest (the copy's walk stops there) */
/* Every path of M clean, no deeper than WACP_FILES_MAX_DEPTH, not protected. */
int wacp_files_check_paths(const struct wacp_manifest *m, const struct wacp_files_rules *rules,
                           struct cerr *err);
/* Integrates M (objects from OBJECTS, each verified by its hash) into DIR, minus SKIP; checks
 * everything before the first byte changes (see files.c). */
int wacp_files_integrate(int dir_fd, const struct wacp_manifest *m,
                         const struct wacp_manifest *skip, const char *objects,
                         const struct wacp_files_rules *rules, struct cerr *err);
/* Whether REL is a clean relative path (no "..", no "/" at either end, no empty parts). */
bool wacp_files_path_ok(const char *rel);
void wacp_files_hash_hex(const void *data, size_t len, char out[WACP_HASH_HEX]);
cJSON *wacp_files_manifest_json(const struct wacp_manifest *m);
/* M (its JSON) stored as a content-addressed object in OBJECTS, so that a workspace's base (its
 * files at creation) can be rebuilt after a crash; HEX gets the object's hash. */
int wacp_files_manifest_store(const struct wacp_manifest *m, const char *objects,
                              char hex[WACP_HASH_HEX], struct cerr *err);
/* Reads the manifest HEX back from OBJECTS into OUT (empty), its bytes checked against HEX. */
int wacp_files_manifest_load(const char *objects, const char *hex, struct wacp_manifest *out,
                             struct cerr *err);

#endif
