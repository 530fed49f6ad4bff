/* supervisor/wacp/checkpoint.h: the checkpoint chain of each workspace. */
#ifndef CORRAL_WACP_CHECKPOINT_H
#define CORRAL_WACP_CHECKPOINT_H

#include "supervisor/wacp/internal.h"

struct wacp_checkpoint *wacp_checkpoint_find(const struct wacp *w, const char *id);
cJSON *wacp_checkpoint_json(const struct wacp_checkpoint *cp, bool with_files);
int wacp_checkpoint_method_create(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                                  struct wacp_err *e);
int wacp_checkpoint_method_list(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                                struct wacp_err *e);
void wacp_checkpoint_free(struct wacp_checkpoint *cp);

/* The supervisor's proof over the checkpoint (integrity.h), at creation. */
int wacp_checkpoint_seal(struct wacp *w, struct wacp_checkpoint *cp);
/* At integration (security spec 4.3): the checkpoint's proof, then every file object re-hashed.
 * A mismatch is recorded (integrity_violation) and fails E (code integrity_violation). */
int wacp_checkpoint_verify(struct wacp *w, const struct wacp_checkpoint *cp, struct wacp_err *e);
/* The same in its parts, for integration's file work on the pool: the proof (on the loop), the
 * objects re-hashed (anywhere: touches no model state; < 0 with BAD at the first that does not
 * match), and the violation of BAD recorded (on the loop). */
struct wacp_object_fault {
    char path[208];
    char expected[INTEGRITY_HEX], actual[INTEGRITY_HEX];
};
int wacp_checkpoint_verify_mac(struct wacp *w, const struct wacp_checkpoint *cp, struct wacp_err *e);
int wacp_checkpoint_objects_check(const char *objects, const struct wacp_manifest *files,
                                  struct wacp_object_fault *bad);
int wacp_checkpoint_object_violation(struct wacp *w, const struct wacp_checkpoint *cp,
                                     const struct wacp_object_fault *bad, struct wacp_err *e);

#endif
