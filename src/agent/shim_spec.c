/*
 * The shim's state-directory formats (see shim.h): spec.json, exit.json,
 * pid files and the stop request. Shared by the agent (writer of spec and
 * stop, reader of the rest) and the shim.
 *
 * spec.json is checked strictly by api's schema engine over the tables
 * below (unknown fields, wrong types and out-of-range values rejected with
 * the field path), decoded into struct gt_shim_spec (which owns copies of
 * its strings), and the rules between fields are checked on the struct.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_int.h"
#include "agent/shim_spec.h"
#include "api/api.h"

#define MAX_SPEC_BYTES (1 << 20)

static const char *const ns_names[] = {"pid", "mount", "uts", "ipc", "user", NULL};
static const char *const runtimes[] = {"runc", "crun", NULL};

bool gt_shim_host_valid(const char *hostname, const char *ip)
{
    unsigned char addr[16];
    size_t n = strlen(hostname);
    if (n == 0 || n > 253 || hostname[0] == '-' || hostname[0] == '.' ||
        strspn(hostname, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") != n) {
        return false;
    }
    return inet_pton(AF_INET, ip, addr) == 1 || inet_pton(AF_INET6, ip, addr) == 1;
}

/* ---- the schema of spec.json ---- */

static int check_nonempty(const json_t *v, struct gt_err *err)
{
    return json_string_length(v) ? 0 : gt_err_set(err, GT_EINVAL, "must not be empty");
}

static int check_relative(const json_t *v, struct gt_err *err)
{
    const char *s = json_string_value(v);
    return s[0] && s[0] != '/' ? 0 : gt_err_set(err, GT_EINVAL, "must be a relative path");
}

/* git would take a leading '-' as an option */
static int check_git_arg(const json_t *v, struct gt_err *err)
{
    const char *s = json_string_value(v);
    return s[0] && s[0] != '-' ? 0
                               : gt_err_set(err, GT_EINVAL, "must not be empty or start with '-'");
}

static int check_env_entry(const json_t *v, struct gt_err *err)
{
    const char *s = json_string_value(v);
    return s[0] != '=' && strchr(s, '=') ? 0 : gt_err_set(err, GT_EINVAL, "want NAME=value");
}

/* api's rule for spec.requirements, and one pip line per list item */
static int check_requirements(const json_t *v, struct gt_err *err)
{
    int rc = gt_check_requirements(v, err);
    size_t i;
    json_t *line;
    json_array_foreach(v, i, line)
    {
        if (rc == 0 && strchr(json_string_value(line), '\n')) {
            rc = gt_err_set(err, GT_EINVAL, "item %zu: one line each", i);
        }
    }
    return rc;
}

static int check_host(json_t *obj, const char *path, struct gt_err *err)
{
    const char *ip = json_string_value(json_object_get(obj, "ip"));
    const char *name = json_string_value(json_object_get(obj, "hostname"));
    return gt_shim_host_valid(name, ip)
               ? 0
               : gt_err_set(err, GT_EINVAL, "%s: want a valid hostname and IP address", path);
}

/* Rows shared by the tables: any string the agent passes on (a command
 * line, an environment entry) is bounded only by the file's size. */
#define ROW_STR(n, fl, chk)                                                                        \
    {                                                                                              \
        .name = (n), .type = GT_F_STRING, .flags = (fl), .max_len = MAX_SPEC_BYTES, .check = (chk) \
    }
#define ROW_INT(n, lo, hi, def)                                                                    \
    {                                                                                              \
        .name = (n), .type = GT_F_INT, .flags = GT_F_DEFAULT, .min = (lo), .max = (hi),            \
        .def_int = (def)                                                                           \
    }
#define ROW_BOOL(n)                                                                                \
    {                                                                                              \
        .name = (n), .type = GT_F_BOOL, .flags = GT_F_DEFAULT                                      \
    }
#define ROW_LIST(n, fl, items, elem_row)                                                           \
    {                                                                                              \
        .name = (n), .type = GT_F_ARRAY, .flags = (fl), .max_len = (items), .elem = &(elem_row)    \
    }
#define ROW_OBJ(n, fl, sch)                                                                        \
    {                                                                                              \
        .name = (n), .type = GT_F_OBJECT, .flags = (fl), .schema = &(sch)                          \
    }

static const struct gt_field any_str = ROW_STR("", 0, NULL);
static const struct gt_field env_str = ROW_STR("", 0, check_env_entry);
static const struct gt_field ns_str = {.name = "", .type = GT_F_STRING, .enums = ns_names};
static const struct gt_field gid_int = {.name = "", .type = GT_F_INT, .max = UINT32_MAX - 1};
static const struct gt_field minor_int = {.name = "", .type = GT_F_INT, .max = 1 << 20};

/* "hierarchies": the v1 mount point of each controller gantry uses, keyed
 * by gt_cgroup_ctrl_name (the order of enum gt_cgroup_ctrl) */
static const struct gt_schema hierarchies_schema = {
    .fields = (const struct gt_field[]){ROW_STR("cpu", 0, gt_check_abs_path),
                                        ROW_STR("memory", 0, gt_check_abs_path),
                                        ROW_STR("pids", 0, gt_check_abs_path),
                                        ROW_STR("devices", 0, gt_check_abs_path),
                                        ROW_STR("cpuacct", 0, gt_check_abs_path),
                                        {0}}};

static const struct gt_schema cgroup_schema = {
    .fields = (const struct gt_field[]){ROW_STR("path", GT_F_REQUIRED, check_nonempty),
                                        ROW_INT("cpuMilli", 0, INT64_MAX / 1000, 0),
                                        ROW_INT("memoryBytes", 0, INT64_MAX, 0),
                                        ROW_INT("pidsMax", 0, INT32_MAX, 0),
                                        ROW_LIST("gpuMinors", 0, 1024, minor_int),
                                        ROW_STR("unified", 0, gt_check_abs_path),
                                        ROW_OBJ("hierarchies", 0, hierarchies_schema),
                                        {0}}};

static const struct gt_schema log_schema = {
    .fields = (const struct gt_field[]){ROW_STR("dir", GT_F_REQUIRED, gt_check_abs_path),
                                        ROW_INT("maxBytes", 0, INT64_MAX, 0),
                                        ROW_INT("keepFiles", 0, 100, 3),
                                        {0}}};

static const struct gt_schema source_schema = {
    .fields = (const struct gt_field[]){
        ROW_STR("git", GT_F_REQUIRED, check_git_arg), ROW_STR("revision", 0, check_git_arg), {0}}};

static const struct gt_schema pip_schema = {
    .fields = (const struct gt_field[]){
        ROW_STR("findLinks", 0, check_nonempty), ROW_STR("indexUrl", 0, check_nonempty), {0}}};

static const struct gt_schema volume_schema = {
    .fields = (const struct gt_field[]){ROW_STR("root", GT_F_REQUIRED, gt_check_abs_path),
                                        ROW_STR("path", GT_F_REQUIRED, check_relative),
                                        {.name = "mountPath",
                                         .type = GT_F_STRING,
                                         .flags = GT_F_REQUIRED,
                                         .max_len = PATH_MAX - 2,
                                         .check = gt_check_abs_path},
                                        ROW_BOOL("readOnly"),
                                        {0}}};
static const struct gt_field volume_obj = ROW_OBJ("", 0, volume_schema);

static const struct gt_schema host_schema = {
    .fields = (const struct gt_field[]){ROW_STR("ip", GT_F_REQUIRED, NULL),
                                        ROW_STR("hostname", GT_F_REQUIRED, NULL),
                                        {0}},
    .post = check_host};
static const struct gt_field host_obj = ROW_OBJ("", 0, host_schema);

static const struct gt_schema image_schema = {
    .fields = (const struct gt_field[]){
        ROW_STR("ref", GT_F_REQUIRED, check_nonempty),
        ROW_STR("dir", GT_F_REQUIRED, gt_check_abs_path),
        {.name = "runtime", .type = GT_F_STRING, .flags = GT_F_REQUIRED, .enums = runtimes},
        ROW_STR("runtimeRoot", GT_F_REQUIRED, gt_check_abs_path),
        ROW_LIST("command", 0, 4096, any_str),
        ROW_LIST("args", 0, 4096, any_str),
        ROW_STR("workingDir", 0, gt_check_abs_path),
        ROW_STR("authFile", 0, check_nonempty),
        ROW_LIST("insecureRegistries", 0, 1024, any_str),
        ROW_INT("gcThresholdBytes", 0, INT64_MAX, 0),
        ROW_INT("gcThresholdPercent", 0, 100, 0),
        {0}}};

static const struct gt_schema spec_schema = {
    .fields = (const struct gt_field[]){
        ROW_LIST("argv", 0, 4096, any_str),
        ROW_LIST("env", 0, 4096, env_str),
        ROW_STR("cwd", GT_F_REQUIRED, gt_check_abs_path),
        {.name = "uid", .type = GT_F_INT, .flags = GT_F_REQUIRED, .max = UINT32_MAX - 1},
        {.name = "gid", .type = GT_F_INT, .flags = GT_F_REQUIRED, .max = UINT32_MAX - 1},
        ROW_LIST("groups", 0, 64, gid_int),
        ROW_BOOL("privileged"),
        {.name = "hostname", .type = GT_F_STRING, .max_len = 64, .check = check_nonempty},
        ROW_LIST("namespaces", 0, 0, ns_str),
        ROW_OBJ("cgroup", GT_F_REQUIRED, cgroup_schema),
        ROW_OBJ("log", GT_F_REQUIRED, log_schema),
        ROW_INT("stopGracePeriodMs", 0, 24LL * 3600 * 1000, 30000),
        ROW_OBJ("source", 0, source_schema),
        {.name = "requirements", .type = GT_F_ANY, .check = check_requirements},
        ROW_OBJ("pip", 0, pip_schema),
        ROW_STR("venvDir", 0, gt_check_abs_path),
        ROW_STR("dataDir", 0, gt_check_abs_path),
        ROW_LIST("volumes", 0, 64, volume_obj),
        ROW_LIST("hosts", 0, 4096, host_obj),
        ROW_OBJ("image", 0, image_schema),
        ROW_STR("terminationLog", 0, gt_check_abs_path),
        {0}}};

static unsigned ns_bits(const json_t *names)
{
    unsigned bits = 0;
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v)
    {
        for (size_t k = 0; ns_names[k]; k++) {
            bits |= strcmp(json_string_value(v), ns_names[k]) == 0 ? 1u << k : 0;
        }
    }
    return bits;
}

/* ---- decoding a spec that passed the schema ---- */

static char *dup_or_null(const char *s)
{
    return s ? gt_xstrdup(s) : NULL;
}

/* A list of strings (NULL: none) as a new NULL-terminated vector. */
static char **strv_new(const json_t *list, size_t *n)
{
    *n = json_array_size(list);
    char **v = gt_xcalloc(*n + 1, sizeof(char *));
    for (size_t i = 0; i < *n; i++) {
        v[i] = gt_xstrdup(json_string_value(json_array_get(list, i)));
    }
    return v;
}

static void decode_cgroup_log(const json_t *cg, const json_t *log, struct gt_shim_spec *spec)
{
    const char *path, *dir, *unified = NULL;
    json_t *minors = NULL, *hier = NULL;
    json_int_t cpu, mem, pids, max_bytes, keep;
    json_unpack((json_t *)cg, "{s:s, s:I, s:I, s:I, s?o, s?s, s?o}", "path", &path, "cpuMilli",
                &cpu, "memoryBytes", &mem, "pidsMax", &pids, "gpuMinors", &minors, "unified",
                &unified, "hierarchies", &hier);
    spec->cg_unified = dup_or_null(unified);
    for (int c = 0; hier && c < GT_CG_NCTRL; c++) {
        spec->cg_mounts[c] = dup_or_null(
            json_string_value(json_object_get(hier, gt_cgroup_ctrl_name((enum gt_cgroup_ctrl)c))));
    }
    json_unpack((json_t *)log, "{s:s, s:I, s:I}", "dir", &dir, "maxBytes", &max_bytes, "keepFiles",
                &keep);
    spec->cgroup_path = gt_xstrdup(path);
    spec->limits.cpu_milli = cpu;
    spec->limits.memory_bytes = mem;
    spec->limits.pids_max = pids;
    if (minors) {
        spec->minors = gt_xcalloc(json_array_size(minors), sizeof(int));
        for (size_t i = 0; i < json_array_size(minors); i++) {
            spec->minors[i] = (int)json_integer_value(json_array_get(minors, i));
        }
        spec->limits.gpu_minors = spec->minors;
        spec->limits.n_gpu_minors = json_array_size(minors);
    }
    spec->log_dir = gt_xstrdup(dir);
    spec->log_max_bytes = max_bytes;
    spec->log_keep_files = (int)keep;
}

static void decode_prep(const json_t *src, const json_t *req, const json_t *pip,
                        struct gt_shim_spec *spec)
{
    const char *git = NULL, *rev = NULL, *links = NULL, *index = NULL;
    json_unpack((json_t *)src, "{s:s, s?s}", "git", &git, "revision", &rev);
    json_unpack((json_t *)pip, "{s?s, s?s}", "findLinks", &links, "indexUrl", &index);
    spec->git_url = dup_or_null(git);
    spec->git_revision = dup_or_null(rev);
    spec->pip_find_links = dup_or_null(links);
    spec->pip_index_url = dup_or_null(index);
    if (json_is_string(req)) {
        spec->req_file = gt_xstrdup(json_string_value(req));
    } else if (req) {
        spec->req_list = strv_new(req, &spec->n_req);
    }
}

static void decode_mounts(const json_t *vols, const json_t *hosts, struct gt_shim_spec *spec)
{
    spec->n_volumes = json_array_size(vols);
    spec->volumes = gt_xcalloc(spec->n_volumes + 1, sizeof(*spec->volumes));
    for (size_t i = 0; i < spec->n_volumes; i++) {
        struct gt_shim_volume *v = &spec->volumes[i];
        const char *root, *path, *mount_path;
        int ro;
        json_unpack(json_array_get(vols, i), "{s:s, s:s, s:s, s:b}", "root", &root, "path", &path,
                    "mountPath", &mount_path, "readOnly", &ro);
        v->root = gt_xstrdup(root);
        v->path = gt_xstrdup(path);
        v->mount_path = gt_xstrdup(mount_path);
        v->read_only = ro;
    }
    spec->n_hosts = json_array_size(hosts);
    spec->hosts = gt_xcalloc(spec->n_hosts + 1, sizeof(*spec->hosts));
    for (size_t i = 0; i < spec->n_hosts; i++) {
        const char *ip, *name;
        json_unpack(json_array_get(hosts, i), "{s:s, s:s}", "ip", &ip, "hostname", &name);
        spec->hosts[i].ip = gt_xstrdup(ip);
        spec->hosts[i].hostname = gt_xstrdup(name);
    }
}

static struct gt_shim_image *image_new(const json_t *o)
{
    struct gt_shim_image *im = gt_xcalloc(1, sizeof(*im));
    const char *ref, *dir, *runtime, *runtime_root, *wd = NULL, *auth = NULL;
    json_t *command = NULL, *args = NULL, *insecure = NULL;
    json_int_t gc_bytes, gc_percent;
    json_unpack((json_t *)o, "{s:s, s:s, s:s, s:s, s?o, s?o, s?s, s?s, s?o, s:I, s:I}", "ref", &ref,
                "dir", &dir, "runtime", &runtime, "runtimeRoot", &runtime_root, "command", &command,
                "args", &args, "workingDir", &wd, "authFile", &auth, "insecureRegistries",
                &insecure, "gcThresholdBytes", &gc_bytes, "gcThresholdPercent", &gc_percent);
    im->ref = gt_xstrdup(ref);
    im->dir = gt_xstrdup(dir);
    im->runtime = gt_xstrdup(runtime);
    im->runtime_root = gt_xstrdup(runtime_root);
    im->command = strv_new(command, &im->n_command);
    im->args = strv_new(args, &im->n_args);
    im->working_dir = dup_or_null(wd);
    im->auth_file = dup_or_null(auth);
    im->insecure = strv_new(insecure, &im->n_insecure);
    im->gc_threshold_bytes = gc_bytes;
    im->gc_threshold_percent = gc_percent;
    return im;
}

static void decode(json_t *root, struct gt_shim_spec *spec)
{
    json_t *argv = NULL, *env = NULL, *groups = NULL, *ns = NULL, *cg, *log, *src = NULL;
    json_t *req = NULL, *pip = NULL, *vols = NULL, *hosts = NULL, *image = NULL;
    const char *cwd, *hostname = NULL, *venv = NULL, *data = NULL, *term = NULL;
    json_int_t uid, gid, grace;
    int priv;
    json_unpack(root,
                "{s?o, s?o, s:s, s:I, s:I, s?o, s:b, s?s, s?o, s:o, s:o, s:I, s?o, s?o, s?o, s?s, "
                "s?s, s?o, s?o, s?o, s?s}",
                "argv", &argv, "env", &env, "cwd", &cwd, "uid", &uid, "gid", &gid, "groups",
                &groups, "privileged", &priv, "hostname", &hostname, "namespaces", &ns, "cgroup",
                &cg, "log", &log, "stopGracePeriodMs", &grace, "source", &src, "requirements", &req,
                "pip", &pip, "venvDir", &venv, "dataDir", &data, "volumes", &vols, "hosts", &hosts,
                "image", &image, "terminationLog", &term);
    spec->argv = strv_new(argv, &spec->n_argv);
    spec->env = strv_new(env, &spec->n_env);
    spec->cwd = gt_xstrdup(cwd);
    spec->uid = (uid_t)uid;
    spec->gid = (gid_t)gid;
    if (groups) {
        spec->n_groups = json_array_size(groups);
        spec->groups = gt_xcalloc(spec->n_groups, sizeof(gid_t));
        for (size_t i = 0; i < spec->n_groups; i++) {
            spec->groups[i] = (gid_t)json_integer_value(json_array_get(groups, i));
        }
    }
    spec->privileged = priv;
    spec->hostname = dup_or_null(hostname);
    spec->namespaces = ns_bits(ns);
    decode_cgroup_log(cg, log, spec);
    spec->stop_grace_ms = grace;
    decode_prep(src, req, pip, spec);
    spec->venv_dir = dup_or_null(venv);
    spec->data_dir = dup_or_null(data);
    decode_mounts(vols, hosts, spec);
    spec->image = image ? image_new(image) : NULL;
    spec->termination_log = dup_or_null(term);
}

/* The rules between fields, on the decoded spec. */
static int check_spec(const struct gt_shim_spec *s, struct gt_err *err)
{
    for (size_t i = 0; i < s->n_groups; i++) {
        if (s->groups[i] == 0 && !s->privileged) {
            return gt_err_set(err, GT_EINVAL, "groups[%zu]: gid 0 needs privileged: true", i);
        }
    }
    /* an image task may take its whole command from the image */
    if (!s->image && s->n_argv == 0) {
        return gt_err_set(err, GT_EINVAL, "argv: want a non-empty list (or an image)");
    }
    if (!s->privileged && (s->uid == 0 || s->gid == 0)) {
        return gt_err_set(err, GT_EINVAL, "uid/gid 0 needs privileged: true");
    }
    if ((s->namespaces & GT_NS_PID) && !(s->namespaces & GT_NS_MOUNT)) {
        return gt_err_set(err, GT_EINVAL, "namespaces: pid needs mount (for a fresh /proc)");
    }
    if ((s->namespaces & GT_NS_USER) && (s->privileged || s->image)) {
        return gt_err_set(
            err, GT_EINVAL,
            "namespaces: user is for unprivileged host tasks (not privileged, no image)");
    }
    if (s->hostname && !(s->namespaces & GT_NS_UTS)) {
        return gt_err_set(err, GT_EINVAL, "hostname: needs the uts namespace");
    }
    if ((s->req_file || s->req_list) && !s->venv_dir) {
        return gt_err_set(err, GT_EINVAL, "venvDir: required with requirements");
    }
    if ((s->n_volumes || s->n_hosts || s->image) && !(s->namespaces & GT_NS_MOUNT)) {
        return gt_err_set(err, GT_EINVAL, "volumes, hosts, image: need the mount namespace");
    }
    for (int c = 0; s->cg_unified && c < GT_CG_NCTRL; c++) {
        if (s->cg_mounts[c]) {
            return gt_err_set(err, GT_EINVAL, "cgroup: unified or hierarchies, not both");
        }
    }
    return 0;
}

int gt_shim_spec_parse(const char *text, size_t len, struct gt_shim_spec *spec, struct gt_err *err)
{
    memset(spec, 0, sizeof(*spec));
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return gt_err_set(err, GT_EINVAL, "spec: not a JSON object (line %d: %s)", jerr.line,
                          root ? "not an object" : jerr.text);
    }
    int rc = gt_schema_validate(&spec_schema, root, "", err);
    if (rc == 0) {
        decode(root, spec);
        rc = check_spec(spec, err);
    }
    json_decref(root);
    if (rc < 0) {
        gt_err_prefix(err, "spec");
        gt_shim_spec_fini(spec);
    }
    return rc;
}

static json_t *strv_json(char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(a, json_string(v[i]));
    }
    return a;
}

static json_t *image_to_json(const struct gt_shim_image *im)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "ref", im->ref, "dir", im->dir, "runtime",
                          im->runtime, "runtimeRoot", im->runtime_root);
    if (im->n_command) {
        json_object_set_new(o, "command", strv_json(im->command, im->n_command));
    }
    if (im->n_args) {
        json_object_set_new(o, "args", strv_json(im->args, im->n_args));
    }
    if (im->working_dir) {
        json_object_set_new(o, "workingDir", json_string(im->working_dir));
    }
    if (im->auth_file) {
        json_object_set_new(o, "authFile", json_string(im->auth_file));
    }
    if (im->n_insecure) {
        json_object_set_new(o, "insecureRegistries", strv_json(im->insecure, im->n_insecure));
    }
    json_object_set_new(o, "gcThresholdBytes", json_integer(im->gc_threshold_bytes));
    json_object_set_new(o, "gcThresholdPercent", json_integer(im->gc_threshold_percent));
    return o;
}

/* The optional parts (source, requirements, volumes, hosts) into root. */
static void prep_to_json(const struct gt_shim_spec *spec, json_t *root)
{
    if (spec->git_url) {
        json_t *src = json_pack("{s:s}", "git", spec->git_url);
        if (spec->git_revision) {
            json_object_set_new(src, "revision", json_string(spec->git_revision));
        }
        json_object_set_new(root, "source", src);
    }
    if (spec->req_file) {
        json_object_set_new(root, "requirements", json_string(spec->req_file));
    } else if (spec->req_list) {
        json_object_set_new(root, "requirements", strv_json(spec->req_list, spec->n_req));
    }
    if (spec->pip_find_links || spec->pip_index_url) {
        json_t *pip = json_object();
        if (spec->pip_find_links) {
            json_object_set_new(pip, "findLinks", json_string(spec->pip_find_links));
        }
        if (spec->pip_index_url) {
            json_object_set_new(pip, "indexUrl", json_string(spec->pip_index_url));
        }
        json_object_set_new(root, "pip", pip);
    }
    if (spec->termination_log) {
        json_object_set_new(root, "terminationLog", json_string(spec->termination_log));
    }
    if (spec->venv_dir) {
        json_object_set_new(root, "venvDir", json_string(spec->venv_dir));
    }
    if (spec->data_dir) {
        json_object_set_new(root, "dataDir", json_string(spec->data_dir));
    }
    if (spec->n_volumes) {
        json_t *vols = json_array();
        for (size_t i = 0; i < spec->n_volumes; i++) {
            const struct gt_shim_volume *v = &spec->volumes[i];
            json_array_append_new(vols, json_pack("{s:s, s:s, s:s, s:b}", "root", v->root, "path",
                                                  v->path, "mountPath", v->mount_path, "readOnly",
                                                  v->read_only));
        }
        json_object_set_new(root, "volumes", vols);
    }
    if (spec->image) {
        json_object_set_new(root, "image", image_to_json(spec->image));
    }
    if (spec->n_hosts) {
        json_t *hosts = json_array();
        for (size_t i = 0; i < spec->n_hosts; i++) {
            json_array_append_new(hosts, json_pack("{s:s, s:s}", "ip", spec->hosts[i].ip,
                                                   "hostname", spec->hosts[i].hostname));
        }
        json_object_set_new(root, "hosts", hosts);
    }
}

char *gt_shim_spec_to_json(const struct gt_shim_spec *spec)
{
    json_t *root = json_object();
    json_object_set_new(root, "argv", strv_json(spec->argv, spec->n_argv));
    json_object_set_new(root, "env", strv_json(spec->env, spec->n_env));
    json_object_set_new(root, "cwd", json_string(spec->cwd));
    json_object_set_new(root, "uid", json_integer(spec->uid));
    json_object_set_new(root, "gid", json_integer(spec->gid));
    json_t *groups = json_array();
    for (size_t i = 0; i < spec->n_groups; i++) {
        json_array_append_new(groups, json_integer(spec->groups[i]));
    }
    json_object_set_new(root, "groups", groups);
    json_object_set_new(root, "privileged", json_boolean(spec->privileged));
    if (spec->hostname) {
        json_object_set_new(root, "hostname", json_string(spec->hostname));
    }
    json_t *ns = json_array();
    for (size_t k = 0; k < GT_ARRAY_LEN(ns_names); k++) {
        if (spec->namespaces & (1u << k)) {
            json_array_append_new(ns, json_string(ns_names[k]));
        }
    }
    json_object_set_new(root, "namespaces", ns);
    json_t *minors = json_array();
    for (size_t i = 0; i < spec->limits.n_gpu_minors; i++) {
        json_array_append_new(minors, json_integer(spec->limits.gpu_minors[i]));
    }
    json_t *cg = json_pack("{s:s, s:I, s:I, s:I, s:o}", "path", spec->cgroup_path, "cpuMilli",
                           (json_int_t)spec->limits.cpu_milli, "memoryBytes",
                           (json_int_t)spec->limits.memory_bytes, "pidsMax",
                           (json_int_t)spec->limits.pids_max, "gpuMinors", minors);
    if (spec->cg_unified) {
        json_object_set_new(cg, "unified", json_string(spec->cg_unified));
    }
    json_t *hier = json_object();
    for (int c = 0; c < GT_CG_NCTRL; c++) {
        if (spec->cg_mounts[c]) {
            json_object_set_new(hier, gt_cgroup_ctrl_name((enum gt_cgroup_ctrl)c),
                                json_string(spec->cg_mounts[c]));
        }
    }
    if (json_object_size(hier)) {
        json_object_set_new(cg, "hierarchies", hier);
    } else {
        json_decref(hier);
    }
    json_object_set_new(root, "cgroup", cg);
    json_object_set_new(root, "log",
                        json_pack("{s:s, s:I, s:i}", "dir", spec->log_dir, "maxBytes",
                                  (json_int_t)spec->log_max_bytes, "keepFiles",
                                  spec->log_keep_files));
    json_object_set_new(root, "stopGracePeriodMs", json_integer(spec->stop_grace_ms));
    prep_to_json(spec, root);
    char *s = gt_json_dumps(root);
    json_decref(root);
    return s;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++) {
        free(v[i]);
    }
    free(v);
}

void gt_shim_spec_fini(struct gt_shim_spec *spec)
{
    strv_free(spec->argv);
    strv_free(spec->env);
    free(spec->cwd);
    free(spec->groups);
    free(spec->hostname);
    free(spec->cgroup_path);
    free(spec->cg_unified);
    for (int c = 0; c < GT_CG_NCTRL; c++) {
        free(spec->cg_mounts[c]);
    }
    free(spec->minors);
    free(spec->log_dir);
    free(spec->git_url);
    free(spec->git_revision);
    free(spec->req_file);
    strv_free(spec->req_list);
    free(spec->pip_find_links);
    free(spec->pip_index_url);
    free(spec->venv_dir);
    free(spec->termination_log);
    free(spec->data_dir);
    for (size_t i = 0; spec->volumes && i < spec->n_volumes; i++) {
        free(spec->volumes[i].root);
        free(spec->volumes[i].path);
        free(spec->volumes[i].mount_path);
    }
    free(spec->volumes);
    for (size_t i = 0; spec->hosts && i < spec->n_hosts; i++) {
        free(spec->hosts[i].ip);
        free(spec->hosts[i].hostname);
    }
    free(spec->hosts);
    if (spec->image) {
        free(spec->image->ref);
        free(spec->image->dir);
        free(spec->image->runtime);
        free(spec->image->runtime_root);
        strv_free(spec->image->command);
        strv_free(spec->image->args);
        free(spec->image->working_dir);
        free(spec->image->auth_file);
        strv_free(spec->image->insecure);
        free(spec->image);
    }
    memset(spec, 0, sizeof(*spec));
}

char *gt_shim_exit_to_json(const struct gt_shim_exit *ex)
{
    json_t *o = json_pack("{s:i, s:i, s:b, s:I, s:I, s:b, s:s, s:s, s:s}", "exitCode",
                          ex->exit_code, "signal", ex->signal, "oomKilled", ex->oom_killed,
                          "startedAtMs", (json_int_t)ex->started_at_ms, "finishedAtMs",
                          (json_int_t)ex->finished_at_ms, "stopRequested", ex->stop_requested,
                          "stopReason", ex->stop_reason, "error", ex->error, "reason", ex->reason);
    char *s = gt_json_dumps(o);
    json_decref(o);
    return s;
}

int gt_shim_exit_read(const char *state_dir, struct gt_shim_exit *ex, struct gt_err *err)
{
    char path[512], *text;
    size_t len;
    memset(ex, 0, sizeof(*ex));
    snprintf(path, sizeof(path), "%s/exit.json", state_dir);
    int rc = gt_file_read(path, 64 * 1024, &text, &len, err);
    if (rc < 0) {
        return rc;
    }
    json_t *o = json_loadb(text, len, 0, NULL);
    free(text);
    json_int_t started = 0, finished = 0;
    int oom = 0, stopped = 0;
    const char *reason = "", *error = "", *why = "";
    if (!o || json_unpack(o, "{s:i, s:i, s:b, s:I, s:I, s:b, s:s, s:s, s?s}", "exitCode",
                          &ex->exit_code, "signal", &ex->signal, "oomKilled", &oom, "startedAtMs",
                          &started, "finishedAtMs", &finished, "stopRequested", &stopped,
                          "stopReason", &reason, "error", &error, "reason", &why) < 0) {
        json_decref(o);
        return gt_err_set(err, GT_EINVAL, "%s: malformed", path);
    }
    ex->oom_killed = oom;
    ex->stop_requested = stopped;
    ex->started_at_ms = started;
    ex->finished_at_ms = finished;
    snprintf(ex->stop_reason, sizeof(ex->stop_reason), "%s", reason);
    snprintf(ex->error, sizeof(ex->error), "%s", error);
    snprintf(ex->reason, sizeof(ex->reason), "%s", why);
    json_decref(o);
    return 0;
}

int gt_shim_read_pid(const char *state_dir, const char *name, pid_t *pid, struct gt_err *err)
{
    char path[512], *text;
    size_t len;
    snprintf(path, sizeof(path), "%s/%s", state_dir, name);
    int rc = gt_file_read(path, 64, &text, &len, err);
    if (rc < 0) {
        return rc;
    }
    char *end;
    long v = strtol(text, &end, 10);
    bool ok = end != text && (*end == '\0' || *end == '\n') && v > 0 && v <= INT32_MAX;
    free(text);
    if (!ok) {
        return gt_err_set(err, GT_EINVAL, "%s: not a pid", path);
    }
    *pid = (pid_t)v;
    return 0;
}

/* Whether pid is a live gantry-shim (guards against a recycled pid and
 * an exited shim its new parent has not reaped yet). */
static bool is_shim(pid_t pid)
{
    char path[64], *stat;
    size_t len;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (gt_file_read(path, 4096, &stat, &len, NULL) < 0) {
        return false;
    }
    /* "<pid> (<comm>) <state> ..." */
    const char *close_paren = strrchr(stat, ')');
    bool yes = strstr(stat, " (gantry-shim) ") != NULL && close_paren && close_paren[1] == ' ' &&
               close_paren[2] != 'Z' && close_paren[2] != 'X';
    free(stat);
    return yes;
}

int gt_shim_stop(const char *state_dir, const char *reason, int64_t grace_ms, struct gt_err *err)
{
    pid_t pid;
    int rc = gt_shim_read_pid(state_dir, "shim.pid", &pid, err);
    if (rc < 0) {
        return rc;
    }
    json_t *o = json_pack("{s:s, s:I}", "reason", reason, "gracePeriodMs", (json_int_t)grace_ms);
    char *text = gt_json_dumps(o);
    json_decref(o);
    rc = gt_agent_file_write_atomic(state_dir, "stop", text, strlen(text), false, err);
    free(text);
    if (rc < 0) {
        return rc;
    }
    if (!is_shim(pid) || kill(pid, SIGTERM) < 0) {
        return gt_err_set(err, -ESRCH, "%s: shim %d is gone", state_dir, (int)pid);
    }
    return 0;
}
