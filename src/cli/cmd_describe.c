/*
 * `gantry describe KIND NAME [-p PROJECT]`: the object in detail and the
 * events about it.
 *
 * Events are cluster-scoped; they are asked for by involvedObject.name on
 * the server and narrowed to this kind and project here. Not being allowed
 * to read events does not hide the object: a note goes to standard error.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"

/* The events about the object, as a new array (caller json_decref()s), or
 * NULL after a note on ctx->err when they cannot be listed. */
static json_t *fetch_events(struct gt_cli_ctx *ctx, struct gt_cli_client *client,
                            const struct gt_kind_info *kind, const char *project, const char *name)
{
    const struct gt_kind_info *event_kind = gt_kind_get(GT_KIND_EVENT);
    char *base = gt_cli_kind_path(event_kind, NULL, NULL);
    char *term = gt_xasprintf("involvedObject.name=%s", name);
    char *esc = gt_cli_url_escape(term);
    char *path = gt_xasprintf("%s?fieldSelector=%s", base, esc);
    struct gt_err err = {0};
    json_t *list = NULL, *events = NULL;
    if (gt_cli_client_request(client, "GET", path, NULL, &list, &err) != 0) {
        fprintf(ctx->err, "warning: cannot list events: %s\n", err.msg);
    } else {
        events = json_array();
        size_t i;
        json_t *ev;
        json_array_foreach(json_object_get(list, "items"), i, ev)
        {
            if (gt_cli_event_matches(ev, kind, project, name)) {
                json_array_append(events, ev);
            }
        }
    }
    json_decref(list);
    free(path);
    free(esc);
    free(term);
    free(base);
    return events;
}

static bool task_live(const json_t *t)
{
    const char *phase = json_string_value(gt_json_path(t, "status.phase"));
    return !phase || (strcmp(phase, "Succeeded") && strcmp(phase, "Failed"));
}

/* A node's tasks that have not ended, as kubectl lists a node's
 * non-terminated pods (those of projects the caller may read). */
static void print_node_tasks(struct gt_cli_ctx *ctx, struct gt_cli_client *client, const char *node)
{
    char *esc = gt_cli_url_escape(node);
    char *path = gt_xasprintf(GT_API_GROUP_PREFIX "/tasks?fieldSelector=spec.nodeName%%3D%s", esc);
    free(esc);
    json_t *list = NULL;
    struct gt_err err = {0};
    if (gt_cli_client_request(client, "GET", path, NULL, &list, &err) != 0) {
        fprintf(ctx->out, "Tasks: <%s>\n", err.msg);
        free(path);
        return;
    }
    free(path);
    size_t i, n = 0;
    json_t *t;
    json_array_foreach(json_object_get(list, "items"), i, t)
    {
        n += task_live(t);
    }
    fprintf(ctx->out, "Non-terminated Tasks: (%zu in total)\n", n);
    if (n) {
        fprintf(ctx->out, "  %-20s %-40s %s\n", "PROJECT", "NAME", "PHASE");
    }
    json_array_foreach(json_object_get(list, "items"), i, t)
    {
        const char *phase = json_string_value(gt_json_path(t, "status.phase"));
        if (task_live(t)) {
            fprintf(ctx->out, "  %-20s %-40s %s\n",
                    json_string_value(gt_json_path(t, "metadata.project")),
                    json_string_value(gt_json_path(t, "metadata.name")), phase ? phase : "");
        }
    }
    json_decref(list);
}

int gt_cli_cmd_describe(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                        char **argv)
{
    const char *project_flag, *project;
    const struct gt_kind_info *kind;
    int first;
    int rc = gt_cli_parse_project_opt(ctx, cmd, argc, argv, &project_flag, &first);
    if (rc != 0) {
        return rc;
    }
    /* KIND NAME, or KIND/NAME as `get -o name` prints it */
    char *kind_word = NULL;
    const char *name = argc - first == 2 ? argv[first + 1] : NULL;
    int split = first < argc ? gt_cli_kind_ref_split(argv[first], &kind_word, &name) : 0;
    if (split < 0 || argc - first != (split ? 1 : 2)) {
        free(kind_word);
        return gt_cli_usage_error(
            ctx, cmd, argc - first > 2 ? "too many arguments" : "name a kind and an object");
    }
    rc = gt_cli_resolve_kind(ctx, cmd, kind_word ? kind_word : argv[first], project_flag, &kind,
                             &project);
    free(kind_word);
    if (rc != 0) {
        return rc;
    }
    struct gt_cli_client *client;
    struct gt_err err = {0};
    if (gt_cli_ctx_client(ctx, &client, &err) != 0) {
        return gt_cli_fail(ctx, &err);
    }
    char *path = gt_cli_kind_path(kind, project, name);
    json_t *obj = NULL;
    rc = gt_cli_client_request(client, "GET", path, NULL, &obj, &err);
    free(path);
    if (rc != 0) {
        return gt_cli_fail(ctx, &err);
    }
    json_t *events = fetch_events(ctx, client, kind, project, name);
    struct gt_buf out;
    gt_buf_init(&out);
    gt_cli_describe_render(obj, events, gt_now_ms(), &out);
    fputs(out.data, ctx->out);
    gt_buf_fini(&out);
    if (kind->kind == GT_KIND_NODE) {
        print_node_tasks(ctx, client, name);
    }
    json_decref(events);
    json_decref(obj);
    return 0;
}
