/*
 * Kind names as users type them, and the API paths they map to.
 *
 * The api module knows each kind's name, plural and scope; this file adds
 * kubectl-style short names and builds the paths of docs/api.md:
 * /apis/gantry.dev/v1/{plural}[/{name}] for cluster-scoped kinds and
 * /apis/gantry.dev/v1/projects/{project}/{plural}[/{name}] for project-scoped
 * ones (without a project: the all-projects collection).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"

/* Short names, as kubectl has "no" for nodes and "pc" for priorityclasses,
 * and the Kubernetes and Kubeflow names of what gantry holds as its own
 * kinds (a pod is a Task; TFJobs, PyTorchJobs, MPIJobs, XGBoostJobs,
 * PaddleJobs and JAXJobs are Jobs). A kind
 * without a row here is still found by its name, singular or plural, as
 * the api's kinds table gives them. */
static const struct {
    const char *alias;
    enum gt_kind kind;
} short_names[] = {
    {"dept", GT_KIND_DEPARTMENT},
    {"depts", GT_KIND_DEPARTMENT},
    {"proj", GT_KIND_PROJECT},
    {"pc", GT_KIND_PRIORITYCLASS},
    {"no", GT_KIND_NODE},
    {"ev", GT_KIND_EVENT},
    {"pod", GT_KIND_TASK},
    {"pods", GT_KIND_TASK},
    {"po", GT_KIND_TASK},
    {"tfjob", GT_KIND_JOB},
    {"tfjobs", GT_KIND_JOB},
    {"pytorchjob", GT_KIND_JOB},
    {"pytorchjobs", GT_KIND_JOB},
    {"mpijob", GT_KIND_JOB},
    {"mpijobs", GT_KIND_JOB},
    {"xgboostjob", GT_KIND_JOB},
    {"xgboostjobs", GT_KIND_JOB},
    {"paddlejob", GT_KIND_JOB},
    {"paddlejobs", GT_KIND_JOB},
    {"jaxjob", GT_KIND_JOB},
    {"jaxjobs", GT_KIND_JOB},
    {"vol", GT_KIND_VOLUME},
    {"mv", GT_KIND_MODELVERSION},
    {"isvc", GT_KIND_INFERENCESERVICE},
    {"isvcs", GT_KIND_INFERENCESERVICE},
};

const struct gt_kind_info *gt_cli_kind_lookup(const char *word)
{
    /* "job.gantry.dev" (what -o name prints), "tfjobs.kubeflow.org" and
     * "inferenceservice.serving.kserve.io" too */
    static const char *const groups[] = {".gantry.dev", ".kubeflow.org", ".serving.kserve.io"};
    char bare[64];
    snprintf(bare, sizeof(bare), "%s", word);
    for (size_t i = 0; i < GT_ARRAY_LEN(groups); i++) {
        size_t n = strlen(bare), k = strlen(groups[i]);
        if (n > k && strcasecmp(bare + n - k, groups[i]) == 0) {
            bare[n - k] = '\0';
        }
    }
    for (size_t i = 0; i < GT_ARRAY_LEN(short_names); i++) {
        if (strcasecmp(bare, short_names[i].alias) == 0) {
            return gt_kind_get(short_names[i].kind);
        }
    }
    return gt_kind_by_name(bare);
}

int gt_cli_kind_ref_split(const char *arg, char **kind_word, const char **name)
{
    const char *slash = strchr(arg, '/');
    if (!slash) {
        return 0;
    }
    if (slash == arg || !slash[1] || strchr(slash + 1, '/')) {
        return -1;
    }
    *kind_word = gt_xstrndup(arg, (size_t)(slash - arg));
    *name = slash + 1;
    return 1;
}

char *gt_cli_url_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    struct gt_buf b;
    gt_buf_init(&b);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
            gt_buf_append(&b, p, 1);
        } else {
            char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            gt_buf_append(&b, esc, sizeof(esc));
        }
    }
    return gt_buf_take(&b);
}

static void append_segment(struct gt_buf *b, const char *seg)
{
    char *esc = gt_cli_url_escape(seg);
    gt_buf_printf(b, "/%s", esc);
    free(esc);
}

char *gt_cli_kind_path(const struct gt_kind_info *k, const char *project, const char *name)
{
    struct gt_buf b;
    gt_buf_init(&b);
    gt_buf_puts(&b, GT_API_GROUP_PREFIX);
    if (k->namespaced && project) {
        append_segment(&b, "projects");
        append_segment(&b, project);
    }
    append_segment(&b, k->plural);
    if (name) {
        append_segment(&b, name);
    }
    return gt_buf_take(&b);
}

char *gt_cli_kind_resource(const struct gt_kind_info *k, char *buf, size_t len)
{
    size_t i = 0;
    for (; k->name[i] && i + 1 < len; i++) {
        buf[i] = (char)tolower((unsigned char)k->name[i]);
    }
    buf[i] = '\0';
    snprintf(buf + i, len - i, ".gantry.dev");
    return buf;
}
