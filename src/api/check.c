/*
 * Value checkers used by the schema tables: names, label keys and values,
 * paths, URLs, image references, timestamps. Each reports only the reason;
 * the schema engine puts the field path in front. The rules are the ones
 * Kubernetes applies (k8s.io/apimachinery/pkg/util/validation) unless a
 * comment says otherwise.
 */
#include <ctype.h>
#include <string.h>

#include "api/api_int.h"

#define DNS_LABEL_MAX 63
#define DNS_SUBDOMAIN_MAX 253
#define LABEL_NAME_MAX 63
#define ANNOTATIONS_MAX_BYTES (256 * 1024)

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static bool dns_label_ok(const char *s, size_t n)
{
    if (n == 0 || n > DNS_LABEL_MAX || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1])) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!is_lower_alnum(s[i]) && s[i] != '-') {
            return false;
        }
    }
    return true;
}

/* DNS-1123 subdomain: dot-separated DNS labels, at most 253 characters. */
static bool dns_subdomain_ok(const char *s, size_t n)
{
    if (n == 0 || n > DNS_SUBDOMAIN_MAX) {
        return false;
    }
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (!dns_label_ok(s + start, i - start)) {
                return false;
            }
            start = i + 1;
        }
    }
    return true;
}

/* [A-Za-z0-9_.-]*, starting and ending alphanumeric, at most 63 chars. */
static bool label_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > LABEL_NAME_MAX || !is_alnum(s[0]) || !is_alnum(s[n - 1])) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!is_alnum(s[i]) && !strchr("-_.", s[i])) {
            return false;
        }
    }
    return true;
}

int gt_api_check_name(const char *name, struct gt_err *err)
{
    if (!name || !dns_label_ok(name, strlen(name))) {
        return gt_err_set(err, GT_EINVAL,
                          "must be a DNS-1123 label (lower-case alphanumerics and '-', starting "
                          "and ending alphanumeric, at most 63 characters)");
    }
    return 0;
}

int gt_check_dns_label(const json_t *v, struct gt_err *err)
{
    return gt_api_check_name(json_string_value(v), err);
}

int gt_check_label_key(const json_t *v, struct gt_err *err)
{
    const char *s = json_string_value(v);
    const char *slash = strchr(s, '/');
    const char *name = s;
    if (slash) {
        if (!dns_subdomain_ok(s, (size_t)(slash - s))) {
            return gt_err_set(err, GT_EINVAL, "label key prefix must be a DNS-1123 subdomain");
        }
        name = slash + 1;
    }
    if (!label_name_ok(name, strlen(name))) {
        return gt_err_set(err, GT_EINVAL,
                          "label key name must be 1-63 characters of [A-Za-z0-9_.-], starting "
                          "and ending alphanumeric");
    }
    return 0;
}

int gt_check_label_value(const json_t *v, struct gt_err *err)
{
    size_t n = json_string_length(v);
    if (n != 0 && !label_name_ok(json_string_value(v), n)) {
        return gt_err_set(err, GT_EINVAL,
                          "label value must be empty or 1-63 characters of [A-Za-z0-9_.-], "
                          "starting and ending alphanumeric");
    }
    return 0;
}

int gt_check_annotations(const json_t *v, struct gt_err *err)
{
    size_t total = 0;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)v, key, val)
    {
        total += strlen(key) + json_string_length(val);
    }
    if (total > ANNOTATIONS_MAX_BYTES) {
        return gt_err_set(err, GT_EINVAL, "total size must be at most %d bytes",
                          ANNOTATIONS_MAX_BYTES);
    }
    return 0;
}

int gt_check_digits(const json_t *v, struct gt_err *err)
{
    const char *s = json_string_value(v);
    if (s[0] == '\0' || strspn(s, "0123456789") != strlen(s)) {
        return gt_err_set(err, GT_EINVAL, "must be a string of decimal digits");
    }
    return 0;
}

int gt_check_time(const json_t *v, struct gt_err *err)
{
    int64_t ms;
    if (gt_time_parse(json_string_value(v), &ms) < 0) {
        return gt_err_set(err, GT_EINVAL,
                          "must be an RFC 3339 UTC time (\"2006-01-02T15:04:05Z\")");
    }
    return 0;
}

int gt_check_abs_path(const json_t *v, struct gt_err *err)
{
    if (json_string_value(v)[0] != '/') {
        return gt_err_set(err, GT_EINVAL, "must be an absolute path");
    }
    return 0;
}

/* No ".." component in the string v. */
static int no_dotdot(const json_t *v, struct gt_err *err)
{
    const char *s = json_string_value(v);
    for (const char *p = s; (p = strstr(p, "..")) != NULL; p += 2) {
        bool starts = p == s || p[-1] == '/';
        bool ends = p[2] == '\0' || p[2] == '/';
        if (starts && ends) {
            return gt_err_set(err, GT_EINVAL, "must not contain a \"..\" component");
        }
    }
    return 0;
}

/* A path inside a checkout: relative, no ".." component, no control
 * characters. */
int gt_check_rel_path(const json_t *v, struct gt_err *err)
{
    const char *s = json_string_value(v);
    for (const char *p = s; *p; p++) {
        if ((unsigned char)*p < ' ' || *p == 0x7f) {
            return gt_err_set(err, GT_EINVAL, "must not contain control characters");
        }
    }
    if (!*s || s[0] == '/') {
        return gt_err_set(err, GT_EINVAL, "must be a relative path");
    }
    return no_dotdot(v, err);
}

int gt_check_host_path(const json_t *v, struct gt_err *err)
{
    int rc = gt_check_abs_path(v, err);
    return rc < 0 ? rc : no_dotdot(v, err);
}

int gt_check_log_dir(const json_t *v, struct gt_err *err)
{
    if (!json_is_string(v) || !*json_string_value(v)) {
        return gt_err_set(err, GT_EINVAL, "must be a non-empty path");
    }
    return no_dotdot(v, err);
}

static bool has_space_or_ctl(const char *s)
{
    for (; *s; s++) {
        if ((unsigned char)*s <= ' ' || *s == 0x7f) {
            return true;
        }
    }
    return false;
}

/* http(s)://, git://, ssh://, file:// URLs, or scp-like user@host:path;
 * never an option to git or ssh (a leading '-', a host starting with '-')
 * nor another transport (ext::). */
int gt_check_git_url(const json_t *v, struct gt_err *err)
{
    static const char *const schemes[] = {"http://", "https://", "git://", "ssh://", "file://"};
    const char *s = json_string_value(v);
    if (!has_space_or_ctl(s) && s[0] != '-' && !strstr(s, "://-") && !strstr(s, "@-")) {
        for (size_t i = 0; i < GT_ARRAY_LEN(schemes); i++) {
            size_t n = strlen(schemes[i]);
            if (strncmp(s, schemes[i], n) == 0 && s[n] != '\0') {
                return 0;
            }
        }
        const char *at = strchr(s, '@');
        const char *colon = at ? strchr(at, ':') : NULL;
        if (at && at > s && colon && colon > at + 1 && colon[1] != '\0' &&
            !memchr(s, '/', (size_t)(colon - s))) {
            return 0;
        }
    }
    return gt_err_set(err, GT_EINVAL,
                      "must be a git URL (http(s)://, git://, ssh://, file:// or user@host:path)");
}

/* A git revision (branch, tag or commit): what git would take as an
 * option (a leading '-') or split (spaces, control characters) is refused. */
int gt_check_git_revision(const json_t *v, struct gt_err *err)
{
    const char *s = json_string_value(v);
    if (!s[0] || s[0] == '-' || has_space_or_ctl(s)) {
        return gt_err_set(err, GT_EINVAL,
                          "must be a branch, tag or commit (not empty, no leading '-', no spaces)");
    }
    return 0;
}

/* An OCI image reference: [registry[:port]/]path[:tag][@digest]. Checked
 * loosely by character set and shape; the registry judges the rest. */
int gt_check_image(const json_t *v, struct gt_err *err)
{
    const char *s = json_string_value(v);
    size_t n = strlen(s);
    bool ok = n > 0 && n <= 512 && is_alnum(s[0]) && is_alnum(s[n - 1]);
    for (size_t i = 0; ok && i < n; i++) {
        ok = is_alnum(s[i]) || strchr("._-/:@+", s[i]);
    }
    if (!ok || strstr(s, "//") || strchr(s, '@') != strrchr(s, '@')) {
        return gt_err_set(err, GT_EINVAL,
                          "must be an OCI image reference ([registry/]name[:tag][@digest])");
    }
    return 0;
}

/* NAME:TAG inside a project's repositories, as the distribution spec
 * names them: NAME lowercase components of [a-z0-9] joined by single
 * "._-" or "/" separators, TAG [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}. */
int gt_check_image_name(const json_t *v, struct gt_err *err)
{
    const char *s = json_string_value(v);
    const char *colon = strrchr(s, ':');
    bool ok = colon && colon > s && strlen(colon + 1) >= 1 && strlen(colon + 1) <= 128 &&
              colon[1] != '.' && colon[1] != '-';
    for (const char *p = s; ok && p < colon; p++) {
        ok = is_lower_alnum(*p) || (strchr("._-/", *p) && p > s && is_lower_alnum(p[-1]) &&
                                    p + 1 < colon && is_lower_alnum(p[1]));
    }
    for (const char *p = colon ? colon + 1 : s; ok && *p; p++) {
        ok = is_alnum(*p) || strchr("_.-", *p);
    }
    if (!ok) {
        return gt_err_set(err, GT_EINVAL,
                          "must be NAME:TAG (NAME lowercase letters, digits and ._-/ "
                          "separators; TAG up to 128 of letters, digits and _.-)");
    }
    return 0;
}

int gt_check_env_name(const json_t *v, struct gt_err *err)
{
    const char *s = json_string_value(v);
    bool ok = (isalpha((unsigned char)s[0]) || s[0] == '_');
    for (const char *p = s; ok && *p; p++) {
        ok = is_alnum(*p) || strchr("_.-", *p);
    }
    if (!ok) {
        return gt_err_set(err, GT_EINVAL, "must match [A-Za-z_][A-Za-z0-9_.-]*");
    }
    return 0;
}

int gt_check_camel_word(const json_t *v, struct gt_err *err)
{
    const char *s = json_string_value(v);
    bool ok = s[0] >= 'A' && s[0] <= 'Z';
    for (const char *p = s; ok && *p; p++) {
        ok = is_alnum(*p);
    }
    if (!ok) {
        return gt_err_set(err, GT_EINVAL, "must be a CamelCase word ([A-Z][A-Za-z0-9]*)");
    }
    return 0;
}

/* spec.requirements: a requirements file path, or a list of pip
 * requirement lines. */
int gt_check_requirements(const json_t *v, struct gt_err *err)
{
    if (json_is_string(v)) {
        size_t n = json_string_length(v);
        if (n == 0 || n > GT_API_STRING_MAX || strlen(json_string_value(v)) != n) {
            return gt_err_set(err, GT_EINVAL, "must be a non-empty path");
        }
        return 0;
    }
    if (!json_is_array(v) || json_array_size(v) > GT_API_ITEMS_MAX) {
        return gt_err_set(err, GT_EINVAL, "must be a path or a list of at most %d strings",
                          GT_API_ITEMS_MAX);
    }
    size_t i;
    json_t *item;
    json_array_foreach(v, i, item)
    {
        if (!json_is_string(item) || json_string_length(item) > GT_API_STRING_MAX ||
            strlen(json_string_value(item)) != json_string_length(item)) {
            return gt_err_set(err, GT_EINVAL, "item %zu: must be a string of at most %d bytes", i,
                              GT_API_STRING_MAX);
        }
    }
    return 0;
}
