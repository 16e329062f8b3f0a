/*
 * The cluster registry's token service: docker-registry runs with `auth:
 * token` whose realm is GET /apis/gantry.dev/v1/registry/token here, and
 * trusts the certificate of the RSA key gantryd holds (--registry-key).
 * A client the registry sent here with its scopes authenticates with HTTP
 * Basic: any user name and a gantry bearer token as the password (as
 * `docker login` with a token), or its user name and a build credential
 * (below). The answer is a JWT signed RS256 with that key, as the
 * distribution token spec has it (docs/spec/auth/token.md and jwt.md of
 * distribution/distribution): header {typ, alg, kid} where kid is the
 * key's libtrust ID (base32 of the first 240 bits of the SHA-256 of its
 * DER public key, in groups of four joined by ':'), claims {iss
 * "gantryd", sub, aud (the service asked for), exp, nbf, iat, jti,
 * access[{type, name, actions}]}.
 *
 * What is granted, per repository PROJECT/NAME...: push and pull to
 * members and admins of PROJECT, pull to its viewers, both to cluster
 * admins, pull to nodes (agents pull every project's images); nothing to
 * anyone else (the registry then answers 401/403). Only repository scopes.
 *
 * A build credential is what an ImageBuild's task pushes with: for user U
 * and project P, "gtb1.P.EXP.HMAC" with HMAC-SHA256 over "U\nP\nEXP" keyed
 * by the SHA-256 of the registry key's DER form; it acts as U for P's
 * repositories only, until EXP (Unix seconds).
 */
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/registry.h"
#include "server/reply.h"
#include "server/server.h"
#include "server/server_int.h"

#define TOKEN_TTL_S 300
#define CREDENTIAL_TTL_S (24 * 3600)
#define ISSUER "gantryd"

struct gt_registry_key {
    EVP_PKEY *pkey;
    char kid[64];
    unsigned char hmac_key[SHA256_DIGEST_LENGTH];
};

/* libtrust's key ID (keyIDFromCryptoKey in docker/libtrust util.go). */
static void libtrust_kid(const unsigned char *der, size_t len, char *out)
{
    static const char b32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    unsigned char h[SHA256_DIGEST_LENGTH];
    SHA256(der, len, h);
    char enc[49];
    for (int i = 0; i < 48; i++) { /* 30 bytes = 240 bits = 48 digits */
        int bit = i * 5, byte = bit / 8, off = bit % 8;
        unsigned v = (unsigned)h[byte] << 8 | (byte + 1 < 30 ? h[byte + 1] : 0);
        enc[i] = b32[(v >> (11 - off)) & 31];
    }
    size_t n = 0;
    for (int i = 0; i < 48; i++) {
        if (i && i % 4 == 0) {
            out[n++] = ':';
        }
        out[n++] = enc[i];
    }
    out[n] = '\0';
}

int gt_registry_key_load(const char *path, struct gt_registry_key **out, struct gt_err *err)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        return gt_err_set(err, GT_EINVAL, "--registry-key %s: %s", path, strerror(errno));
    }
    EVP_PKEY *pkey = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    if (!pkey || EVP_PKEY_base_id(pkey) != EVP_PKEY_RSA) {
        EVP_PKEY_free(pkey);
        return gt_err_set(err, GT_EINVAL, "--registry-key %s: want a PEM RSA private key", path);
    }
    struct gt_registry_key *k = gt_xcalloc(1, sizeof(*k));
    k->pkey = pkey;
    unsigned char *der = NULL;
    int n = i2d_PUBKEY(pkey, &der);
    unsigned char *priv = NULL;
    int pn = i2d_PrivateKey(pkey, &priv);
    if (n <= 0 || pn <= 0) {
        OPENSSL_free(der);
        OPENSSL_free(priv);
        gt_registry_key_free(k);
        return gt_err_set(err, GT_EINVAL, "--registry-key %s: cannot encode the key", path);
    }
    libtrust_kid(der, (size_t)n, k->kid);
    SHA256(priv, (size_t)pn, k->hmac_key);
    OPENSSL_free(der);
    OPENSSL_clear_free(priv, (size_t)pn);
    *out = k;
    return 0;
}

void gt_registry_key_free(struct gt_registry_key *k)
{
    if (k) {
        EVP_PKEY_free(k->pkey);
        OPENSSL_cleanse(k->hmac_key, sizeof(k->hmac_key));
        free(k);
    }
}

static void credential_mac(const struct gt_registry_key *k, const char *user, const char *project,
                           long long exp, char hex[65])
{
    char msg[512];
    int n = snprintf(msg, sizeof(msg), "%s\n%s\n%lld", user, project, exp);
    unsigned char mac[SHA256_DIGEST_LENGTH];
    unsigned len = 0;
    HMAC(EVP_sha256(), k->hmac_key, sizeof(k->hmac_key), (unsigned char *)msg,
         (size_t)(n < (int)sizeof(msg) ? n : (int)sizeof(msg) - 1), mac, &len);
    for (unsigned i = 0; i < len; i++) {
        snprintf(hex + 2 * i, 3, "%02x", mac[i]);
    }
}

char *gt_registry_credential(const struct gt_registry_key *k, const char *user, const char *project)
{
    long long exp = gt_now_ms() / 1000 + CREDENTIAL_TTL_S;
    char hex[65];
    credential_mac(k, user, project, exp, hex);
    return gt_xasprintf("gtb1.%s.%lld.%s", project, exp, hex);
}

bool gt_registry_credential_check(const struct gt_registry_key *k, const char *user,
                                  const char *cred, char *project, size_t len)
{
    if (strncmp(cred, "gtb1.", 5) != 0) {
        return false;
    }
    const char *p = cred + 5, *d1 = strchr(p, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (!d1 || !d2 || (size_t)(d1 - p) >= len || d1 == p) {
        return false;
    }
    snprintf(project, len, "%.*s", (int)(d1 - p), p);
    char *end;
    long long exp = strtoll(d1 + 1, &end, 10);
    if (end != d2 || exp < gt_now_ms() / 1000) {
        return false;
    }
    char hex[65];
    credential_mac(k, user, project, exp, hex);
    return strlen(d2 + 1) == 64 && CRYPTO_memcmp(hex, d2 + 1, 64) == 0;
}

/* HTTP Basic "user:password" of req into user/pass; false when absent. */
static bool basic_auth(struct evhttp_request *req, char *user, size_t ulen, char *pass, size_t plen)
{
    const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    if (!h || strncasecmp(h, "Basic ", 6) != 0) {
        return false;
    }
    unsigned char dec[1024];
    size_t in = strlen(h + 6);
    if (in == 0 || in > 4 * (sizeof(dec) / 3) - 4) {
        return false;
    }
    int n = EVP_DecodeBlock(dec, (const unsigned char *)h + 6, (int)in);
    if (n <= 0) {
        return false;
    }
    while (n > 0 && dec[n - 1] == '\0') { /* the padding's bytes */
        n--;
    }
    const unsigned char *colon = memchr(dec, ':', (size_t)n);
    if (!colon || (size_t)(colon - dec) >= ulen || (size_t)(n - (colon - dec) - 1) >= plen) {
        return false;
    }
    snprintf(user, ulen, "%.*s", (int)(colon - dec), (const char *)dec);
    snprintf(pass, plen, "%.*s", (int)(n - (colon - dec) - 1), (const char *)colon + 1);
    return true;
}

/* Who asks, for granting: a token file user, or the build credential's
 * user limited to one project. */
struct asker {
    const struct gt_server_user *user;
    struct gt_server_user cred_user; /* for a build credential */
    char name[256];
    char project[64]; /* "" unless a build credential */
};

/* The actions of want ("pull", "push", "pull,push") the asker gets on repo. */
static json_t *granted(struct gt_server *s, const struct asker *a, const char *repo,
                       const char *want)
{
    json_t *out = json_array();
    const char *slash = strchr(repo, '/');
    char project[64];
    if (!slash || (size_t)(slash - repo) >= sizeof(project)) {
        return out;
    }
    snprintf(project, sizeof(project), "%.*s", (int)(slash - repo), repo);
    if (a->project[0] && strcmp(a->project, project) != 0) {
        return out;
    }
    struct gt_server_authz read = {
        .verb = GT_VERB_READ, .kind = GT_KIND_IMAGEBUILD, .project = project};
    struct gt_server_authz write = read;
    write.verb = GT_VERB_CREATE;
    bool may_pull = a->user->node || gt_server_authorize(s->access, a->user, &read) == 0;
    bool may_push = !a->user->node && gt_server_authorize(s->access, a->user, &write) == 0;
    for (const char *act = want; *act;) {
        size_t n = strcspn(act, ",");
        if ((n == 4 && !strncmp(act, "pull", 4) && may_pull) ||
            (n == 4 && !strncmp(act, "push", 4) && may_push)) {
            json_array_append_new(out, json_stringn(act, n));
        }
        act += n + (act[n] == ',');
    }
    return out;
}

/* The access claim for every "repository:NAME:ACTIONS" scope of the query. */
static json_t *access_claim(struct gt_server *s, const struct asker *a, const struct evkeyvalq *q)
{
    json_t *access = json_array();
    for (const struct evkeyval *kv = q->tqh_first; kv; kv = kv->next.tqe_next) {
        if (strcmp(kv->key, "scope") != 0 || strncmp(kv->value, "repository:", 11) != 0) {
            continue;
        }
        const char *name = kv->value + 11, *colon = strrchr(name, ':');
        if (!colon || colon == name || colon - name > 255) {
            continue;
        }
        char repo[256];
        snprintf(repo, sizeof(repo), "%.*s", (int)(colon - name), name);
        json_array_append_new(access, json_pack("{s:s, s:s, s:o}", "type", "repository", "name",
                                                repo, "actions", granted(s, a, repo, colon + 1)));
    }
    return access;
}

static char *sign_jwt(const struct gt_registry_key *k, json_t *claims)
{
    struct gt_buf b;
    gt_buf_init(&b);
    json_t *hdr = json_pack("{s:s, s:s, s:s}", "typ", "JWT", "alg", "RS256", "kid", k->kid);
    char *h = json_dumps(hdr, JSON_COMPACT), *c = json_dumps(claims, JSON_COMPACT);
    gt_buf_base64(&b, h, strlen(h), true);
    gt_buf_append(&b, ".", 1);
    gt_buf_base64(&b, c, strlen(c), true);
    free(h);
    free(c);
    json_decref(hdr);
    unsigned char sig[1024];
    size_t sig_len = sizeof(sig);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = ctx && EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, k->pkey) == 1 &&
              EVP_DigestSign(ctx, sig, &sig_len, (unsigned char *)b.data, b.len) == 1;
    EVP_MD_CTX_free(ctx);
    if (!ok) {
        gt_buf_fini(&b);
        return NULL;
    }
    gt_buf_append(&b, ".", 1);
    gt_buf_base64(&b, sig, sig_len, true);
    gt_buf_append(&b, "", 1);
    return b.data;
}

json_t *gt_registry_token(struct gt_req *r, const struct evkeyvalq *q)
{
    struct gt_server *s = r->s;
    if (!s->registry_key) {
        gt_req_error(r, GT_ENOTFOUND, "gantryd has no --registry-key");
        return NULL;
    }
    struct asker a = {0};
    char pass[768];
    if (!basic_auth(r->req, a.name, sizeof(a.name), pass, sizeof(pass))) {
        evhttp_add_header(evhttp_request_get_output_headers(r->req), "WWW-Authenticate",
                          "Basic realm=\"gantry registry\"");
        gt_req_error(r, GT_EUNAUTH, "registry tokens need Basic authentication");
        return NULL;
    }
    a.user = gt_server_tokens_find(s->tokens, pass);
    if (!a.user &&
        gt_registry_credential_check(s->registry_key, a.name, pass, a.project, sizeof(a.project))) {
        a.cred_user.name = a.name;
        a.user = &a.cred_user;
    }
    OPENSSL_cleanse(pass, sizeof(pass));
    if (!a.user) {
        gt_req_error(r, GT_EUNAUTH, "no such token or build credential");
        return NULL;
    }
    long long now = gt_now_ms() / 1000;
    char jti[40];
    gt_uuid4(&s->uuids, jti, sizeof(jti));
    const char *service = evhttp_find_header(q, "service");
    json_t *claims =
        json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:s, s:o}", "iss", ISSUER, "sub", a.user->name,
                  "aud", service ? service : "", "exp", (json_int_t)(now + TOKEN_TTL_S), "nbf",
                  (json_int_t)(now - 10), "iat", (json_int_t)now, "jti", jti, "access",
                  access_claim(s, &a, q));
    char *jwt = sign_jwt(s->registry_key, claims);
    json_decref(claims);
    if (!jwt) {
        gt_req_error(r, GT_EINTERNAL, "cannot sign the registry token");
        return NULL;
    }
    char ts[32];
    json_t *o = json_pack("{s:s, s:s, s:i, s:s}", "token", jwt, "access_token", jwt, "expires_in",
                          TOKEN_TTL_S, "issued_at", gt_time_format(now * 1000, ts, sizeof(ts)));
    free(jwt);
    return o;
}
