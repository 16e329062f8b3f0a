/*
 * The key of the values gantryd derives and never stores (secrets.c has
 * what uses them): the SHA-256 of the --secret-key file (DATA_DIR/secret.key
 * by default, made on first start from getrandom), held in memory only. A
 * derived value is HMAC-SHA256(key, "PURPOSE\nSUBJECT") in hex, so every
 * replica given the same file derives the same values, across restarts.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "server/secretkey.h"

#define KEY_FILE "secret.key"
#define KEY_BYTES 32
#define KEY_FILE_MAX 4096

/* Write KEY_BYTES random bytes as hex into a new file at path (0600,
 * never over an existing one: a replica that lost the race reads it). */
static int key_create(const char *path, struct gt_err *err)
{
    unsigned char raw[KEY_BYTES];
    size_t got = 0;
    while (got < sizeof(raw)) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0 && errno != EINTR) {
            return gt_err_set(err, -errno, "getrandom: %s", strerror(errno));
        }
        got += n > 0 ? (size_t)n : 0;
    }
    char hex[2 * KEY_BYTES + 2];
    for (size_t i = 0; i < sizeof(raw); i++) {
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    }
    OPENSSL_cleanse(raw, sizeof(raw));
    hex[2 * KEY_BYTES] = '\n';
    hex[2 * KEY_BYTES + 1] = '\0';
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        return errno == EEXIST ? 0 : gt_err_set(err, -errno, "%s", strerror(errno));
    }
    ssize_t w = write(fd, hex, strlen(hex));
    int rc = w == (ssize_t)strlen(hex) && fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    OPENSSL_cleanse(hex, sizeof(hex));
    if (rc) {
        unlink(path);
        return gt_err_set(err, rc, "write: %s", strerror(-rc));
    }
    return 0;
}

int gt_secretkey_load(struct gt_server *s, struct gt_err *err)
{
    const char *flag = s->cfg->secret_key;
    char *path = flag ? gt_xstrdup(flag) : gt_xasprintf("%s/" KEY_FILE, s->cfg->data_dir);
    int rc = flag ? 0 : key_create(path, err);
    char *text = NULL;
    size_t len = 0;
    rc = rc ? rc : gt_file_read(path, KEY_FILE_MAX, &text, &len, err);
    if (rc == 0 && len < KEY_BYTES) {
        rc = gt_err_set(err, GT_EINVAL, "want at least %d bytes of key, not %zu", KEY_BYTES, len);
    }
    if (rc == 0) {
        SHA256((const unsigned char *)text, len, s->secret_key);
    }
    if (text) {
        OPENSSL_cleanse(text, len);
        free(text);
    }
    if (rc) {
        gt_err_prefix(err, "--secret-key %s", path);
    }
    free(path);
    return rc;
}

void gt_secretkey_derive(const struct gt_server *s, const char *purpose, const char *subject,
                         char hex[65])
{
    char *msg = gt_xasprintf("%s\n%s", purpose, subject);
    unsigned char mac[SHA256_DIGEST_LENGTH];
    unsigned len = 0;
    HMAC(EVP_sha256(), s->secret_key, sizeof(s->secret_key), (const unsigned char *)msg,
         strlen(msg), mac, &len);
    free(msg);
    for (unsigned i = 0; i < len; i++) {
        snprintf(hex + 2 * i, 3, "%02x", mac[i]);
    }
    hex[2 * len] = '\0';
}
