/*
 * `explain` of a kind's fields, as kubectl explain prints a resource's:
 * the schema tables (schemas.c and the kinds' own files) give each field's
 * type, whether it is required, its allowed values, its default and its
 * children; the descriptions are the table below, keyed by kind and the
 * field's dotted path (map and list entries stepped over, so a replica
 * type's template is "spec.replicaSpecs.template"). Rows for any kind
 * (GT_KIND_COUNT) describe the fields every object has; rows of the
 * container template (kind TEMPLATE, path below "template.") serve every
 * place a template appears (Job replicas, Task, Notebook). A field without
 * a row has no description; unit tests check that every row names a real
 * field.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "api/api_int.h"

/* pseudo-kind of the rows below a "template" field */
#define TEMPLATE (GT_KIND_COUNT + 1)

struct desc_row {
    int kind; /* enum gt_kind, GT_KIND_COUNT: any, TEMPLATE: a container template */
    const char *path;
    const char *text;
};

static const struct desc_row descs[] = {
    /* every kind */
    {GT_KIND_COUNT, "apiVersion", "The object's API group and version: gantry.dev/v1."},
    {GT_KIND_COUNT, "kind", "The object's kind, as explain names it (Job, Task, ...)."},
    {GT_KIND_COUNT, "metadata",
     "Name, project, labels and the fields the server sets (uid, resourceVersion, "
     "creationTimestamp, creator)."},
    {GT_KIND_COUNT, "metadata.name",
     "The object's name, unique per kind within its project: a DNS-1123 label."},
    {GT_KIND_COUNT, "metadata.project",
     "The project the object lives in (Kubernetes' namespace; a Kubeflow manifest's "
     "metadata.namespace)."},
    {GT_KIND_COUNT, "metadata.labels",
     "Key/value pairs for selecting objects (get -l KEY=VALUE), as Kubernetes labels."},
    {GT_KIND_COUNT, "metadata.annotations", "Key/value pairs for tools; not used to select."},
    {GT_KIND_COUNT, "metadata.resourceVersion",
     "The revision of the object's last write, for optimistic concurrency (set by the "
     "server)."},
    {GT_KIND_COUNT, "metadata.uid",
     "Unique id of this incarnation of the object (set by the server)."},
    {GT_KIND_COUNT, "metadata.creationTimestamp",
     "When the object was created, RFC 3339 (set by the server)."},
    {GT_KIND_COUNT, "metadata.deletionTimestamp",
     "When its deletion was asked; the object goes once its work has stopped (set by the "
     "server)."},
    {GT_KIND_COUNT, "metadata.creator",
     "The user and uid whose request created the object; immutable (set by the server)."},
    /* Job */
    {GT_KIND_JOB, "",
     "A training job: one or more replica types (Master, Chief, PS, Worker, "
     "Evaluator), each a number of tasks from one container template, "
     "scheduled as a gang by department quota and priority."},
    {GT_KIND_JOB, "spec", "What the job runs and how it is scheduled and restarted."},
    {GT_KIND_JOB, "spec.replicaSpecs",
     "The job's replica types, keyed by type (Master, Chief, PS, Worker, Evaluator): each "
     "a number of tasks of one template."},
    {GT_KIND_JOB, "spec.replicaSpecs.replicas", "How many tasks of this replica type."},
    {GT_KIND_JOB, "spec.replicaSpecs.restartPolicy",
     "When a failed task of this type restarts the job: Never, OnFailure, Always, or "
     "ExitCode (only for exit codes 128 and above, as Kubeflow's)."},
    {GT_KIND_JOB, "spec.replicaSpecs.template", "The container each task of this type runs."},
    {GT_KIND_JOB, "spec.runPolicy", "Restarts, deadlines, clean-up and scheduling of the job."},
    {GT_KIND_JOB, "spec.runPolicy.backoffLimit",
     "How many restarts before the job fails (preemptions do not count)."},
    {GT_KIND_JOB, "spec.runPolicy.activeDeadlineSeconds",
     "Seconds the job may run before it is stopped and fails with DeadlineExceeded; also "
     "what backfill plans with."},
    {GT_KIND_JOB, "spec.runPolicy.ttlSecondsAfterFinished",
     "Seconds after the job finishes until it is deleted."},
    {GT_KIND_JOB, "spec.runPolicy.cleanPodPolicy",
     "Which tasks are stopped when the job finishes: All, Running or None."},
    {GT_KIND_JOB, "spec.runPolicy.schedulingPolicy",
     "Gang size, queue, priority class and GPU topology of the job."},
    {GT_KIND_JOB, "spec.runPolicy.schedulingPolicy.minAvailable",
     "How many tasks must be placed together before any starts (default: all)."},
    {GT_KIND_JOB, "spec.runPolicy.schedulingPolicy.queue",
     "The department whose quota the job uses (default: the project's)."},
    {GT_KIND_JOB, "spec.runPolicy.schedulingPolicy.priorityClass",
     "The PriorityClass whose value orders and may preempt (default: the global default)."},
    {GT_KIND_JOB, "spec.runPolicy.schedulingPolicy.topology",
     "How close the job's GPUs must (required) or should (preferred) be: node, gpu-group "
     "or numa."},
    {GT_KIND_JOB, "spec.source",
     "A git repository fetched into each task's working directory before its command."},
    {GT_KIND_JOB, "spec.source.git", "The repository's URL (https, ssh or file)."},
    {GT_KIND_JOB, "spec.source.revision", "Branch, tag or commit to check out (default: HEAD)."},
    {GT_KIND_JOB, "spec.requirements",
     "pip requirements installed into a virtual environment cached per node: a file of the "
     "source (a string) or a list of requirement lines."},
    {GT_KIND_JOB, "spec.volumes",
     "Storage the templates' volumeMounts name: a hostPath beneath a storage root or a "
     "Volume of the project."},
    {GT_KIND_JOB, "spec.tensorboard",
     "Where the tasks write TensorBoard event files, whose scalars gantry reads (gantry "
     "scalars JOB)."},
    {GT_KIND_JOB, "status",
     "Conditions, per replica type counts, start and completion time (written by the job "
     "controller)."},
    /* Task */
    {GT_KIND_TASK, "",
     "One replica instance of a job (Kubernetes' pod): created by the job "
     "controller, bound to a node and GPUs by the scheduler, run by the "
     "node's agent."},
    {GT_KIND_TASK, "spec", "What the task runs, where, and whether it must stop."},
    {GT_KIND_TASK, "spec.job", "The job the task belongs to."},
    {GT_KIND_TASK, "spec.replicaType", "The replica type it is a task of."},
    {GT_KIND_TASK, "spec.replicaIndex", "Its index within its replica type, from 0."},
    {GT_KIND_TASK, "spec.template", "The container it runs (its replica type's template)."},
    {GT_KIND_TASK, "spec.nodeName", "The node it is bound to (set by the scheduler)."},
    {GT_KIND_TASK, "spec.gpus", "The GPUs it holds: index, UUID and milli-share (set at bind)."},
    {GT_KIND_TASK, "spec.ports", "Host ports allocated to it from its node's range."},
    {GT_KIND_TASK, "spec.hosts", "Host names of the job's tasks, written into its /etc/hosts."},
    {GT_KIND_TASK, "spec.stop",
     "Set by gantryd to stop the task: the reason and the grace period before SIGKILL."},
    {GT_KIND_TASK, "spec.volumes", "The job's volumes, resolved for the node."},
    {GT_KIND_TASK, "status",
     "Phase, exit code or signal, reason and times (written by the node's agent)."},
    {GT_KIND_TASK, "status.phase", "Pending, Bound, Running, Terminating, Succeeded or Failed."},
    {GT_KIND_TASK, "status.exitCode", "The exit code of its command (128 + N for signal N)."},
    {GT_KIND_TASK, "status.reason",
     "Why it ended as it did: Completed, Error, OOMKilled, Preempted, NodeLost, ..."},
    /* the container template */
    {TEMPLATE, "template.image",
     "An OCI image to run the command in; absent: the node's own filesystem."},
    {TEMPLATE, "template.command",
     "The program and its arguments (the image's Entrypoint, replaced)."},
    {TEMPLATE, "template.args", "Arguments after the command (the image's Cmd, replaced)."},
    {TEMPLATE, "template.env", "Environment variables set in the task."},
    {TEMPLATE, "template.workingDir", "The directory the command starts in (absolute)."},
    {TEMPLATE, "template.resources",
     "cpu, memory, nvidia.com/gpu and gantry.dev/gpu-milli the task asks for (requests) "
     "and may use at most (limits); ephemeral-storage bounds its disk emptyDirs."},
    {TEMPLATE, "template.ports", "Named ports the task listens on; each gets a host port."},
    {TEMPLATE, "template.volumeMounts", "Where the job's volumes appear in the task."},
    {TEMPLATE, "template.runAsUser",
     "The uid the task runs as: the creator's unless the project allows privileged tasks."},
    {TEMPLATE, "template.terminationGracePeriodSeconds",
     "Seconds between SIGTERM and SIGKILL when the task is stopped (default 30)."},
    /* Notebook */
    {GT_KIND_NOTEBOOK, "",
     "An interactive Jupyter server with a home volume, proxied by "
     "gantryd and culled when idle."},
    {GT_KIND_NOTEBOOK, "spec", "The notebook's container, home, idle culling and state."},
    {GT_KIND_NOTEBOOK, "spec.template",
     "The container; without a command the controller runs Jupyter."},
    {GT_KIND_NOTEBOOK, "spec.home", "A directory kept across stops, mounted in the notebook."},
    {GT_KIND_NOTEBOOK, "spec.idle",
     "Culling: stop the notebook after timeoutSeconds without activity (on by default "
     "when it has GPUs)."},
    {GT_KIND_NOTEBOOK, "spec.priorityClass", "The PriorityClass of its task."},
    {GT_KIND_NOTEBOOK, "spec.stopped", "true stops the notebook; false starts it again."},
    {GT_KIND_NOTEBOOK, "status", "Phase, URL, task and last activity (written by the controller)."},
    /* Volume */
    {GT_KIND_VOLUME, "",
     "Storage of a project, counted against its department's storage "
     "quota and enforced on disk."},
    {GT_KIND_VOLUME, "spec", "Size, access mode and storage class of the volume."},
    {GT_KIND_VOLUME, "spec.capacity", "The volume's size: storage, as a quantity (64Mi, 10Gi)."},
    {GT_KIND_VOLUME, "spec.accessMode",
     "ReadWriteOnce (one task writes), ReadOnlyMany or ReadWriteMany."},
    {GT_KIND_VOLUME, "spec.storageClass", "Where the volume is made (default: the cluster's)."},
    {GT_KIND_VOLUME, "spec.readOnly", "Mount it read-only everywhere."},
    {GT_KIND_VOLUME, "status", "Phase, message and where it lives (written by the controller)."},
    /* ImageBuild */
    {GT_KIND_IMAGEBUILD, "",
     "A container image built from a Dockerfile by a buildah task and "
     "pushed to the cluster registry."},
    {GT_KIND_IMAGEBUILD, "spec", "What to build and where to push it."},
    {GT_KIND_IMAGEBUILD, "spec.dockerfile",
     "The Dockerfile's text (or dockerfilePath in the source)."},
    {GT_KIND_IMAGEBUILD, "spec.dockerfilePath", "The Dockerfile's path in the source."},
    {GT_KIND_IMAGEBUILD, "spec.source", "A git repository whose tree is the build context."},
    {GT_KIND_IMAGEBUILD, "spec.context",
     "The context's directory in the source (default: its root)."},
    {GT_KIND_IMAGEBUILD, "spec.buildArgs", "--build-arg values: name and value."},
    {GT_KIND_IMAGEBUILD, "spec.image", "The repository and tag to push to (team/model:1.0)."},
    {GT_KIND_IMAGEBUILD, "spec.resources", "cpu and memory of the build task."},
    {GT_KIND_IMAGEBUILD, "status", "Phase, pushed image and digest, node and times."},
};

static const char *lookup(int kind, const char *path)
{
    for (size_t i = 0; i < GT_ARRAY_LEN(descs); i++) {
        if (descs[i].kind == kind && strcmp(descs[i].path, path) == 0) {
            return descs[i].text;
        }
    }
    return NULL;
}

/* The description of the field at path (dotted, entries stepped over). */
static const char *describe(enum gt_kind kind, const char *path)
{
    const char *d = lookup((int)kind, path);
    d = d ? d : lookup(GT_KIND_COUNT, path);
    const char *t = strstr(path, "template.");
    if (!d && t && (t == path || t[-1] == '.')) {
        d = lookup(TEMPLATE, t);
    }
    return d;
}

/* A list's or map's items seen through: the row whose children are listed. */
static const struct gt_field *entry_of(const struct gt_field *f)
{
    while ((f->type == GT_F_ARRAY || f->type == GT_F_MAP) && f->elem &&
           f->elem->type == GT_F_OBJECT) {
        f = f->elem;
    }
    return f;
}

static const char *scalar_type(const struct gt_field *f)
{
    switch (f->type) {
    case GT_F_STRING:
        return "string";
    case GT_F_INT:
        return "integer";
    case GT_F_BOOL:
        return "boolean";
    case GT_F_RESOURCES:
        return "map[string]Quantity";
    case GT_F_ANY:
        return "string or []string";
    default:
        return "Object";
    }
}

/* kubectl's spelling of a field's type: <string>, <[]Object>, <map[string]string>. */
static void type_name(const struct gt_field *f, char *buf, size_t len)
{
    if (f->type == GT_F_ARRAY && f->elem) {
        snprintf(buf, len, "[]%s", scalar_type(f->elem));
    } else if (f->type == GT_F_MAP && f->elem) {
        snprintf(buf, len, "map[string]%s", scalar_type(f->elem));
    } else {
        snprintf(buf, len, "%s", scalar_type(f));
    }
}

/* text wrapped at WRAP_COLS columns, each line after indent. */
#define WRAP_COLS 80
static void put_wrapped(struct gt_buf *out, const char *text, const char *indent)
{
    size_t width = WRAP_COLS - strlen(indent);
    while (*text) {
        size_t n = strlen(text);
        if (n > width) {
            n = width;
            while (n > 0 && text[n] != ' ') {
                n--;
            }
            n = n ? n : strcspn(text, " ");
        }
        gt_buf_printf(out, "%s%.*s\n", indent, (int)n, text);
        text += n;
        text += *text == ' ';
    }
}

/* Description, allowed values, bounds and default of f, indented by indent. */
static void put_description(struct gt_buf *out, const struct gt_field *f, const char *desc,
                            const char *indent)
{
    if (desc) {
        put_wrapped(out, desc, indent);
    }
    const struct gt_field *v = f->type == GT_F_ARRAY && f->elem ? f->elem : f;
    if (v->enums) {
        gt_buf_printf(out, "%sOne of:", indent);
        for (const char *const *e = v->enums; *e; e++) {
            gt_buf_printf(out, "%s %s", e == v->enums ? "" : ",", *e);
        }
        gt_buf_puts(out, ".\n");
    }
    if (f->type == GT_F_INT && f->max < INT32_MAX) { /* a real bound, not the type's */
        gt_buf_printf(out, "%sFrom %" PRId64 " to %" PRId64 ".\n", indent, f->min, f->max);
    }
    if (f->flags & GT_F_DEFAULT) {
        if (f->def_str) {
            gt_buf_printf(out, "%sDefault: %s.\n", indent, f->def_str);
        } else if (f->type == GT_F_BOOL) {
            gt_buf_printf(out, "%sDefault: %s.\n", indent, f->def_int ? "true" : "false");
        } else {
            gt_buf_printf(out, "%sDefault: %" PRId64 ".\n", indent, f->def_int);
        }
    }
}

static void put_fields(struct gt_buf *out, enum gt_kind kind, const struct gt_schema *s,
                       const char *parent)
{
    gt_buf_puts(out, "\nFIELDS:\n");
    for (const struct gt_field *c = s->fields; c->name; c++) {
        if (c->type == GT_F_FORBIDDEN) {
            continue; /* never sent: not for users */
        }
        char type[64], path[GT_API_PATH_MAX];
        type_name(c, type, sizeof(type));
        gt_path_join(path, sizeof(path), parent, c->name);
        gt_buf_printf(out, "   %s\t<%s>%s\n", c->name, type,
                      (c->flags & GT_F_REQUIRED) ? " -required-" : "");
        put_description(out, c, describe(kind, path), "     ");
        gt_buf_puts(out, "\n");
    }
}

/* Walk path (dotted; "" the kind itself) down kind's schema: *f the field
 * (NULL for the kind), *s the schema of its children (NULL: none), walked
 * the path as the rows spell it. 0, or GT_ENOTFOUND naming the first
 * field that is not there. */
static int walk(const struct gt_kind_info *k, const char *path, const struct gt_field **f,
                const struct gt_schema **s, char *walked, size_t len, struct gt_err *err)
{
    *f = NULL;
    *s = gt_kind_schema(k->kind);
    walked[0] = '\0';
    const char *p = path;
    while (*p) {
        size_t n = strcspn(p, ".");
        const struct gt_field *c = NULL;
        for (const struct gt_field *r = *s ? (*s)->fields : NULL; r && r->name; r++) {
            if (strlen(r->name) == n && strncmp(r->name, p, n) == 0 && r->type != GT_F_FORBIDDEN) {
                c = r;
            }
        }
        if (!c) {
            return gt_err_set(err, GT_ENOTFOUND, "field \"%.*s\" does not exist in %s%s%s", (int)n,
                              p, k->name, walked[0] ? "." : "", walked);
        }
        size_t used = strlen(walked);
        snprintf(walked + used, len - used, "%s%s", used ? "." : "", c->name);
        *f = c;
        const struct gt_field *e = entry_of(c);
        *s = e->type == GT_F_OBJECT ? e->schema : NULL;
        p += n;
        p += *p == '.';
    }
    return 0;
}

int gt_api_explain(enum gt_kind kind, const char *path, struct gt_buf *out, struct gt_err *err)
{
    const struct gt_kind_info *k = gt_kind_get(kind);
    if (!k || !gt_kind_schema(kind)) {
        return gt_err_set(err, GT_ENOTFOUND, "no schema for that kind");
    }
    const struct gt_field *f;
    const struct gt_schema *s;
    char walked[GT_API_PATH_MAX];
    int rc = walk(k, path ? path : "", &f, &s, walked, sizeof(walked), err);
    if (rc < 0) {
        return rc;
    }
    gt_buf_printf(out, "KIND:     %s\nVERSION:  gantry.dev/v1\n\n", k->name);
    if (f) {
        char type[64];
        type_name(f, type, sizeof(type));
        gt_buf_printf(out, "FIELD:    %s <%s>%s\n\n", f->name, type,
                      (f->flags & GT_F_REQUIRED) ? " -required-" : "");
    }
    const char *desc = describe(kind, walked);
    gt_buf_puts(out, "DESCRIPTION:\n");
    if (f) {
        put_description(out, f, desc, "     ");
    } else if (desc) {
        put_wrapped(out, desc, "     ");
    }
    if (!desc && !(f && (f->enums || (f->flags & GT_F_DEFAULT)))) {
        gt_buf_puts(out, "     <empty>\n");
    }
    if (s) {
        put_fields(out, kind, s, walked);
    }
    return 0;
}

int gt_api_explain_check(struct gt_err *err)
{
    for (size_t i = 0; i < GT_ARRAY_LEN(descs); i++) {
        const struct desc_row *d = &descs[i];
        /* every kind's rows are checked on a Job; template rows on a Task's spec */
        enum gt_kind kind = d->kind == TEMPLATE        ? GT_KIND_TASK
                            : d->kind == GT_KIND_COUNT ? GT_KIND_JOB
                                                       : (enum gt_kind)d->kind;
        char path[GT_API_PATH_MAX], walked[GT_API_PATH_MAX];
        snprintf(path, sizeof(path), "%s%s", d->kind == TEMPLATE ? "spec." : "", d->path);
        const struct gt_field *f;
        const struct gt_schema *s;
        int rc = walk(gt_kind_get(kind), path, &f, &s, walked, sizeof(walked), err);
        if (rc < 0) {
            gt_err_prefix(err, "description row %zu (%s)", i, d->path);
            return rc;
        }
    }
    return 0;
}
