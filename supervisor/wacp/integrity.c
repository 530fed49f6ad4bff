/* supervisor/wacp/integrity.c: see integrity.h. */
#include "supervisor/wacp/integrity.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void integrity_key_new(struct integrity_key *key)
{
    sodium_mlock(key->k, sizeof(key->k)); /* best effort: never swapped out where allowed */
    crypto_generichash_keygen(key->k);
}

void integrity_key_wipe(struct integrity_key *key)
{
    sodium_munlock(key->k, sizeof(key->k));
}

static void put_len(crypto_generichash_state *st, uint64_t n)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(n >> (8 * i));
    crypto_generichash_update(st, b, sizeof(b));
}

static int put_field(crypto_generichash_state *st, const struct integrity_field *f)
{
    if (f->s) {
        unsigned char tag = 's';
        crypto_generichash_update(st, &tag, 1);
        put_len(st, strlen(f->s));
        crypto_generichash_update(st, (const unsigned char *)f->s, strlen(f->s));
        return 0;
    }
    if (f->json) {
        char *text = cJSON_PrintUnformatted(f->json);
        if (!text)
            return -ENOMEM;
        unsigned char tag = 'j';
        crypto_generichash_update(st, &tag, 1);
        put_len(st, strlen(text));
        crypto_generichash_update(st, (const unsigned char *)text, strlen(text));
        free(text);
        return 0;
    }
    unsigned char tag = 'n';
    crypto_generichash_update(st, &tag, 1);
    return 0;
}

static int mac_raw(const struct integrity_key *key, const char *kind, const struct integrity_field *f,
                   size_t n, unsigned char out[crypto_generichash_BYTES])
{
    crypto_generichash_state st;
    crypto_generichash_init(&st, key->k, sizeof(key->k), crypto_generichash_BYTES);
    struct integrity_field k = {.s = kind};
    put_field(&st, &k);
    put_len(&st, n);
    for (size_t i = 0; i < n; i++)
        if (put_field(&st, &f[i]) < 0)
            return -ENOMEM;
    crypto_generichash_final(&st, out, crypto_generichash_BYTES);
    return 0;
}

int integrity_mac(const struct integrity_key *key, const char *kind, const struct integrity_field *f,
                  size_t n, char out[INTEGRITY_HEX])
{
    unsigned char d[crypto_generichash_BYTES];
    int r = mac_raw(key, kind, f, n, d);
    if (r < 0)
        return r;
    sodium_bin2hex(out, INTEGRITY_HEX, d, sizeof(d));
    return 0;
}

bool integrity_check(const struct integrity_key *key, const char *kind, const struct integrity_field *f,
                     size_t n, const char *hex)
{
    unsigned char want[crypto_generichash_BYTES], got[crypto_generichash_BYTES];
    size_t len = 0;
    if (!hex || strlen(hex) != INTEGRITY_HEX - 1 ||
        sodium_hex2bin(got, sizeof(got), hex, strlen(hex), NULL, &len, NULL) < 0 || len != sizeof(got))
        return false;
    if (mac_raw(key, kind, f, n, want) < 0)
        return false;
    return sodium_memcmp(want, got, sizeof(want)) == 0;
}

int integrity_object_ok(const char *objects, const char *hash, char actual[INTEGRITY_HEX])
{
    char path[4096];
    if (snprintf(path, sizeof(path), "%s/%s", objects, hash) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        snprintf(actual, INTEGRITY_HEX, "missing");
        return errno == ENOENT ? 0 : -errno;
    }
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, 32);
    unsigned char buf[65536];
    for (;;) {
        ssize_t r = read(fd, buf, sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            return -e;
        }
        if (r == 0)
            break;
        crypto_generichash_update(&st, buf, (size_t)r);
    }
    close(fd);
    unsigned char d[32];
    crypto_generichash_final(&st, d, sizeof(d));
    sodium_bin2hex(actual, INTEGRITY_HEX, d, sizeof(d));
    return strcmp(actual, hash) == 0;
}
