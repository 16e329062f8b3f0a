/*
 * The shim's state-directory formats (see shim.h): spec.json parsed
 * strictly (unknown fields, wrong types and out-of-range values rejected
 * with the field path), exit.json, pid files and the stop request. Shared by
 * the agent (writer of spec and stop, reader of the rest) and the shim.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_int.h"
#include "agent/shim.h"

#define MAX_SPEC_BYTES (1 << 20)

static const char *const ns_names[] = {"pid", "mount", "uts", "ipc"};

static int check_keys(json_t *obj, const char *where, const char *const *keys, size_t n_keys,
                      struct gt_err *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        bool known = false;
        for (size_t i = 0; i < n_keys && !known; i++) {
            known = strcmp(key, keys[i]) == 0;
        }
        if (!known) {
            return gt_err_set(err, GT_EINVAL, "%s%s: unknown field", where, key);
        }
    }
    return 0;
}

static int get_int(json_t *obj, const char *key, const char *where, int64_t lo, int64_t hi,
                   int64_t *out, struct gt_err *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        return gt_err_set(err, GT_EINVAL, "%s%s: want an integer in %lld..%lld", where, key,
                          (long long)lo, (long long)hi);
    }
    *out = json_integer_value(v);
    return 0;
}

static int get_str(json_t *obj, const char *key, const char *where, bool required, char **out,
                   struct gt_err *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v && !required) {
        return 0;
    }
    if (!json_is_string(v) || json_string_length(v) == 0 ||
        strlen(json_string_value(v)) != json_string_length(v)) {
        return gt_err_set(err, GT_EINVAL, "%s%s: want a non-empty string", where, key);
    }
    *out = gt_xstrdup(json_string_value(v));
    return 0;
}

/* A JSON array of strings into a new NULL-terminated vector. */
static int get_strv(json_t *obj, const char *key, bool required, char ***out, size_t *n,
                    struct gt_err *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v && !required) {
        *out = gt_xcalloc(1, sizeof(char *));
        return 0;
    }
    if (!json_is_array(v) || (required && json_array_size(v) == 0)) {
        return gt_err_set(err, GT_EINVAL, "%s: want a%s array of strings", key,
                          required ? " non-empty" : "n");
    }
    *n = json_array_size(v);
    *out = gt_xcalloc(*n + 1, sizeof(char *));
    for (size_t i = 0; i < *n; i++) {
        json_t *s = json_array_get(v, i);
        if (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s)) {
            return gt_err_set(err, GT_EINVAL, "%s[%zu]: want a string without NUL", key, i);
        }
        (*out)[i] = gt_xstrdup(json_string_value(s));
    }
    return 0;
}

static int parse_cgroup(json_t *cg, struct gt_shim_spec *spec, struct gt_err *err)
{
    static const char *const keys[] = {"path", "cpuMilli", "memoryBytes", "pidsMax", "gpuMinors"};
    if (!json_is_object(cg)) {
        return gt_err_set(err, GT_EINVAL, "cgroup: want an object");
    }
    int rc = check_keys(cg, "cgroup.", keys, GT_ARRAY_LEN(keys), err);
    rc = rc < 0 ? rc : get_str(cg, "path", "cgroup.", true, &spec->cgroup_path, err);
    rc = rc < 0 ? rc
                : get_int(cg, "cpuMilli", "cgroup.", 0, INT64_MAX / 1000, &spec->limits.cpu_milli,
                          err);
    rc = rc < 0
             ? rc
             : get_int(cg, "memoryBytes", "cgroup.", 0, INT64_MAX, &spec->limits.memory_bytes, err);
    rc = rc < 0 ? rc : get_int(cg, "pidsMax", "cgroup.", 0, INT32_MAX, &spec->limits.pids_max, err);
    json_t *minors = json_object_get(cg, "gpuMinors");
    if (rc < 0 || !minors) {
        return rc;
    }
    if (!json_is_array(minors) || json_array_size(minors) > 1024) {
        return gt_err_set(err, GT_EINVAL, "cgroup.gpuMinors: want an array of integers");
    }
    spec->minors = gt_xcalloc(json_array_size(minors), sizeof(int));
    for (size_t i = 0; i < json_array_size(minors); i++) {
        json_t *m = json_array_get(minors, i);
        if (!json_is_integer(m) || json_integer_value(m) < 0 || json_integer_value(m) > 1 << 20) {
            return gt_err_set(err, GT_EINVAL, "cgroup.gpuMinors[%zu]: want a device minor", i);
        }
        spec->minors[i] = (int)json_integer_value(m);
    }
    spec->limits.gpu_minors = spec->minors;
    spec->limits.n_gpu_minors = json_array_size(minors);
    return 0;
}

static int parse_log(json_t *log, struct gt_shim_spec *spec, struct gt_err *err)
{
    static const char *const keys[] = {"dir", "maxBytes", "keepFiles"};
    if (!json_is_object(log)) {
        return gt_err_set(err, GT_EINVAL, "log: want an object");
    }
    int64_t keep = 3;
    int rc = check_keys(log, "log.", keys, GT_ARRAY_LEN(keys), err);
    rc = rc < 0 ? rc : get_str(log, "dir", "log.", true, &spec->log_dir, err);
    rc = rc < 0 ? rc : get_int(log, "maxBytes", "log.", 0, INT64_MAX, &spec->log_max_bytes, err);
    rc = rc < 0 ? rc : get_int(log, "keepFiles", "log.", 0, 100, &keep, err);
    spec->log_keep_files = (int)keep;
    if (rc == 0 && spec->log_dir[0] != '/') {
        return gt_err_set(err, GT_EINVAL, "log.dir: want an absolute path");
    }
    return rc;
}

static int parse_namespaces(json_t *v, struct gt_shim_spec *spec, struct gt_err *err)
{
    if (!json_is_array(v)) {
        return gt_err_set(err, GT_EINVAL, "namespaces: want an array of pid, mount, uts, ipc");
    }
    for (size_t i = 0; i < json_array_size(v); i++) {
        const char *s = json_string_value(json_array_get(v, i));
        size_t k = 0;
        while (k < GT_ARRAY_LEN(ns_names) && (!s || strcmp(s, ns_names[k]) != 0)) {
            k++;
        }
        if (k == GT_ARRAY_LEN(ns_names)) {
            return gt_err_set(err, GT_EINVAL, "namespaces[%zu]: want pid, mount, uts or ipc", i);
        }
        spec->namespaces |= 1u << k;
    }
    if ((spec->namespaces & GT_NS_PID) && !(spec->namespaces & GT_NS_MOUNT)) {
        return gt_err_set(err, GT_EINVAL, "namespaces: pid needs mount (for a fresh /proc)");
    }
    return 0;
}

static int parse_ids(json_t *root, struct gt_shim_spec *spec, struct gt_err *err)
{
    int64_t uid = -1, gid = -1;
    int rc = get_int(root, "uid", "", 0, UINT32_MAX - 1, &uid, err);
    rc = rc < 0 ? rc : get_int(root, "gid", "", 0, UINT32_MAX - 1, &gid, err);
    if (rc == 0 && (uid < 0 || gid < 0)) {
        return gt_err_set(err, GT_EINVAL, "%s: required", uid < 0 ? "uid" : "gid");
    }
    json_t *priv = json_object_get(root, "privileged");
    if (rc == 0 && priv && !json_is_boolean(priv)) {
        return gt_err_set(err, GT_EINVAL, "privileged: want a boolean");
    }
    spec->privileged = json_is_true(priv);
    spec->uid = (uid_t)uid;
    spec->gid = (gid_t)gid;
    if (rc == 0 && !spec->privileged && (uid == 0 || gid == 0)) {
        return gt_err_set(err, GT_EINVAL, "uid/gid 0 needs privileged: true");
    }
    json_t *groups = json_object_get(root, "groups");
    if (rc < 0 || !groups) {
        return rc;
    }
    if (!json_is_array(groups) || json_array_size(groups) > 64) {
        return gt_err_set(err, GT_EINVAL, "groups: want an array of at most 64 gids");
    }
    spec->n_groups = json_array_size(groups);
    spec->groups = gt_xcalloc(spec->n_groups, sizeof(gid_t));
    for (size_t i = 0; i < spec->n_groups; i++) {
        json_t *g = json_array_get(groups, i);
        if (!json_is_integer(g) || json_integer_value(g) < 0 ||
            json_integer_value(g) >= UINT32_MAX ||
            (json_integer_value(g) == 0 && !spec->privileged)) {
            return gt_err_set(err, GT_EINVAL, "groups[%zu]: want a gid (0 needs privileged)", i);
        }
        spec->groups[i] = (gid_t)json_integer_value(g);
    }
    return 0;
}

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

static int parse_source(json_t *src, struct gt_shim_spec *spec, struct gt_err *err)
{
    static const char *const keys[] = {"git", "revision"};
    if (!json_is_object(src)) {
        return gt_err_set(err, GT_EINVAL, "source: want an object");
    }
    int rc = check_keys(src, "source.", keys, GT_ARRAY_LEN(keys), err);
    rc = rc < 0 ? rc : get_str(src, "git", "source.", true, &spec->git_url, err);
    rc = rc < 0 ? rc : get_str(src, "revision", "source.", false, &spec->git_revision, err);
    /* git would take a leading '-' as an option */
    if (rc == 0 &&
        (spec->git_url[0] == '-' || (spec->git_revision && spec->git_revision[0] == '-'))) {
        rc = gt_err_set(err, GT_EINVAL, "source: must not start with '-'");
    }
    return rc;
}

static int parse_requirements(json_t *root, struct gt_shim_spec *spec, struct gt_err *err)
{
    json_t *req = json_object_get(root, "requirements");
    int rc = 0;
    if (json_is_string(req)) {
        rc = get_str(root, "requirements", "", true, &spec->req_file, err);
    } else if (req) {
        rc = get_strv(root, "requirements", false, &spec->req_list, &spec->n_req, err);
        for (size_t i = 0; rc == 0 && i < spec->n_req; i++) {
            if (strchr(spec->req_list[i], '\n')) {
                rc = gt_err_set(err, GT_EINVAL, "requirements[%zu]: one line each", i);
            }
        }
    }
    json_t *pip = json_object_get(root, "pip");
    if (rc == 0 && pip) {
        static const char *const keys[] = {"findLinks", "indexUrl"};
        rc = json_is_object(pip) ? check_keys(pip, "pip.", keys, GT_ARRAY_LEN(keys), err)
                                 : gt_err_set(err, GT_EINVAL, "pip: want an object");
        rc = rc < 0 ? rc : get_str(pip, "findLinks", "pip.", false, &spec->pip_find_links, err);
        rc = rc < 0 ? rc : get_str(pip, "indexUrl", "pip.", false, &spec->pip_index_url, err);
    }
    rc = rc < 0 ? rc : get_str(root, "venvDir", "", req != NULL, &spec->venv_dir, err);
    if (rc == 0 && spec->venv_dir && spec->venv_dir[0] != '/') {
        rc = gt_err_set(err, GT_EINVAL, "venvDir: want an absolute path");
    }
    rc = rc < 0 ? rc : get_str(root, "dataDir", "", false, &spec->data_dir, err);
    if (rc == 0 && spec->data_dir && spec->data_dir[0] != '/') {
        rc = gt_err_set(err, GT_EINVAL, "dataDir: want an absolute path");
    }
    return rc;
}

static int parse_volume(json_t *v, size_t i, struct gt_shim_volume *vol, struct gt_err *err)
{
    static const char *const keys[] = {"root", "path", "mountPath", "readOnly"};
    char where[48];
    snprintf(where, sizeof(where), "volumes[%zu].", i);
    if (!json_is_object(v)) {
        return gt_err_set(err, GT_EINVAL, "volumes[%zu]: want an object", i);
    }
    int rc = check_keys(v, where, keys, GT_ARRAY_LEN(keys), err);
    rc = rc < 0 ? rc : get_str(v, "root", where, true, &vol->root, err);
    rc = rc < 0 ? rc : get_str(v, "path", where, true, &vol->path, err);
    rc = rc < 0 ? rc : get_str(v, "mountPath", where, true, &vol->mount_path, err);
    json_t *ro = json_object_get(v, "readOnly");
    if (rc == 0 && ro && !json_is_boolean(ro)) {
        rc = gt_err_set(err, GT_EINVAL, "%sreadOnly: want a boolean", where);
    }
    vol->read_only = json_is_true(ro);
    if (rc == 0 && (vol->root[0] != '/' || vol->mount_path[0] != '/' || vol->path[0] == '/' ||
                    strlen(vol->mount_path) >= PATH_MAX - 1)) {
        rc = gt_err_set(err, GT_EINVAL, "%s: root and mountPath absolute, path relative", where);
    }
    return rc;
}

static int parse_mounts(json_t *root, struct gt_shim_spec *spec, struct gt_err *err)
{
    json_t *vols = json_object_get(root, "volumes");
    json_t *hosts = json_object_get(root, "hosts");
    if ((vols || hosts) && !(spec->namespaces & GT_NS_MOUNT)) {
        return gt_err_set(err, GT_EINVAL, "volumes, hosts: need the mount namespace");
    }
    if (vols && (!json_is_array(vols) || json_array_size(vols) > 64)) {
        return gt_err_set(err, GT_EINVAL, "volumes: want an array of at most 64");
    }
    if (hosts && (!json_is_array(hosts) || json_array_size(hosts) > 4096)) {
        return gt_err_set(err, GT_EINVAL, "hosts: want an array of at most 4096");
    }
    spec->n_volumes = json_array_size(vols);
    spec->volumes = gt_xcalloc(spec->n_volumes + 1, sizeof(*spec->volumes));
    for (size_t i = 0; i < spec->n_volumes; i++) {
        int rc = parse_volume(json_array_get(vols, i), i, &spec->volumes[i], err);
        if (rc < 0) {
            return rc;
        }
    }
    spec->n_hosts = json_array_size(hosts);
    spec->hosts = gt_xcalloc(spec->n_hosts + 1, sizeof(*spec->hosts));
    for (size_t i = 0; i < spec->n_hosts; i++) {
        json_t *h = json_array_get(hosts, i);
        const char *ip = json_string_value(json_object_get(h, "ip"));
        const char *name = json_string_value(json_object_get(h, "hostname"));
        if (json_object_size(h) != 2 || !ip || !name || !gt_shim_host_valid(name, ip)) {
            return gt_err_set(err, GT_EINVAL, "hosts[%zu]: want {ip, hostname}, valid", i);
        }
        spec->hosts[i].ip = gt_xstrdup(ip);
        spec->hosts[i].hostname = gt_xstrdup(name);
    }
    return 0;
}

static int parse_image(json_t *o, struct gt_shim_spec *spec, struct gt_err *err)
{
    static const char *const keys[] = {"ref",
                                       "dir",
                                       "runtime",
                                       "runtimeRoot",
                                       "command",
                                       "args",
                                       "workingDir",
                                       "authFile",
                                       "insecureRegistries",
                                       "gcThresholdBytes",
                                       "gcThresholdPercent"};
    if (!json_is_object(o)) {
        return gt_err_set(err, GT_EINVAL, "image: want an object");
    }
    struct gt_shim_image *im = spec->image = gt_xcalloc(1, sizeof(*im));
    int rc = check_keys(o, "image.", keys, GT_ARRAY_LEN(keys), err);
    rc = rc < 0 ? rc : get_str(o, "ref", "image.", true, &im->ref, err);
    rc = rc < 0 ? rc : get_str(o, "dir", "image.", true, &im->dir, err);
    rc = rc < 0 ? rc : get_str(o, "runtime", "image.", true, &im->runtime, err);
    rc = rc < 0 ? rc : get_str(o, "runtimeRoot", "image.", true, &im->runtime_root, err);
    rc = rc < 0 ? rc : get_strv(o, "command", false, &im->command, &im->n_command, err);
    rc = rc < 0 ? rc : get_strv(o, "args", false, &im->args, &im->n_args, err);
    rc = rc < 0 ? rc : get_str(o, "workingDir", "image.", false, &im->working_dir, err);
    rc = rc < 0 ? rc : get_str(o, "authFile", "image.", false, &im->auth_file, err);
    rc =
        rc < 0 ? rc : get_strv(o, "insecureRegistries", false, &im->insecure, &im->n_insecure, err);
    rc = rc < 0
             ? rc
             : get_int(o, "gcThresholdBytes", "image.", 0, INT64_MAX, &im->gc_threshold_bytes, err);
    rc = rc < 0
             ? rc
             : get_int(o, "gcThresholdPercent", "image.", 0, 100, &im->gc_threshold_percent, err);
    if (rc == 0 && (strcmp(im->runtime, "runc") != 0 && strcmp(im->runtime, "crun") != 0)) {
        rc = gt_err_set(err, GT_EINVAL, "image.runtime: want runc or crun");
    }
    if (rc == 0 && (im->dir[0] != '/' || im->runtime_root[0] != '/' ||
                    (im->working_dir && im->working_dir[0] != '/'))) {
        rc = gt_err_set(err, GT_EINVAL, "image: dir, runtimeRoot and workingDir absolute");
    }
    if (rc == 0 && !(spec->namespaces & GT_NS_MOUNT)) {
        rc = gt_err_set(err, GT_EINVAL, "image: needs the mount namespace");
    }
    return rc;
}

static int parse_root(json_t *root, struct gt_shim_spec *spec, struct gt_err *err)
{
    static const char *const keys[] = {
        "argv",       "env",          "cwd",        "uid",     "gid",     "groups",
        "privileged", "hostname",     "namespaces", "cgroup",  "log",     "stopGracePeriodMs",
        "source",     "requirements", "pip",        "venvDir", "volumes", "hosts",
        "image",      "dataDir"};
    int rc = check_keys(root, "", keys, GT_ARRAY_LEN(keys), err);
    /* an image task may take its whole command from the image */
    bool image = json_object_get(root, "image") != NULL;
    rc = rc < 0 ? rc : get_strv(root, "argv", !image, &spec->argv, &spec->n_argv, err);
    rc = rc < 0 ? rc : get_strv(root, "env", false, &spec->env, &spec->n_env, err);
    for (size_t i = 0; rc == 0 && i < spec->n_env; i++) {
        if (!strchr(spec->env[i], '=') || spec->env[i][0] == '=') {
            rc = gt_err_set(err, GT_EINVAL, "env[%zu]: want NAME=value", i);
        }
    }
    rc = rc < 0 ? rc : get_str(root, "cwd", "", true, &spec->cwd, err);
    if (rc == 0 && spec->cwd[0] != '/') {
        rc = gt_err_set(err, GT_EINVAL, "cwd: want an absolute path");
    }
    rc = rc < 0 ? rc : parse_ids(root, spec, err);
    rc = rc < 0 ? rc : get_str(root, "hostname", "", false, &spec->hostname, err);
    if (rc == 0 && spec->hostname && strlen(spec->hostname) > 64) {
        rc = gt_err_set(err, GT_EINVAL, "hostname: at most 64 characters");
    }
    json_t *ns = json_object_get(root, "namespaces");
    rc = rc < 0 || !ns ? rc : parse_namespaces(ns, spec, err);
    if (rc == 0 && spec->hostname && !(spec->namespaces & GT_NS_UTS)) {
        rc = gt_err_set(err, GT_EINVAL, "hostname: needs the uts namespace");
    }
    rc = rc < 0 ? rc : parse_cgroup(json_object_get(root, "cgroup"), spec, err);
    rc = rc < 0 ? rc : parse_log(json_object_get(root, "log"), spec, err);
    spec->stop_grace_ms = 30000;
    rc = rc < 0 ? rc
                : get_int(root, "stopGracePeriodMs", "", 0, 24LL * 3600 * 1000,
                          &spec->stop_grace_ms, err);
    json_t *src = json_object_get(root, "source");
    rc = rc < 0 || !src ? rc : parse_source(src, spec, err);
    rc = rc < 0 ? rc : parse_requirements(root, spec, err);
    rc = rc < 0 || !image ? rc : parse_image(json_object_get(root, "image"), spec, err);
    return rc < 0 ? rc : parse_mounts(root, spec, err);
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
    int rc = parse_root(root, spec, err);
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
    json_object_set_new(root, "cgroup",
                        json_pack("{s:s, s:I, s:I, s:I, s:o}", "path", spec->cgroup_path,
                                  "cpuMilli", (json_int_t)spec->limits.cpu_milli, "memoryBytes",
                                  (json_int_t)spec->limits.memory_bytes, "pidsMax",
                                  (json_int_t)spec->limits.pids_max, "gpuMinors", minors));
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
    free(spec->minors);
    free(spec->log_dir);
    free(spec->git_url);
    free(spec->git_revision);
    free(spec->req_file);
    strv_free(spec->req_list);
    free(spec->pip_find_links);
    free(spec->pip_index_url);
    free(spec->venv_dir);
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
