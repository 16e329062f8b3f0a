/*
 * The network-free halves of `gantry run` and `gantry logs`: the Job that
 * `run` submits (one task, or a Master and Workers) and the requirement lines
 * of a local requirements file, the exit status a finished Task maps to, and
 * which Task `logs` reads. Kept apart from the commands so unit tests can check
 * them without a server.
 *
 * A Job's tasks are named `<job>-<type>-<index>` with the replica type in
 * lower case ("train-worker-0"), as the job controller names them.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cli/cli.h"
#include "common/jsonutil.h"
#include "common/resource.h"

char *gt_cli_run_name_new(void)
{
    uint32_t r = 0;
    while (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
        GT_ASSERT(errno == EINTR);
    }
    return gt_xasprintf("run-%08x", r);
}

/* Add limits[res] = value (a quantity as typed) when value is non-NULL. */
static void add_limit(json_t *limits, const char *res, const char *value)
{
    if (value) {
        json_object_set_new(limits, res, json_string(value));
    }
}

/* One replica spec: restartPolicy Never, the template (a new reference taken). */
static json_t *replica_spec(int replicas, json_t *tmpl)
{
    return json_pack("{s:i, s:s, s:o}", "replicas", replicas, "restartPolicy", "Never", "template",
                     tmpl);
}

/* --volume NAME:/PATH[:ro] (v) into spec's volumes and tmpl's mounts.
 * 0, or GT_EINVAL naming the flag. */
static int add_volume(const char *v, json_t *volumes, json_t *mounts, struct gt_err *err)
{
    const char *colon = strchr(v, ':');
    const char *path = colon ? colon + 1 : NULL;
    const char *ro = path ? strchr(path, ':') : NULL;
    if (!colon || colon == v || !path || path[0] != '/' || (ro && strcmp(ro, ":ro") != 0)) {
        return gt_err_set(err, GT_EINVAL, "--volume %s: want NAME:/PATH or NAME:/PATH:ro", v);
    }
    char *name = gt_xstrndup(v, (size_t)(colon - v));
    struct gt_err e = {0};
    if (gt_api_check_name(name, &e)) {
        free(name);
        return gt_err_set(err, GT_EINVAL, "--volume %s: NAME %s", v, e.msg);
    }
    char *mount_path = gt_xstrndup(path, ro ? (size_t)(ro - path) : strlen(path));
    json_array_append_new(volumes, json_pack("{s:s, s:s}", "name", name, "volume", name));
    json_array_append_new(mounts, json_pack("{s:s, s:s, s:b}", "name", name, "mountPath",
                                            mount_path, "readOnly", ro != NULL));
    free(name);
    free(mount_path);
    return 0;
}

int gt_cli_run_job_build(const struct gt_cli_run_opts *o, json_t **job, struct gt_err *err)
{
    *job = NULL;
    json_t *command = json_array();
    for (int i = 0; i < o->argc; i++) {
        json_array_append_new(command, json_string(o->argv[i]));
    }
    json_t *tmpl = json_pack("{s:o}", "command", command);
    if (o->image) {
        json_object_set_new(tmpl, "image", json_string(o->image));
    }
    json_t *volumes = json_array(), *mounts = json_array();
    for (size_t i = 0; i < o->n_volumes; i++) {
        int rc = add_volume(o->volumes[i], volumes, mounts, err);
        if (rc < 0) {
            json_decref(volumes);
            json_decref(mounts);
            json_decref(tmpl);
            return rc;
        }
    }
    if (o->n_volumes) {
        json_object_set(tmpl, "volumeMounts", mounts);
    }
    json_decref(mounts);
    if (o->workdir) {
        json_object_set_new(tmpl, "workingDir", json_string(o->workdir));
    }
    json_t *limits = json_object();
    add_limit(limits, GT_RES_NAME_GPU, o->gpus);
    add_limit(limits, "cpu", o->cpu);
    add_limit(limits, "memory", o->memory);
    if (json_object_size(limits) > 0) {
        json_object_set_new(tmpl, "resources", json_pack("{s:o}", "limits", limits));
    } else {
        json_decref(limits);
    }
    json_t *specs = json_object();
    if (o->workers > 0) {
        json_object_set_new(specs, "Master", replica_spec(1, json_deep_copy(tmpl)));
    }
    json_object_set_new(specs, "Worker", replica_spec(o->workers > 0 ? o->workers : 1, tmpl));
    json_t *spec = json_pack("{s:o}", "replicaSpecs", specs);
    if (o->git) {
        json_t *src = json_pack("{s:s}", "git", o->git);
        if (o->revision) {
            json_object_set_new(src, "revision", json_string(o->revision));
        }
        json_object_set_new(spec, "source", src);
    }
    if (o->requirements) {
        json_object_set_new(spec, "requirements", json_deep_copy(o->requirements));
    }
    if (o->n_volumes) {
        json_object_set(spec, "volumes", volumes);
    }
    json_decref(volumes);
    json_t *obj =
        json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", GT_API_VERSION, "kind", "Job",
                  "metadata", "name", o->name, "project", o->project, "spec", spec);
    GT_ASSERT(obj);
    int rc = gt_api_validate(GT_KIND_JOB, obj, err);
    if (rc < 0) {
        json_decref(obj);
        return rc;
    }
    *job = obj;
    return 0;
}

/* Does line (n bytes) start an include of another file: -r/-c/--requirement/
 * --constraint? */
static bool is_include(const char *line, size_t n)
{
    static const char *const opts[] = {"-r", "-c", "--requirement", "--constraint"};
    for (size_t i = 0; i < GT_ARRAY_LEN(opts); i++) {
        size_t k = strlen(opts[i]);
        if (n >= k && !strncmp(line, opts[i], k) &&
            (n == k || isspace((unsigned char)line[k]) || line[k] == '=' || opts[i][1] != '-')) {
            return true;
        }
    }
    return false;
}

int gt_cli_requirements_parse(const char *text, size_t len, json_t **out, struct gt_err *err)
{
    *out = NULL;
    if (memchr(text, '\0', len)) {
        return gt_err_set(err, GT_EINVAL, "not a text file (it holds a NUL byte)");
    }
    json_t *lines = json_array();
    size_t lineno = 0;
    for (size_t at = 0; at < len;) {
        const char *start = text + at;
        const char *nl = memchr(start, '\n', len - at);
        size_t n = nl ? (size_t)(nl - start) : len - at;
        at += n + 1;
        lineno++;
        /* pip's comments: '#' at the start of a line or after whitespace */
        for (size_t i = 0; i < n; i++) {
            if (start[i] == '#' && (i == 0 || isspace((unsigned char)start[i - 1]))) {
                n = i;
                break;
            }
        }
        while (n > 0 && isspace((unsigned char)*start)) {
            start++;
            n--;
        }
        while (n > 0 && isspace((unsigned char)start[n - 1])) {
            n--;
        }
        if (n == 0) {
            continue;
        }
        if (is_include(start, n)) {
            json_decref(lines);
            return gt_err_set(err, GT_EINVAL,
                              "line %zu: includes another file (%.*s); list its packages instead",
                              lineno, (int)(n > 80 ? 80 : n), start);
        }
        json_array_append_new(lines, json_stringn(start, n));
    }
    *out = lines;
    return 0;
}

int gt_cli_task_exit_status(const struct gt_api_task *task, char *msg, size_t len)
{
    const struct gt_api_task_status *st = &task->status;
    const char *name = task->o.meta.name;
    msg[0] = '\0';
    if (st->phase == GT_TASK_SUCCEEDED) {
        return 0;
    }
    int code = 1;
    if (st->signal > 0 && st->signal < 128) {
        code = 128 + (int)st->signal;
    } else if (st->exit_code != GT_API_UNSET && st->exit_code != 0) {
        /* What a shell would see: the low byte of the status. */
        int v = (int)(st->exit_code & 0xff);
        code = v ? v : 1;
    }
    /* the command's own failure speaks for itself; anything else (it did
     * not start, was stopped, ran out of memory) is said */
    const char *reason = st->reason;
    bool own = !st->message && (!reason || !strcmp(reason, "Error"));
    if (code != 1 && own) {
        return code;
    }
    /* the phase as the server wrote it, or none */
    const char *phase = json_string_value(gt_json_path(task->o.json, "status.phase"));
    const char *why = st->message;
    snprintf(msg, len, "task %s %s%s%s%s%s", name ? name : "?", phase ? "ended " : "did not finish",
             phase ? phase : "", reason ? ": " : "", reason ? reason : "", why && *why ? " (" : "");
    if (why && *why) {
        size_t n = strlen(msg);
        snprintf(msg + n, len - n, "%s)", why);
    }
    return code;
}

/* Is s "<type>-<index>": letters, one '-', digits? */
static bool is_replica_word(const char *s)
{
    const char *dash = strchr(s, '-');
    if (!dash || dash == s || !dash[1] || strchr(dash + 1, '-')) {
        return false;
    }
    for (const char *p = s; p < dash; p++) {
        if (!isalpha((unsigned char)*p)) {
            return false;
        }
    }
    for (const char *p = dash + 1; *p; p++) {
        if (!isdigit((unsigned char)*p)) {
            return false;
        }
    }
    return true;
}

/* The replica type a job's logs show by default: Master, else Chief, else
 * Worker, else the first one the Job names. */
static const char *default_type(const struct gt_api_job *job)
{
    static const char *const preferred[] = {"Master", "Chief", "Worker"};
    const struct gt_api_job_spec *spec = &job->spec;
    for (size_t i = 0; i < GT_ARRAY_LEN(preferred); i++) {
        for (size_t k = 0; k < spec->replica_specs.n; k++) {
            if (!strcmp(spec->replica_specs.v[k].type, preferred[i])) {
                return preferred[i];
            }
        }
    }
    return spec->replica_specs.n ? spec->replica_specs.v[0].type : NULL;
}

char *gt_cli_logs_task_name(const char *job, const struct gt_api_job *job_obj, const char *replica,
                            struct gt_err *err)
{
    char *name;
    if (replica) {
        if (!is_replica_word(replica)) {
            gt_err_set(err, GT_EBADREQ, "--replica %s: want TYPE-INDEX, e.g. worker-1", replica);
            return NULL;
        }
        name = gt_xasprintf("%s-%s", job, replica);
    } else {
        const char *type = default_type(job_obj);
        if (!type) {
            gt_err_set(err, GT_EBADREQ, "job %s has no replicas", job);
            return NULL;
        }
        name = gt_xasprintf("%s-%s-0", job, type);
    }
    for (char *p = name + strlen(job); *p; p++) {
        *p = (char)tolower((unsigned char)*p);
    }
    return name;
}

char *gt_cli_log_path(const char *project, const char *task, const struct gt_cli_log_opts *o)
{
    char *p = gt_cli_url_escape(project);
    char *t = gt_cli_url_escape(task);
    struct gt_buf b;
    gt_buf_init(&b);
    gt_buf_printf(&b, GT_API_GROUP_PREFIX "/projects/%s/tasks/%s/log", p, t);
    const char *sep = "?";
    if (o->follow) {
        gt_buf_puts(&b, "?follow=true");
        sep = "&";
    }
    if (o->previous) {
        gt_buf_printf(&b, "%sprevious=true", sep);
        sep = "&";
    }
    if (o->tail_lines >= 0) {
        gt_buf_printf(&b, "%stailLines=%ld", sep, o->tail_lines);
        sep = "&";
    }
    if (o->timestamps) {
        gt_buf_printf(&b, "%stimestamps=true", sep);
        sep = "&";
    }
    if (o->since_ms > 0) {
        char ts[32];
        gt_time_format(o->since_ms - o->since_ms % 1000, ts, sizeof(ts));
        ts[strlen(ts) - 1] = '\0'; /* the Z, after the milliseconds */
        gt_buf_printf(&b, "%ssinceTime=%s.%03dZ", sep, ts, (int)(o->since_ms % 1000));
    }
    free(p);
    free(t);
    return gt_buf_take(&b);
}
