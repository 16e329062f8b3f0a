/*
 * Unit tests for the cluster registry's token service pieces: base64 as
 * RFC 4648 writes it (the JWT's URL-safe form too), loading gantryd's
 * --registry-key, and build credentials (valid only for their user and
 * unchanged). The tokens themselves are checked by a real docker-registry
 * in tests/e2e/test_imagebuild.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "server/registry.h"

static char *b64(const char *s, bool url)
{
    struct gt_buf b;
    gt_buf_init(&b);
    gt_buf_base64(&b, s, strlen(s), url);
    gt_buf_append(&b, "", 1);
    return b.data;
}

static void test_base64_rfc4648(void **state)
{
    (void)state;
    static const char *const vec[][3] = {
        {"", "", ""},
        {"f", "Zg==", "Zg"},
        {"fo", "Zm8=", "Zm8"},
        {"foo", "Zm9v", "Zm9v"},
        {"foob", "Zm9vYg==", "Zm9vYg"},
        {"\xfb\xff", "+/8=", "-_8"},
    };
    for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
        char *std = b64(vec[i][0], false), *url = b64(vec[i][0], true);
        assert_string_equal(std ? std : "", vec[i][1]);
        assert_string_equal(url ? url : "", vec[i][2]);
        free(std);
        free(url);
    }
}

/* A fresh RSA key in a PEM file under a temporary directory; path out. */
static void write_key(char *path, size_t len, bool rsa)
{
    char dir[] = "/tmp/gt-registry-XXXXXX";
    assert_non_null(mkdtemp(dir));
    snprintf(path, len, "%s/key.pem", dir);
    EVP_PKEY *k = rsa ? EVP_RSA_gen(2048) : EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    assert_non_null(k);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL), 1);
    fclose(f);
    EVP_PKEY_free(k);
}

static void remove_key(const char *path)
{
    unlink(path);
    char *dir = gt_xstrdup(path);
    *strrchr(dir, '/') = '\0';
    rmdir(dir);
    free(dir);
}

static void test_key_load_refuses(void **state)
{
    (void)state;
    struct gt_registry_key *k = NULL;
    struct gt_err err = {0};
    assert_int_equal(gt_registry_key_load("/nonexistent/key.pem", &k, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "--registry-key /nonexistent/key.pem"));
    char path[256];
    write_key(path, sizeof(path), false);
    gt_err_clear(&err);
    assert_int_equal(gt_registry_key_load(path, &k, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "want a PEM RSA private key"));
    assert_null(k);
    remove_key(path);
}

static void test_credentials(void **state)
{
    (void)state;
    char path[256];
    write_key(path, sizeof(path), true);
    struct gt_registry_key *k = NULL, *other = NULL;
    struct gt_err err = {0};
    assert_int_equal(gt_registry_key_load(path, &k, &err), 0);
    remove_key(path);
    write_key(path, sizeof(path), true);
    assert_int_equal(gt_registry_key_load(path, &other, &err), 0);
    remove_key(path);
    char *cred = gt_registry_credential(k, "alice", "proj-a");
    char project[64];
    assert_true(gt_registry_credential_check(k, "alice", cred, project, sizeof(project)));
    assert_string_equal(project, "proj-a");
    /* another user, another key, a changed project or MAC: refused */
    assert_false(gt_registry_credential_check(k, "bob", cred, project, sizeof(project)));
    assert_false(gt_registry_credential_check(other, "alice", cred, project, sizeof(project)));
    char *forged = gt_xstrdup(cred);
    memcpy(forged + 5, "proj-b", 6);
    assert_false(gt_registry_credential_check(k, "alice", forged, project, sizeof(project)));
    memcpy(forged, cred, strlen(cred) + 1);
    forged[strlen(forged) - 1] ^= 1;
    assert_false(gt_registry_credential_check(k, "alice", forged, project, sizeof(project)));
    assert_false(gt_registry_credential_check(k, "alice", "alice-token", project, sizeof(project)));
    free(forged);
    free(cred);
    gt_registry_key_free(k);
    gt_registry_key_free(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base64_rfc4648),
        cmocka_unit_test(test_key_load_refuses),
        cmocka_unit_test(test_credentials),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
