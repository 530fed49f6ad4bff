/* supervisor/trail/scrub.h: what an agent may not learn from the trail it queries
 * (wacp/trail.query): the host side of its confinement. Entries keep their shape and hashes
 * (the chain is verified on the admin's side), only the copy an agent is shown is scrubbed. */
#ifndef CORRAL_TRAIL_SCRUB_H
#define CORRAL_TRAIL_SCRUB_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Removes from the entry J (as trail_entry_to_json gives it), at any depth of its body, the
 * fields that describe the host (pids, cgroups, host paths of programs, logs, the run directory,
 * the policy file, the sandbox profile with its mounts), and replaces every other string that
 * names one of the N HOST_PATHS (the run directory, the root workspace, the trail) by
 * "(host path)". */
void trail_scrub_for_agent(cJSON *j, const char *const *host_paths, size_t n);

#endif
