/* supervisor/wacp/integrity.h: message integrity (WACP security spec, section 4). Every envelope
 * and checkpoint carries a keyed MAC (BLAKE2b-256 keyed, libsodium crypto_generichash) under a
 * key drawn at the start of the run and held only by the supervisor: an agent never sees it, so
 * it cannot forge one, and the sending workspace is inside what is MACed, so a proof is bound to
 * its sender. Envelopes are verified before every delivery attempt, checkpoints (and each of
 * their stored file objects, re-hashed) before integration reads them. */
#ifndef CORRAL_WACP_INTEGRITY_H
#define CORRAL_WACP_INTEGRITY_H

#include <cjson/cJSON.h>
#include <sodium.h>
#include <stdbool.h>
#include <stddef.h>

#define INTEGRITY_ALGORITHM "blake2b-256-keyed"
#define INTEGRITY_HEX (crypto_generichash_BYTES * 2 + 1)

struct integrity_key {
    unsigned char k[crypto_generichash_KEYBYTES];
};
/* A fresh random key (kept in locked memory where the system allows). */
void integrity_key_new(struct integrity_key *key);
void integrity_key_wipe(struct integrity_key *key);

/* A MAC over a list of fields: each is length-prefixed (8 bytes, little-endian) so that no two
 * lists share an encoding; a NULL field is distinct from "". JSON values go in as their
 * unformatted text. OUT: hex. */
struct integrity_field {
    const char *s;     /* a string field, or NULL */
    const cJSON *json; /* or a JSON field (used when S is NULL and JSON is not) */
};
int integrity_mac(const struct integrity_key *key, const char *kind, const struct integrity_field *f,
                  size_t n, char out[INTEGRITY_HEX]);
/* Whether HEX is the MAC of the fields (constant time). */
bool integrity_check(const struct integrity_key *key, const char *kind, const struct integrity_field *f,
                     size_t n, const char *hex);

/* Re-hashes the object OBJECTS/HASH (unkeyed BLAKE2b-256, the store's content address): 1 it
 * matches, 0 it does not (ACTUAL filled: the hash found, or "missing"), < 0 an I/O error. */
int integrity_object_ok(const char *objects, const char *hash, char actual[INTEGRITY_HEX]);

#endif
