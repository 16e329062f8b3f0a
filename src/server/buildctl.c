/*
 * The ImageBuild controller, over the controllers' cache (ctl.c). An
 * ImageBuild P/N becomes one Job, P/N-build (label gantry.dev/image-build:
 * N, the build's creator as its creator), whose one Worker task runs
 * buildah on a node as any task runs: admitted under the department's
 * quota, placed by the scheduler, in its cgroup, as its creator's uid. The
 * task is rootless: hostUsers false gives it a user namespace in which it
 * is uid 0 and which maps only the creator's ids, so buildah's chroot
 * isolation works without any privilege on the host. Its layers live in
 * the node's per-user cache (GANTRY_CACHE_DIR), so an unchanged rebuild on
 * that node reuses every layer. Its log is the build log.
 *
 * The task reports through its termination log (terminationMessagePolicy
 * File): the pushed manifest's digest and how long buildah took, bud and
 * push ("sha256:... MS"), when it succeeded,
 * else "step I/N INSTRUCTION: exit code C" (from buildah's "STEP I/N:" and
 * "building at STEP" lines) for a failing step, which this controller
 * records as reason BuildFailed; any other failure keeps the task's reason.
 *
 * The push credential is never stored: the job's env names it
 * (GANTRY_REGISTRY_CREDS, valueFrom.gantrySecret registry-credential) and
 * the agent starting the task has it made by gt_buildctl_job_creds.
 *
 * Status: phase Pending (job queued) -> Running (task running) ->
 * Succeeded | Failed, written only here; a terminal status never changes.
 * Deleting the ImageBuild deletes its job (which stops a running build).
 */
#include <stdlib.h>
#include <string.h>

#include "server/buildctl.h"
#include "server/cache.h"
#include "server/registry.h"
#include "server/server_int.h"

#define BUILD_LABEL "gantry.dev/image-build"

static const char marker[] = "";
#define MARK ((void *)marker)

/* The build step in the task, run by /bin/sh -c with the build args as
 * "$@" ("--build-arg K=V" pairs). Its environment: GANTRY_BUILD_IMAGE (the
 * full reference), GANTRY_BUILD_DOCKERFILE (a path in the source) or
 * GANTRY_BUILD_DOCKERFILE_TEXT (inline), GANTRY_BUILD_CONTEXT, and from
 * the agent GANTRY_CACHE_DIR and GANTRY_TERMINATION_LOG. The registry is
 * plain HTTP (--tls-verify=false), as gantry up runs it. */
static const char build_script[] =
    "set -u\n"
    "t0=$(date +%s%N)\n"
    "cache=$GANTRY_CACHE_DIR\n"
    "out=$(mktemp \"$cache/build.XXXXXX\") || exit 1\n"
    "df=$GANTRY_BUILD_DOCKERFILE\n"
    "if [ -n \"${GANTRY_BUILD_DOCKERFILE_TEXT:-}\" ]; then\n"
    "  df=$out.Dockerfile\n"
    "  printf '%s\\n' \"$GANTRY_BUILD_DOCKERFILE_TEXT\" > \"$df\"\n"
    "fi\n"
    /* root inside its namespace, buildah would read root's
     * /var/lib/containers/sigstore: the user's own lookaside instead */
    "export HOME=$cache XDG_RUNTIME_DIR=$cache/run\n"
    "mkdir -p \"$cache/run\" \"$cache/.config/containers/registries.d\"\n"
    "printf 'default-docker:\\n  sigstore: file://%s/sigstore\\n  sigstore-staging: "
    "file://%s/sigstore\\n' \"$cache\" \"$cache\" > "
    "\"$cache/.config/containers/registries.d/default.yaml\"\n"
    "b() { buildah --root \"$cache/storage\" --runroot \"$cache/runroot\" "
    "--storage-driver vfs \"$@\"; }\n"
    "{ b bud --layers --isolation chroot --tls-verify=false "
    "${GANTRY_REGISTRY_CREDS:+--creds \"$GANTRY_REGISTRY_CREDS\"} -f \"$df\" "
    "-t \"$GANTRY_BUILD_IMAGE\" \"$@\" \"$GANTRY_BUILD_CONTEXT\" 2>&1; echo $? > \"$out.rc\"; } "
    "| tee \"$out\"\n"
    "rc=$(cat \"$out.rc\")\n"
    "if [ \"$rc\" != 0 ]; then\n"
    "  step=$(grep -E '^STEP [0-9]+/[0-9]+: ' \"$out\" | tail -n 1 | sed 's/^STEP \\([0-9/]*\\): "
    "/\\1 /')\n"
    "  why=$(grep -E '(Error|error): ' \"$out\" | tail -n 1)\n"
    "  code=$(printf '%s' \"$why\" | sed -n 's/.*building at STEP.*exit status "
    "\\([0-9]*\\)$/\\1/p')\n"
    "  if [ -n \"$step\" ] && [ -n \"$code\" ]; then\n"
    "    printf 'step %s: exit code %s\\n' \"$step\" \"$code\" > \"$GANTRY_TERMINATION_LOG\"\n"
    "  else\n"
    "    printf '%s\\n' \"${why:-buildah bud exited $rc}\" > \"$GANTRY_TERMINATION_LOG\"\n"
    "  fi\n"
    "  rm -f \"$out\" \"$out.rc\" \"$out.Dockerfile\"\n"
    "  exit 1\n"
    "fi\n"
    "rm -f \"$out\" \"$out.rc\" \"$out.Dockerfile\"\n"
    "b push --tls-verify=false ${GANTRY_REGISTRY_CREDS:+--creds \"$GANTRY_REGISTRY_CREDS\"} "
    "--digestfile \"$out.digest\" \"$GANTRY_BUILD_IMAGE\" \"docker://$GANTRY_BUILD_IMAGE\" || "
    "{ echo \"push to $GANTRY_BUILD_IMAGE failed\" > \"$GANTRY_TERMINATION_LOG\"; exit 2; }\n"
    "printf '%s %s\\n' \"$(cat \"$out.digest\")\" $((($(date +%s%N) - t0) / 1000000)) > "
    "\"$GANTRY_TERMINATION_LOG\"\n"
    "rm -f \"$out.digest\"\n";

static char *job_key(const struct gt_api_imagebuild *b)
{
    return gt_xasprintf("/jobs/%s/%s-build", b->o.meta.project, b->o.meta.name);
}

static char *task_key(const struct gt_api_imagebuild *b)
{
    return gt_xasprintf("/tasks/%s/%s-build-worker-0", b->o.meta.project, b->o.meta.name);
}

char *gt_buildctl_image_ref(const char *registry, const char *project, const char *image)
{
    return gt_xasprintf("%s/%s/%s", registry, project, image);
}

static void env_add(json_t *env, const char *name, const char *value)
{
    json_array_append_new(env, json_pack("{s:s, s:s}", "name", name, "value", value));
}

/* The build's Job (new reference). */
static json_t *build_job(struct gt_ctl *c, const struct gt_cobj *o)
{
    const struct gt_api_imagebuild *b = gt_cobj_build(o);
    const struct gt_api_imagebuild_spec *sp = &b->spec;
    char *ref = gt_buildctl_image_ref(c->s->cfg->registry, b->o.meta.project, sp->image);
    json_t *env = json_array();
    env_add(env, "GANTRY_BUILD_IMAGE", ref);
    if (sp->dockerfile) {
        env_add(env, "GANTRY_BUILD_DOCKERFILE_TEXT", sp->dockerfile);
        env_add(env, "GANTRY_BUILD_DOCKERFILE", "");
    } else {
        env_add(env, "GANTRY_BUILD_DOCKERFILE",
                sp->dockerfile_path ? sp->dockerfile_path : "Dockerfile");
    }
    env_add(env, "GANTRY_BUILD_CONTEXT", sp->context ? sp->context : ".");
    if (c->s->registry_key && b->o.meta.creator.user) {
        /* a reference only: the agent fetches the value (gt_buildctl_job_creds) */
        json_array_append_new(env, json_pack("{s:s, s:{s:s}}", "name", "GANTRY_REGISTRY_CREDS",
                                             "valueFrom", "gantrySecret",
                                             GT_API_SECRET_REGISTRY_CREDENTIAL));
    }
    json_t *cmd = json_pack("[s, s, s, s]", "/bin/sh", "-c", build_script, "gantry-build");
    for (size_t i = 0; i < sp->build_args.n; i++) {
        const struct gt_api_env *a = &sp->build_args.v[i];
        json_array_append_new(cmd, json_string("--build-arg"));
        json_array_append_new(cmd, json_sprintf("%s=%s", a->name, a->value ? a->value : ""));
    }
    const json_t *spec_json = json_object_get(b->o.json, "spec");
    json_t *res = json_deep_copy(json_object_get(spec_json, "resources"));
    if (!res) {
        res = json_pack("{s:{s:s, s:s}}", "limits", "cpu", "1", "memory", "2Gi");
    }
    json_t *tmpl = json_pack("{s:o, s:o, s:o, s:b, s:s}", "command", cmd, "env", env, "resources",
                             res, "hostUsers", 0, "terminationMessagePolicy", "File");
    json_t *spec =
        json_pack("{s:{s:{s:i, s:s, s:o}}, s:{s:i}}", "replicaSpecs", "Worker", "replicas", 1,
                  "restartPolicy", "Never", "template", tmpl, "runPolicy", "backoffLimit", 0);
    const json_t *src = json_object_get(spec_json, "source");
    if (src) {
        json_object_set_new(spec, "source", json_deep_copy(src));
    }
    char uid[40], ts[32], *name = gt_xasprintf("%s-build", b->o.meta.name);
    gt_uuid4(&c->s->uuids, uid, sizeof(uid));
    json_t *md = json_pack("{s:s, s:s, s:{s:s}, s:s, s:s}", "name", name, "project",
                           b->o.meta.project, "labels", BUILD_LABEL, b->o.meta.name, "uid", uid,
                           "creationTimestamp", gt_time_format(gt_now_ms(), ts, sizeof(ts)));
    const json_t *creator = gt_json_path(b->o.json, "metadata.creator");
    if (creator) {
        json_object_set_new(md, "creator", json_deep_copy(creator));
    }
    free(name);
    free(ref);
    return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", GT_API_VERSION, "kind", "Job",
                     "metadata", md, "spec", spec);
}

char *gt_buildctl_job_creds(const struct gt_ctl *c, const struct gt_cobj *jo, struct gt_err *err)
{
    const struct gt_api_job *job = gt_cobj_job(jo);
    const char *build = json_string_value(json_object_get(job->o.meta.labels, BUILD_LABEL));
    char *bk = build ? gt_xasprintf("/imagebuilds/%s/%s", job->o.meta.project, build) : NULL;
    const struct gt_cobj *bo = bk ? gt_ctl_get(c, GT_KIND_IMAGEBUILD, bk) : NULL;
    free(bk);
    char *own = gt_xasprintf("%s-build", build ? build : ""); /* its job's name */
    bool owns = bo && !strcmp(own, job->o.meta.name);
    free(own);
    const char *user = owns ? gt_cobj_build(bo)->o.meta.creator.user : NULL;
    if (!user) {
        gt_err_set(err, GT_ECONFLICT, "job %s is not an image build's", job->o.meta.name);
        return NULL;
    }
    if (!c->s->registry_key) {
        gt_err_set(err, GT_ECONFLICT, "gantryd has no --registry-key to sign with");
        return NULL;
    }
    char *cred = gt_registry_credential(c->s->registry_key, user, job->o.meta.project);
    char *creds = gt_xasprintf("%s:%s", user, cred);
    free(cred);
    return creds;
}

/* The status a finished task gives the build: digest, or why it failed. */
static void finished_status(const struct gt_api_task *t, json_t *st)
{
    const char *msg = t->status.message ? t->status.message : "";
    const char *sp = strchr(msg, ' ');
    if (t->status.phase == GT_TASK_SUCCEEDED && strncmp(msg, "sha256:", 7) == 0 && sp) {
        json_object_set_new(st, "phase", json_string("Succeeded"));
        json_object_set_new(st, "reason", json_string("Pushed"));
        json_object_set_new(st, "digest", json_stringn(msg, (size_t)(sp - msg)));
        json_object_set_new(st, "buildDurationMs", json_integer(strtoll(sp + 1, NULL, 10)));
        json_object_del(st, "message");
        return;
    }
    json_object_set_new(st, "phase", json_string("Failed"));
    const char *reason = t->status.reason ? t->status.reason : "Error";
    if (t->status.phase == GT_TASK_SUCCEEDED) {
        reason = "NoDigest";
    } else if (strncmp(msg, "step ", 5) == 0) {
        reason = "BuildFailed";
    }
    json_object_set_new(st, "reason", json_string(reason));
    json_object_set_new(st, "message", json_string(*msg ? msg : "the build task failed"));
}

/* The build's status as its job's task shows it (new reference). */
static json_t *next_status(struct gt_ctl *c, const struct gt_api_imagebuild *b)
{
    json_t *st = json_deep_copy(json_object_get(b->o.json, "status"));
    st = st ? st : json_object();
    char *ref = gt_buildctl_image_ref(c->s->cfg->registry, b->o.meta.project, b->spec.image);
    json_object_set_new(st, "image", json_string(ref));
    free(ref);
    char *tk = task_key(b);
    const struct gt_cobj *to = gt_ctl_get(c, GT_KIND_TASK, tk);
    free(tk);
    const struct gt_api_task *t = to ? gt_cobj_task(to) : NULL;
    enum gt_task_phase p = t ? (enum gt_task_phase)t->status.phase : GT_TASK_PENDING;
    if (!json_object_get(st, "phase")) {
        json_object_set_new(st, "phase", json_string("Pending"));
    }
    if (t && t->spec.node_name) {
        json_object_set_new(st, "nodeName", json_string(t->spec.node_name));
    }
    if (t && t->status.start_time) {
        json_object_set_new(st, "startTime", json_string(t->status.start_time));
    }
    if (t && gt_api_task_phase_terminal(p)) {
        finished_status(t, st);
        if (t->status.finish_time) {
            json_object_set_new(st, "completionTime", json_string(t->status.finish_time));
        }
    } else if (p == GT_TASK_RUNNING) {
        json_object_set_new(st, "phase", json_string("Running"));
    }
    return st;
}

static void fail_now(struct gt_ctl *c, const struct gt_cobj *o, const char *reason,
                     const char *message)
{
    json_t *st = json_deep_copy(json_object_get(o->obj, "status"));
    st = st ? st : json_object();
    json_object_set_new(st, "phase", json_string("Failed"));
    json_object_set_new(st, "reason", json_string(reason));
    json_object_set_new(st, "message", json_string(message));
    gt_ctl_write_status(c, o, st);
}

static void reconcile(struct gt_ctl *c, const char *key)
{
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_IMAGEBUILD, key);
    if (!o || gt_ctl_busy(c, key)) {
        return;
    }
    const struct gt_api_imagebuild *b = gt_cobj_build(o);
    int phase = json_object_get(b->o.json, "status") ? b->status.phase : GT_BUILD_PENDING;
    if (phase == GT_BUILD_SUCCEEDED || phase == GT_BUILD_FAILED) {
        return;
    }
    if (!c->s->cfg->registry) {
        fail_now(c, o, "NoRegistry", "gantryd has no --registry to push to");
        return;
    }
    char *jk = job_key(b);
    const struct gt_cobj *jo = gt_ctl_get(c, GT_KIND_JOB, jk);
    if (!jo && !gt_ctl_busy(c, jk)) {
        json_t *job = build_job(c, o);
        struct gt_err err = {0};
        if (gt_api_validate(GT_KIND_JOB, job, &err) < 0) {
            fail_now(c, o, "Invalid", err.msg);
        } else {
            gt_ctl_write(c, GT_STORE_CREATE, jk, job, 0, NULL, NULL);
        }
        json_decref(job);
    } else if (jo) {
        const char *owner = json_string_value(
            json_object_get(gt_json_path(jo->obj, "metadata.labels"), BUILD_LABEL));
        if (!owner || strcmp(owner, b->o.meta.name) != 0) {
            fail_now(c, o, "NameConflict", "a job of this build's job name exists");
        } else {
            gt_ctl_write_status(c, o, next_status(c, b));
        }
    }
    free(jk);
}

void gt_buildctl_event(struct gt_ctl *c, enum gt_kind kind, const char *key,
                       const struct gt_cobj *now, const struct gt_cobj *old)
{
    const struct gt_cobj *o = now ? now : old;
    if (!o) {
        return;
    }
    if (kind == GT_KIND_IMAGEBUILD) {
        if (now) {
            gt_strmap_put(&c->dirty_builds, key, MARK);
            return;
        }
        /* the build went: its job goes with it (the job controller stops
         * and deletes its task) */
        char *jk = job_key(gt_cobj_build(old));
        const struct gt_cobj *jo = gt_ctl_get(c, GT_KIND_JOB, jk);
        const char *owner = jo ? json_string_value(json_object_get(
                                     gt_json_path(jo->obj, "metadata.labels"), BUILD_LABEL))
                               : NULL;
        if (owner && strcmp(owner, gt_obj_name(old->obj)) == 0 && !gt_ctl_busy(c, jk)) {
            gt_ctl_write(c, GT_STORE_DELETE, jk, NULL, jo->rev, NULL, NULL);
        }
        free(jk);
        return;
    }
    const char *project = gt_obj_project(o->obj);
    const char *build = NULL;
    if (kind == GT_KIND_JOB) {
        build = json_string_value(
            json_object_get(gt_json_path(o->obj, "metadata.labels"), BUILD_LABEL));
    } else if (kind == GT_KIND_TASK) {
        const struct gt_cobj *jo = gt_ctl_task_job(c, gt_cobj_task(o));
        build = jo ? json_string_value(
                         json_object_get(gt_json_path(jo->obj, "metadata.labels"), BUILD_LABEL))
                   : NULL;
    }
    if (build && project) {
        char *bk = gt_xasprintf("/imagebuilds/%s/%s", project, build);
        gt_strmap_put(&c->dirty_builds, bk, MARK);
        free(bk);
    }
}

static int collect_cb(const char *key, void *val, void *arg)
{
    (void)val;
    json_array_append_new(arg, json_string(key));
    return 0;
}

void gt_buildctl_run(struct gt_ctl *c)
{
    json_t *keys = json_array();
    gt_strmap_each(&c->dirty_builds, collect_cb, keys);
    gt_strmap_fini(&c->dirty_builds, NULL);
    gt_strmap_init(&c->dirty_builds);
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k)
    {
        reconcile(c, json_string_value(k));
    }
    json_decref(keys);
}
