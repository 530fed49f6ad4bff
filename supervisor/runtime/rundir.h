/* supervisor/runtime/rundir.h: where `corral run` keeps its state (the trail, the run directory,
 * the control socket) is root's alone. Another local user must not be able to create, swap or
 * pre-bind anything there: every directory on the way is root's and writable by no one else
 * (an ancestor may be world-writable only when sticky, as /tmp), a directory corral makes is
 * made fresh (0700), and an existing file or socket is accepted only when it is root's. */
#ifndef CORRAL_RUNDIR_H
#define CORRAL_RUNDIR_H

#include "common/util.h"

#include <stdbool.h>

/* Whether DIR (an existing directory) is a safe place for corral's files: DIR and every
 * ancestor owned by root (or corral's own euid), DIR writable by its owner only, an ancestor
 * writable by others only when sticky. WHAT names it in the error ("the trail's directory"),
 * and the error names the fix. */
int rundir_check_dir(const char *dir, const char *what, struct cerr *err);

/* mkdir -p DIR (missing parts made 0700), then rundir_check_dir. */
int rundir_make_parents(const char *dir, const char *what, struct cerr *err);

/* FILE may be used: its directory passes rundir_check_dir, and FILE, if it exists, is a
 * regular file (SOCKET: a socket) owned by root (or corral's euid) that no one else may write. */
int rundir_check_file(const char *file, const char *what, bool socket, struct cerr *err);

/* Creates the run directory DIR fresh (0700; its parent checked) and returns an O_DIRECTORY fd
 * of it. An existing DIR is accepted only when it is an empty directory of root's, mode 0700
 * (made for this run by the admin), never through a symlink. The fd holds an exclusive flock on
 * DIR for as long as it is open (the supervisor's life: rundir_locked). */
int rundir_create(const char *dir, struct cerr *err);

/* A subdirectory NAME of the run directory DIRFD, made fresh (0700), as an O_DIRECTORY fd. */
int rundir_subdir(int dirfd, const char *name, struct cerr *err);

/* `corral run --resume`: the dead run's directory DIR (and its subdirectory NAME) opened again,
 * accepted only as corral made it: root's, mode 0700, its parents checked, never through a link. */
int rundir_reopen(const char *dir, struct cerr *err);
/* Whether a live supervisor holds the run directory DIR (its flock, which dies with it): 1 yes,
 * 0 no, -1 unknown (DIR cannot be opened). */
int rundir_locked(const char *dir);
int rundir_subdir_reopen(int dirfd, const char *name, struct cerr *err);

#endif
