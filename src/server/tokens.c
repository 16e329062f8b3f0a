/*
 * Authentication by static bearer tokens, in kube-apiserver's token file
 * format: CSV lines `token,user,uid[,"group1,group2"]` where a field may be
 * double-quoted (a doubled quote inside is a literal quote). The uid is the
 * numeric Unix uid tasks run as. Users live in a hash table keyed by the
 * hex SHA-256 of their token, so a request costs one digest and one lookup,
 * and the lookup's string compares see digests, whose bytes a caller cannot
 * steer, never the token itself; the match is then confirmed with
 * CRYPTO_memcmp. The table owns every user and string in it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "server/server_int.h"

/* The largest token file read. */
enum { TOKENS_MAX_BYTES = 64 << 20 };

struct gt_server_tokens {
    struct gt_strmap by_digest;              /* hex SHA-256 of the token -> user */
    const struct gt_server_user *first_node; /* first gantry:nodes line of the file */
    const struct gt_server_user **nodes;     /* every gantry:nodes user, in file order */
    size_t n_nodes;
    struct gt_server_tokens *older; /* the set this one replaced, kept for its borrowers */
};

/* n bytes of d as 2n lower-case hex digits and a NUL into out. */
static void hex_encode(const unsigned char *d, size_t n, char *out)
{
    for (size_t k = 0; k < n; k++) {
        snprintf(out + 2 * k, 3, "%02x", d[k]);
    }
}

/* The size of a map key: the hex of a token's SHA-256 and a NUL. */
enum { TOKEN_KEY_SIZE = 2 * SHA256_DIGEST_LENGTH + 1 };

static void user_free(void *p)
{
    struct gt_server_user *u = p;
    if (!u) {
        return;
    }
    free(u->token);
    free(u->name);
    for (size_t i = 0; i < u->n_groups; i++) {
        free(u->groups[i]);
    }
    free(u->groups);
    free(u);
}

/* Split one CSV line into at most max fields (heap strings). Returns the
 * number of fields or -1 (reason in *why). */
static int split_csv(const char *line, size_t len, char **fields, int max, const char **why)
{
    int n = 0;
    size_t i = 0;
    for (;;) {
        if (n == max) {
            *why = "too many fields";
            return -1;
        }
        struct gt_buf f;
        gt_buf_init(&f);
        gt_buf_append(&f, "", 0);
        if (i < len && line[i] == '"') {
            i++;
            for (;;) {
                if (i >= len) {
                    gt_buf_fini(&f);
                    *why = "unterminated quote";
                    return -1;
                }
                if (line[i] == '"') {
                    if (i + 1 < len && line[i + 1] == '"') {
                        gt_buf_append(&f, "\"", 1);
                        i += 2;
                        continue;
                    }
                    i++;
                    break;
                }
                gt_buf_append(&f, &line[i++], 1);
            }
            if (i < len && line[i] != ',') {
                gt_buf_fini(&f);
                *why = "text after a closing quote";
                return -1;
            }
        } else {
            size_t start = i;
            while (i < len && line[i] != ',') {
                if (line[i] == '"') {
                    gt_buf_fini(&f);
                    *why = "quote inside an unquoted field";
                    return -1;
                }
                i++;
            }
            gt_buf_append(&f, line + start, i - start);
        }
        fields[n++] = gt_buf_take(&f);
        if (i >= len) {
            return n;
        }
        i++; /* the comma */
    }
}

static void add_group(struct gt_server_user *u, const char *g, size_t len)
{
    while (len && (*g == ' ' || *g == '\t')) {
        g++;
        len--;
    }
    while (len && (g[len - 1] == ' ' || g[len - 1] == '\t')) {
        len--;
    }
    if (!len) {
        return;
    }
    GT_VEC_RESERVE(u->groups, u->cap_groups, u->n_groups + 1, 4);
    u->groups[u->n_groups++] = gt_xstrndup(g, len);
    if (len == strlen(GT_GROUP_ADMINS) && !strncmp(g, GT_GROUP_ADMINS, len)) {
        u->admin = true;
    }
    if (len == strlen(GT_GROUP_NODES) && !strncmp(g, GT_GROUP_NODES, len)) {
        u->node = true;
    }
}

/* Parse one non-empty line into a new user, or NULL with *why. */
static struct gt_server_user *parse_line(const char *line, size_t len, const char **why)
{
    char *f[4] = {NULL, NULL, NULL, NULL};
    struct gt_server_user *u = NULL;
    int n = split_csv(line, len, f, 4, why);
    if (n < 0) {
        goto out;
    }
    if (n < 3) {
        *why = "want token,user,uid[,\"groups\"]";
        goto out;
    }
    if (!f[0][0] || !f[1][0]) {
        *why = "empty token or user";
        goto out;
    }
    char *end = NULL;
    errno = 0;
    long long uid = strtoll(f[2], &end, 10);
    if (errno || end == f[2] || *end || uid < 0 || uid > 0xffffffffLL) {
        *why = "uid must be a non-negative integer";
        goto out;
    }
    u = gt_xcalloc(1, sizeof(*u));
    u->token = f[0];
    u->name = f[1];
    f[0] = f[1] = NULL;
    u->uid = uid;
    SHA256((const unsigned char *)u->token, strlen(u->token), u->digest);
    if (n == 4) {
        const char *g = f[3];
        for (;;) {
            const char *c = strchr(g, ',');
            add_group(u, g, c ? (size_t)(c - g) : strlen(g));
            if (!c) {
                break;
            }
            g = c + 1;
        }
    }
out:
    for (int i = 0; i < 4; i++) {
        free(f[i]);
    }
    return u;
}

int gt_server_tokens_parse(const char *text, size_t len, struct gt_server_tokens **out,
                           struct gt_err *err)
{
    struct gt_server_tokens *t = gt_xcalloc(1, sizeof(*t));
    gt_strmap_init(&t->by_digest);
    size_t pos = 0;
    int lineno = 0;
    while (pos < len) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - line) : len - pos;
        pos += ll + (nl ? 1 : 0);
        lineno++;
        if (ll && line[ll - 1] == '\r') {
            ll--;
        }
        size_t skip = 0;
        while (skip < ll && (line[skip] == ' ' || line[skip] == '\t')) {
            skip++;
        }
        if (skip == ll || line[skip] == '#') {
            continue;
        }
        const char *why = "malformed";
        if (memchr(line, '\0', ll)) {
            why = "NUL byte";
            goto bad;
        }
        struct gt_server_user *u = parse_line(line, ll, &why);
        if (!u) {
            goto bad;
        }
        char key[TOKEN_KEY_SIZE];
        hex_encode(u->digest, sizeof(u->digest), key);
        if (gt_strmap_get(&t->by_digest, key)) {
            user_free(u);
            why = "duplicate token";
            goto bad;
        }
        gt_strmap_put(&t->by_digest, key, u);
        if (u->node && !t->first_node) {
            t->first_node = u;
        }
        if (u->node) {
            t->nodes = gt_xrealloc(t->nodes, (t->n_nodes + 1) * sizeof(*t->nodes));
            t->nodes[t->n_nodes++] = u;
        }
        continue;
    bad:
        gt_server_tokens_free(t);
        return gt_err_set(err, GT_EINVAL, "line %d: %s", lineno, why);
    }
    *out = t;
    return 0;
}

int gt_server_tokens_load(const char *path, struct gt_server_tokens **out, struct gt_err *err)
{
    char *text;
    size_t len;
    int rc = gt_file_read(path, TOKENS_MAX_BYTES, &text, &len, err);
    if (rc) {
        return rc;
    }
    rc = gt_server_tokens_parse(text, len, out, err);
    free(text);
    if (rc) {
        gt_err_prefix(err, "%s", path);
    }
    return rc;
}

const struct gt_server_user *gt_server_tokens_find(const struct gt_server_tokens *t,
                                                   const char *token)
{
    unsigned char raw[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)token, strlen(token), raw);
    char key[TOKEN_KEY_SIZE];
    hex_encode(raw, sizeof(raw), key);
    const struct gt_server_user *u = gt_strmap_get(&t->by_digest, key);
    return u && CRYPTO_memcmp(u->digest, raw, sizeof(raw)) == 0 ? u : NULL;
}

void gt_server_tokens_replace(struct gt_server_tokens **cur, struct gt_server_tokens *next)
{
    next->older = *cur;
    *cur = next;
}

const struct gt_server_user *gt_server_tokens_first_node(const struct gt_server_tokens *t)
{
    return t->first_node;
}

size_t gt_server_tokens_count(const struct gt_server_tokens *t)
{
    return t->by_digest.n;
}

struct each_user {
    void (*fn)(const struct gt_server_user *u, void *arg);
    void *arg;
};

static int each_user_cb(const char *key, void *val, void *arg)
{
    (void)key;
    struct each_user *e = arg;
    e->fn(val, e->arg);
    return 0;
}

void gt_server_tokens_each(const struct gt_server_tokens *t,
                           void (*fn)(const struct gt_server_user *u, void *arg), void *arg)
{
    struct each_user e = {fn, arg};
    gt_strmap_each(&t->by_digest, each_user_cb, &e);
}

void gt_server_tokens_free(struct gt_server_tokens *t)
{
    while (t) {
        struct gt_server_tokens *older = t->older;
        gt_strmap_fini(&t->by_digest, user_free);
        free(t->nodes);
        free(t);
        t = older;
    }
}

bool gt_server_tokens_node_mac_ok(const struct gt_server_tokens *t, const char *msg,
                                  const char *hex)
{
    bool ok = false;
    for (size_t i = 0; t && hex && strlen(hex) == 2 * SHA256_DIGEST_LENGTH && i < t->n_nodes; i++) {
        unsigned char mac[SHA256_DIGEST_LENGTH];
        unsigned len = 0;
        const char *key = t->nodes[i]->token;
        HMAC(EVP_sha256(), key, (int)strlen(key), (const unsigned char *)msg, strlen(msg), mac,
             &len);
        char want[TOKEN_KEY_SIZE];
        hex_encode(mac, len, want);
        ok = ok || CRYPTO_memcmp(want, hex, sizeof(want) - 1) == 0;
    }
    return ok;
}
