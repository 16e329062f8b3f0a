/*
 * Container images, the pure parts (see agent_int.h): image references
 * parsed as the distribution spec defines them, the task's process merged
 * with the image config as Docker and Kubernetes do, the GC threshold flag
 * and the order in which unused images are collected. No I/O here, so unit
 * tests and the fuzzer drive these directly; image_pull.c does the work.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_int.h"
#include "common/quantity.h"

/* ---- references: [HOST[:PORT]/]NAME[:TAG][@sha256:HEX] ---- */

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* One path component: [a-z0-9]+ ((\.|_|__|-+)[a-z0-9]+)* */
static bool name_component_ok(const char *s, size_t n)
{
    if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1])) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (is_lower_alnum(s[i]) || s[i] == '-') {
            continue;
        }
        if (s[i] == '.' && is_lower_alnum(s[i + 1])) {
            continue;
        }
        if (s[i] == '_' && (is_lower_alnum(s[i + 1]) ||
                            (s[i + 1] == '_' && i + 2 < n && is_lower_alnum(s[i + 2])))) {
            i += s[i + 1] == '_';
            continue;
        }
        return false;
    }
    return true;
}

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255) {
        return false;
    }
    for (const char *p = s;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (!name_component_ok(p, len)) {
            return false;
        }
        if (!slash) {
            return true;
        }
        p = slash + 1;
    }
}

/* A registry host: letters, digits, '-', '.', an optional :PORT, or [IPv6]:PORT. */
static bool host_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255) {
        return false;
    }
    const char *port = NULL;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close == s + 1) {
            return false;
        }
        for (const char *p = s + 1; p < close; p++) {
            if (!isxdigit((unsigned char)*p) && *p != ':') {
                return false;
            }
        }
        if (close[1] != '\0' && close[1] != ':') {
            return false;
        }
        port = close[1] ? close + 1 : NULL;
    } else {
        port = strchr(s, ':');
        size_t hn = port ? (size_t)(port - s) : n;
        if (hn == 0 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[hn - 1])) {
            return false;
        }
        for (size_t i = 0; i < hn; i++) {
            if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '.') {
                return false;
            }
        }
    }
    if (port) {
        size_t pn = strlen(port + 1);
        if (pn == 0 || pn > 5 || strspn(port + 1, "0123456789") != pn ||
            strtol(port + 1, NULL, 10) > 65535) {
            return false;
        }
    }
    return true;
}

static bool tag_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 128 || !(isalnum((unsigned char)s[0]) || s[0] == '_')) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i])) {
            return false;
        }
    }
    return true;
}

static bool digest_ok(const char *s)
{
    if (strncmp(s, "sha256:", 7) != 0 || strlen(s + 7) != 64) {
        return false;
    }
    for (const char *p = s + 7; *p; p++) {
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) {
            return false;
        }
    }
    return true;
}

int gt_image_ref_parse(const char *s, struct gt_image_ref *ref, struct gt_err *err)
{
    memset(ref, 0, sizeof(*ref));
    size_t n = strlen(s);
    if (n == 0 || n > 512) {
        return gt_err_set(err, GT_EINVAL, "invalid image reference: empty or over 512 bytes");
    }
    char buf[513];
    memcpy(buf, s, n + 1);
    char *at = strchr(buf, '@');
    if (at) {
        *at = '\0';
        if (!digest_ok(at + 1)) {
            return gt_err_set(err, GT_EINVAL,
                              "invalid image reference \"%s\": digest must be sha256:<64 hex>", s);
        }
        snprintf(ref->digest, sizeof(ref->digest), "%s", at + 1);
    }
    /* the first component is a host when it has '.' or ':' or is localhost */
    char *slash = strchr(buf, '/');
    char *name = buf;
    if (slash &&
        (memchr(buf, '.', (size_t)(slash - buf)) || memchr(buf, ':', (size_t)(slash - buf)) ||
         (slash - buf == 9 && !strncmp(buf, "localhost", 9)) || buf[0] == '[')) {
        *slash = '\0';
        if (!host_ok(buf)) {
            return gt_err_set(err, GT_EINVAL, "invalid image reference \"%s\": bad registry host",
                              s);
        }
        snprintf(ref->host, sizeof(ref->host), "%.255s", buf);
        name = slash + 1;
    } else {
        snprintf(ref->host, sizeof(ref->host), "docker.io");
    }
    char *colon = strrchr(name, ':');
    if (colon) {
        *colon = '\0';
        if (!tag_ok(colon + 1)) {
            return gt_err_set(err, GT_EINVAL, "invalid image reference \"%s\": bad tag", s);
        }
        snprintf(ref->tag, sizeof(ref->tag), "%s", colon + 1);
    }
    if (!name_ok(name)) {
        return gt_err_set(err, GT_EINVAL,
                          "invalid image reference \"%s\": the repository name must be "
                          "lower-case components separated by '/'",
                          s);
    }
    if (!strcmp(ref->host, "docker.io") && !strchr(name, '/')) {
        if (strlen(name) > 247) {
            return gt_err_set(err, GT_EINVAL, "invalid image reference \"%s\": name too long", s);
        }
        snprintf(ref->name, sizeof(ref->name), "library/%.247s", name);
    } else {
        snprintf(ref->name, sizeof(ref->name), "%.255s", name);
    }
    if (!ref->tag[0] && !ref->digest[0]) {
        snprintf(ref->tag, sizeof(ref->tag), "latest");
    }
    return 0;
}

void gt_image_ref_transport(const struct gt_image_ref *ref, const char *digest, char *buf,
                            size_t len)
{
    if (digest && *digest) {
        snprintf(buf, len, "docker://%s/%s@%s", ref->host, ref->name, digest);
    } else {
        snprintf(buf, len, "docker://%s/%s:%s", ref->host, ref->name, ref->tag);
    }
}

/* ---- tool messages ---- */

/* skopeo says "Error parsing image name \"REF\": pinging container
 * registry HOST: ..." for any registry it cannot reach, though the name
 * parsed: lead with what happened ("cannot reach registry HOST: ..."). */
static void reword(char *buf, size_t len)
{
    static const char parsing[] = "Error parsing image name \"";
    static const char pinging[] = "pinging container registry ";
    if (strncmp(buf, parsing, sizeof(parsing) - 1) != 0) {
        return;
    }
    char *rest = strstr(buf + sizeof(parsing) - 1, "\": ");
    if (!rest) {
        return;
    }
    rest += 3;
    char *text = gt_xstrdup(rest);
    if (!strncmp(text, pinging, sizeof(pinging) - 1)) {
        snprintf(buf, len, "cannot reach registry %s", text + sizeof(pinging) - 1);
    } else {
        snprintf(buf, len, "%s", text);
    }
    free(text);
}

void gt_image_tool_message(const char *text, char *buf, size_t len)
{
    buf[0] = '\0';
    const char *last = NULL;
    for (const char *p = text; (p = strstr(p, "msg=\"")) != NULL; p += 5) {
        last = p + 5;
    }
    if (last) {
        size_t k = 0;
        for (const char *p = last; *p && *p != '\n' && k + 1 < len; p++) {
            if (*p == '\\' && p[1]) {
                p++;
            } else if (*p == '"') {
                break;
            }
            buf[k++] = *p;
        }
        buf[k] = '\0';
        reword(buf, len);
        return;
    }
    /* the last non-empty line */
    const char *end = text + strlen(text);
    while (end > text && (end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\r')) {
        end--;
    }
    const char *start = end;
    while (start > text && start[-1] != '\n') {
        start--;
    }
    snprintf(buf, len, "%.*s", (int)(end - start), start);
}

/* ---- the process: image config merged with the template ---- */

struct strv GT_VEC(char *);

static void strv_push(struct strv *sv, char *s)
{
    GT_VEC_RESERVE(sv->v, sv->cap, sv->n + 2, 16);
    sv->v[sv->n++] = s;
    sv->v[sv->n] = NULL;
}

static void push_json_strings(struct strv *sv, const json_t *arr)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (json_is_string(v)) {
            strv_push(sv, gt_xstrdup(json_string_value(v)));
        }
    }
}

static void push_strings(struct strv *sv, char *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        strv_push(sv, gt_xstrdup(v[i]));
    }
}

/* Index of the entry NAME=... in sv, or -1. */
static ssize_t env_find(const struct strv *sv, const char *entry)
{
    size_t len = strcspn(entry, "=");
    for (size_t i = 0; i < sv->n; i++) {
        if (!strncmp(sv->v[i], entry, len) && sv->v[i][len] == '=') {
            return (ssize_t)i;
        }
    }
    return -1;
}

static void env_set(struct strv *sv, char *entry)
{
    ssize_t at = env_find(sv, entry);
    if (at < 0) {
        strv_push(sv, entry);
    } else {
        free(sv->v[at]);
        sv->v[at] = entry;
    }
}

/* "3,5" -> "0,1": inside the container the task's GPUs count from 0. */
static char *renumber_devices(const char *entry)
{
    const char *list = strchr(entry, '=') + 1;
    struct gt_buf b;
    gt_buf_init(&b);
    gt_buf_printf(&b, "%.*s", (int)(list - entry), entry);
    int k = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len > 0) {
            gt_buf_printf(&b, "%s%d", k ? "," : "", k);
            k++;
        }
        p += len + (p[len] == ',');
    }
    return gt_buf_take(&b);
}

int gt_image_process_merge(const json_t *image_config, const struct gt_image_task *t,
                           struct gt_image_proc *out, struct gt_err *err)
{
    memset(out, 0, sizeof(*out));
    const json_t *cfg = json_object_get(image_config, "config");
    struct strv argv = {0}, env = {0};
    if (t->n_command > 0) {
        /* a command replaces the Entrypoint and drops the image's Cmd */
        push_strings(&argv, t->command, t->n_command);
        push_strings(&argv, t->args, t->n_args);
    } else {
        push_json_strings(&argv, json_object_get(cfg, "Entrypoint"));
        if (t->n_args > 0) {
            push_strings(&argv, t->args, t->n_args);
        } else {
            push_json_strings(&argv, json_object_get(cfg, "Cmd"));
        }
    }
    if (argv.n == 0) {
        return gt_err_set(err, GT_EINVAL,
                          "no command: neither the template nor the image config has one");
    }
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(cfg, "Env"), i, v)
    {
        const char *e = json_string_value(v);
        if (e && strchr(e, '=') && e[0] != '=') {
            env_set(&env, gt_xstrdup(e));
        }
    }
    for (size_t k = 0; k < t->n_env; k++) {
        env_set(&env, strncmp(t->env[k], "CUDA_VISIBLE_DEVICES=", 21)
                          ? gt_xstrdup(t->env[k])
                          : renumber_devices(t->env[k]));
    }
    if (env_find(&env, "PATH=") < 0) {
        strv_push(&env, gt_xstrdup("PATH=" GT_GANTLET_DEFAULT_PATH));
    }
    const char *wd = json_string_value(json_object_get(cfg, "WorkingDir"));
    if (t->working_dir) {
        out->cwd = gt_xstrdup(t->working_dir);
    } else if (wd && wd[0] == '/') {
        out->cwd = gt_xstrdup(wd);
    } else {
        out->cwd = gt_xstrdup(GT_IMAGE_WORK_DIR);
        out->mount_work = true;
    }
    out->argv = argv.v;
    out->n_argv = argv.n;
    out->env = env.v;
    out->n_env = env.n;
    return 0;
}

void gt_image_proc_fini(struct gt_image_proc *p)
{
    for (size_t i = 0; i < p->n_argv; i++) {
        free(p->argv[i]);
    }
    for (size_t i = 0; i < p->n_env; i++) {
        free(p->env[i]);
    }
    free(p->argv);
    free(p->env);
    free(p->cwd);
    memset(p, 0, sizeof(*p));
}

/* ---- garbage collection ---- */

int gt_image_gc_threshold_parse(const char *s, int64_t *bytes, int *percent, struct gt_err *err)
{
    *bytes = 0;
    *percent = 0;
    size_t n = strlen(s);
    if (n > 1 && s[n - 1] == '%') {
        char *end;
        long p = strtol(s, &end, 10);
        if (end != s + n - 1 || p < 1 || p > 100) {
            return gt_err_set(err, GT_EINVAL, "image GC threshold %s: want 1%%..100%%", s);
        }
        *percent = (int)p;
        return 0;
    }
    if (gt_quantity_parse(s, GT_QTY_UNIT, bytes, err) < 0 || *bytes <= 0) {
        gt_err_prefix(err, "image GC threshold %s: want bytes (10Gi) or a percentage (80%%)", s);
        return GT_EINVAL;
    }
    return 0;
}

static int by_last_use(const void *a, const void *b)
{
    const struct gt_image_entry *x = *(const struct gt_image_entry *const *)a;
    const struct gt_image_entry *y = *(const struct gt_image_entry *const *)b;
    if (x->last_used_ms != y->last_used_ms) {
        return x->last_used_ms < y->last_used_ms ? -1 : 1;
    }
    return strcmp(x->digest_hex, y->digest_hex);
}

size_t gt_image_gc_plan(const struct gt_image_entry *entries, size_t n, int64_t usage_bytes,
                        int64_t limit_bytes, size_t *victims)
{
    if (usage_bytes <= limit_bytes || n == 0) {
        return 0;
    }
    const struct gt_image_entry **order = gt_xcalloc(n, sizeof(*order));
    for (size_t i = 0; i < n; i++) {
        order[i] = &entries[i];
    }
    qsort(order, n, sizeof(*order), by_last_use);
    size_t k = 0;
    for (size_t i = 0; i < n && usage_bytes > limit_bytes; i++) {
        if (order[i]->in_use) {
            continue;
        }
        victims[k++] = (size_t)(order[i] - entries);
        usage_bytes -= order[i]->size_bytes;
    }
    free(order);
    return k;
}

/* ---- the image part of a shim spec ---- */

/* A template's list of strings as a new NULL-terminated vector. */
static char **strv_copy(const char *const *v, size_t n)
{
    char **out = gt_xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        out[i] = gt_xstrdup(v[i]);
    }
    return out;
}

int gt_task_spec_image(const struct gt_api_template *tmpl, const struct gt_task_spec_params *p,
                       struct gt_shim_spec *spec, struct gt_err *err)
{
    const struct gt_task_image_params *ip = p->image;
    if (!tmpl->image) {
        return gt_err_set(err, GT_EINVAL, "spec.template.image: want a string");
    }
    if (!ip) {
        return gt_err_set(err, GT_EINVAL, "spec.template.image: this node runs no images");
    }
    struct gt_shim_image *im = spec->image = gt_xcalloc(1, sizeof(*im));
    im->ref = gt_xstrdup(tmpl->image);
    im->dir = gt_xstrdup(ip->dir);
    im->runtime = gt_xstrdup(ip->runtime);
    im->runtime_root = gt_xstrdup(ip->runtime_root);
    im->command = strv_copy(tmpl->command.v, im->n_command = tmpl->command.n);
    im->args = strv_copy(tmpl->args.v, im->n_args = tmpl->args.n);
    im->working_dir = tmpl->working_dir ? gt_xstrdup(tmpl->working_dir) : NULL;
    im->auth_file = ip->auth_file ? gt_xstrdup(ip->auth_file) : NULL;
    struct strv ins = {0};
    push_strings(&ins, ip->insecure, ip->n_insecure);
    im->insecure = ins.v ? ins.v : gt_xcalloc(1, sizeof(char *));
    im->n_insecure = ins.n;
    im->gc_threshold_bytes = ip->gc_threshold_bytes;
    im->gc_threshold_percent = ip->gc_threshold_percent;
    /* the agent's default PATH would hide the image's */
    bool tmpl_path = false;
    for (size_t k = 0; k < tmpl->env.n; k++) {
        tmpl_path = tmpl_path || (tmpl->env.v[k].name && !strcmp(tmpl->env.v[k].name, "PATH"));
    }
    for (size_t k = 0; !tmpl_path && k < spec->n_env; k++) {
        if (!strncmp(spec->env[k], "PATH=", 5)) {
            free(spec->env[k]);
            memmove(&spec->env[k], &spec->env[k + 1], (spec->n_env - k) * sizeof(char *));
            spec->n_env--;
            break;
        }
    }
    return 0;
}
