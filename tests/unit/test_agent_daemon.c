/*
 * gantlet's pure decisions: the shim spec built from a Task (argv, env,
 * uid rules, limits, device minors), the terminal status built from an
 * exit record, what to do with a task given its local and remote states,
 * the tail of a log read backwards in pieces, and the token file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/gantlet.h"
#include "test_agent_util.h"

static json_t *task_json(const char *extra_tmpl, const char *extra_spec)
{
    char *text = gt_xasprintf(
        "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Task\","
        "\"metadata\":{\"name\":\"train-worker-1\",\"project\":\"p\",\"uid\":\"u-1\","
        "\"creator\":{\"user\":\"alice\",\"uid\":1001}},"
        "\"spec\":{\"job\":\"train\",\"replicaType\":\"Worker\",\"replicaIndex\":1,"
        "\"nodeName\":\"n1\",\"gpus\":[{\"index\":2,\"uuid\":\"GPU-a\"},{\"index\":5,\"uuid\":"
        "\"GPU-b\"}]%s,"
        "\"template\":{\"command\":[\"python\"],\"args\":[\"train.py\",\"--lr\"],"
        "\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"CUDA_VISIBLE_DEVICES\",\"value\":"
        "\"9\"}],"
        "\"resources\":{\"requests\":{\"cpu\":\"250m\",\"memory\":\"1Gi\"},\"limits\":{\"cpu\":"
        "\"500m\"}}%s}},\"status\":{\"phase\":\"Bound\"}}",
        extra_spec ? extra_spec : "", extra_tmpl ? extra_tmpl : "");
    json_t *t = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(t);
    return t;
}

/* A Task as the agent gets it from gantryd: validated, then decoded. */
static struct gt_api_task *task_decoded(json_t *obj)
{
    struct gt_err err = {0};
    if (gt_api_validate(GT_KIND_TASK, obj, &err) < 0) {
        fail_msg("task fixture: %s", err.msg);
    }
    struct gt_api_task *t = gt_api_task_new(obj);
    json_decref(obj);
    return t;
}

static struct gt_api_task *task_new(const char *extra_tmpl, const char *extra_spec)
{
    return task_decoded(task_json(extra_tmpl, extra_spec));
}

static const char *env_get(const struct gt_shim_spec *s, const char *name)
{
    size_t n = strlen(name);
    const char *found = NULL;
    for (size_t i = 0; i < s->n_env; i++) {
        if (!strncmp(s->env[i], name, n) && s->env[i][n] == '=') {
            assert_null(found); /* each name once */
            found = s->env[i] + n + 1;
        }
    }
    return found;
}

static const struct gt_task_spec_params params = {
    .state_dir = "/var/lib/gantlet/tasks/u-1", .log_max_bytes = 1000, .log_keep_files = 3};

static void spec_from_task(void **state)
{
    (void)state;
    struct gt_gpu gpus[6];
    memset(gpus, 0, sizeof(gpus));
    for (int i = 0; i < 6; i++) {
        gpus[i].index = i;
        gpus[i].minor = 10 + i;
    }
    struct gt_gpu_set set = {.gpus = gpus, .n_gpus = 6};
    /* the node's cgroup layout (v1: cpu and memory mounted) goes to the shim */
    const char *mounts[GT_CG_NCTRL] = {[GT_CG_CPU] = "/c/cpu", [GT_CG_MEMORY] = "/c/memory"};
    struct gt_cgroup_sys cgsys;
    struct gt_err err = {0};
    assert_int_equal(gt_cgroup_sys_init_v1(&cgsys, mounts, &err), 0);
    struct gt_task_spec_params p = params;
    p.gpus = &set;
    p.cgsys = &cgsys;
    struct gt_api_task *t = task_new(NULL, NULL);
    struct gt_shim_spec s;
    assert_int_equal(gt_task_spec_build(t, &p, &s, &err), 0);
    assert_null(s.cg_unified);
    assert_string_equal(s.cg_mounts[GT_CG_CPU], "/c/cpu");
    assert_string_equal(s.cg_mounts[GT_CG_MEMORY], "/c/memory");
    assert_null(s.cg_mounts[GT_CG_PIDS]);
    assert_int_equal(s.n_argv, 3);
    assert_string_equal(s.argv[0], "python");
    assert_string_equal(s.argv[2], "--lr");
    assert_string_equal(env_get(&s, "A"), "1");
    assert_string_equal(env_get(&s, "CUDA_VISIBLE_DEVICES"), "2,5");
    assert_string_equal(env_get(&s, "NVIDIA_VISIBLE_DEVICES"), "GPU-a,GPU-b");
    assert_string_equal(env_get(&s, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
    assert_string_equal(env_get(&s, "GANTRY_JOB"), "train");
    assert_string_equal(env_get(&s, "GANTRY_TASK"), "train-worker-1");
    assert_string_equal(env_get(&s, "GANTRY_REPLICA_TYPE"), "Worker");
    assert_string_equal(env_get(&s, "GANTRY_REPLICA_INDEX"), "1");
    assert_string_equal(env_get(&s, "PATH"), GT_GANTLET_DEFAULT_PATH);
    assert_int_equal(s.uid, 1001);
    assert_false(s.privileged);
    assert_string_equal(s.cwd, "/var/lib/gantlet/tasks/u-1/work");
    assert_string_equal(s.log_dir, "/var/lib/gantlet/tasks/u-1");
    assert_string_equal(s.cgroup_path, "gantry/u-1");
    assert_string_equal(s.hostname, "train-worker-1");
    assert_int_equal(s.limits.cpu_milli, 500);           /* limit wins */
    assert_int_equal(s.limits.memory_bytes, 1073741824); /* else the request */
    assert_int_equal(s.limits.pids_max, GT_GANTLET_PIDS_MAX);
    assert_int_equal(s.limits.n_gpu_minors, 2);
    assert_int_equal(s.limits.gpu_minors[0], 12);
    assert_int_equal(s.limits.gpu_minors[1], 15);
    assert_int_equal(s.stop_grace_ms, 30000);
    assert_int_equal(s.namespaces, GT_NS_PID | GT_NS_MOUNT | GT_NS_UTS | GT_NS_IPC);
    /* the spec round-trips through the shim's own parser */
    char *text = gt_shim_spec_to_json(&s);
    struct gt_shim_spec back;
    assert_int_equal(gt_shim_spec_parse(text, strlen(text), &back, &err), 0);
    assert_int_equal(back.uid, 1001);
    assert_string_equal(back.cg_mounts[GT_CG_MEMORY], "/c/memory");
    gt_shim_spec_fini(&back);
    free(text);
    gt_shim_spec_fini(&s);
    gt_api_task_free(t);
}

/* An env entry naming a gantry secret takes the value the agent fetched;
 * without it the task does not start. */
static void spec_secret_env(void **state)
{
    (void)state;
    json_t *obj = task_json(NULL, NULL);
    json_object_set_new(gt_json_path(obj, "spec.template"), "env",
                        json_pack("[{s:s, s:s}, {s:s, s:{s:s}}]", "name", "A", "value", "1", "name",
                                  "JUPYTER_TOKEN", "valueFrom", "gantrySecret", "notebook-token"));
    struct gt_api_task *t = task_decoded(obj);
    assert_true(gt_task_needs_secrets(t));
    struct gt_task_spec_params p = params;
    struct gt_shim_spec s;
    struct gt_err err = {0};
    assert_int_equal(gt_task_spec_build(t, &p, &s, &err), GT_EINVAL);
    assert_string_equal(err.msg, "spec.template.env[1] JUPYTER_TOKEN: the value of gantry secret "
                                 "notebook-token did not come from gantryd");
    json_t *values = json_pack("{s:s}", "JUPYTER_TOKEN", "derived-token");
    p.secrets = values;
    assert_int_equal(gt_task_spec_build(t, &p, &s, &err), 0);
    assert_string_equal(env_get(&s, "JUPYTER_TOKEN"), "derived-token");
    assert_string_equal(env_get(&s, "A"), "1");
    gt_shim_spec_fini(&s);
    json_decref(values);
    gt_api_task_free(t);
    t = task_new(NULL, NULL);
    assert_false(gt_task_needs_secrets(t));
    gt_api_task_free(t);
}

static void spec_prep_parts(void **state)
{
    (void)state;
    char *roots[] = {(char *)"/srv", (char *)"/data/"};
    struct gt_task_spec_params p = params;
    p.storage_roots = roots;
    p.n_storage_roots = 2;
    p.venv_root = "/var/lib/gantlet/venvs";
    p.cluster_ifname = "eth1";
    struct gt_shim_spec s;
    struct gt_err err = {0};
    struct gt_api_task *t =
        task_new(",\"volumeMounts\":[{\"name\":\"out\",\"mountPath\":\"/out\"}]",
                 ",\"source\":{\"git\":\"file:///r\",\"revision\":\"main\"},"
                 "\"requirements\":[\"a==1\"],\"pip\":{\"findLinks\":\"/wheels\"},"
                 "\"volumes\":[{\"name\":\"out\",\"hostPath\":\"/data/x\",\"readOnly\":true}],"
                 "\"hosts\":[{\"hostname\":\"train-master-0\",\"ip\":\"10.0.0.2\"}]");
    assert_int_equal(gt_task_spec_build(t, &p, &s, &err), 0);
    assert_string_equal(env_get(&s, "GLOO_SOCKET_IFNAME"), "eth1");
    assert_string_equal(env_get(&s, "NCCL_SOCKET_IFNAME"), "eth1");
    assert_string_equal(s.git_url, "file:///r");
    assert_string_equal(s.git_revision, "main");
    assert_int_equal(s.n_req, 1);
    assert_string_equal(s.venv_dir, "/var/lib/gantlet/venvs/1001");
    assert_string_equal(s.pip_find_links, "/wheels");
    assert_int_equal(s.n_volumes, 1);
    assert_string_equal(s.volumes[0].root, "/data/");
    assert_string_equal(s.volumes[0].path, "x");
    assert_true(s.volumes[0].read_only);
    assert_int_equal(s.n_hosts, 2);
    assert_string_equal(s.hosts[1].hostname, "train-master-0.p.svc");
    /* round trip through the shim's parser */
    char *text = gt_shim_spec_to_json(&s);
    struct gt_shim_spec back;
    assert_int_equal(gt_shim_spec_parse(text, strlen(text), &back, &err), 0);
    assert_string_equal(back.volumes[0].path, "x");
    assert_string_equal(back.hosts[0].ip, "10.0.0.2");
    assert_string_equal(back.req_list[0], "a==1");
    gt_shim_spec_fini(&back);
    free(text);
    gt_shim_spec_fini(&s);
    gt_api_task_free(t);
    /* an alias spec.hosts already names is not added twice */
    t = task_new(NULL, ",\"hosts\":[{\"hostname\":\"w-0\",\"ip\":\"10.0.0.3\"},"
                       "{\"hostname\":\"w-0.p.svc\",\"ip\":\"10.0.0.3\"}]");
    assert_int_equal(gt_task_spec_build(t, &p, &s, &err), 0);
    assert_int_equal(s.n_hosts, 2);
    assert_string_equal(s.hosts[1].hostname, "w-0.p.svc");
    gt_shim_spec_fini(&s);
    gt_api_task_free(t);
    /* outside every root: refused before anything starts */
    t = task_new(",\"volumeMounts\":[{\"name\":\"out\",\"mountPath\":\"/out\"}]",
                 ",\"volumes\":[{\"name\":\"out\",\"hostPath\":\"/etc\"}]");
    assert_int_equal(gt_task_spec_build(t, &p, &s, &err), GT_EFORBIDDEN);
    assert_non_null(strstr(err.msg, "not beneath a storage root"));
    gt_api_task_free(t);
    /* a start failure's reason is the Task's */
    struct gt_shim_exit ex = {
        .exit_code = 127, .reason = "SourceFetchFailed", .error = "git fetch failed"};
    json_t *st = gt_task_exit_status(NULL, &ex);
    assert_string_equal(json_string_value(json_object_get(st, "reason")), "SourceFetchFailed");
    assert_string_equal(json_string_value(json_object_get(st, "message")), "git fetch failed");
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Failed");
    json_decref(st);
}

static void spec_user_rules(void **state)
{
    (void)state;
    struct gt_shim_spec s;
    struct gt_err err = {0};
    struct gt_api_task *t = task_new(",\"runAsUser\":4242,\"workingDir\":\"/data\","
                                     "\"terminationGracePeriodSeconds\":5",
                                     NULL);
    assert_int_equal(gt_task_spec_build(t, &params, &s, &err), 0);
    assert_int_equal(s.uid, 4242);
    assert_string_equal(s.cwd, "/data");
    assert_int_equal(s.stop_grace_ms, 5000);
    gt_shim_spec_fini(&s);
    gt_api_task_free(t);

    t = task_new(",\"runAsUser\":0", NULL);
    assert_int_equal(gt_task_spec_build(t, &params, &s, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "uid 0"));
    gt_api_task_free(t);

    t = task_new(",\"runAsUser\":0", ",\"privileged\":true");
    assert_int_equal(gt_task_spec_build(t, &params, &s, NULL), 0);
    assert_int_equal(s.uid, 0);
    assert_true(s.privileged);
    gt_shim_spec_fini(&s);
    gt_api_task_free(t);

    json_t *no_creator = task_json(NULL, NULL);
    json_object_del(json_object_get(no_creator, "metadata"), "creator");
    t = task_decoded(no_creator);
    assert_int_equal(gt_task_spec_build(t, &params, &s, NULL), GT_EINVAL);
    gt_api_task_free(t);

    /* the primary group: root's from passwd; a uid without an entry gets
     * its own number; both remembered until the TTL passes */
    struct gt_gid_cache gids;
    gt_gid_cache_init(&gids);
    struct gt_task_spec_params p = params;
    p.gids = &gids;
    t = task_new(",\"runAsUser\":4242", NULL);
    assert_int_equal(gt_task_spec_build(t, &p, &s, NULL), 0);
    assert_int_equal(s.gid, 4242);
    gt_shim_spec_fini(&s);
    gt_api_task_free(t);
    assert_non_null(gt_strmap_get(&gids.by_uid, "4242"));
    assert_int_equal(gt_gid_cache_get(&gids, 0, 0), 0);
    assert_int_equal(gt_gid_cache_get(&gids, 4242, 1), 4242);
    assert_int_equal(gt_gid_cache_get(&gids, 0, GT_GID_CACHE_TTL_MS + 1), 0);
    gt_gid_cache_fini(&gids);
}

static void exit_status(void **state)
{
    (void)state;
    json_t *prev = json_pack("{s:s, s:s, s:i}", "phase", "Running", "boundTime",
                             "2026-01-01T00:00:00Z", "hostPid", 77);
    struct gt_shim_exit ex = {.exit_code = 0, .finished_at_ms = 1000};
    json_t *st = gt_task_exit_status(prev, &ex);
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Succeeded");
    assert_string_equal(json_string_value(json_object_get(st, "reason")), "Completed");
    assert_string_equal(json_string_value(json_object_get(st, "boundTime")),
                        "2026-01-01T00:00:00Z");
    assert_int_equal(json_integer_value(json_object_get(st, "hostPid")), 77);
    assert_string_equal(json_string_value(json_object_get(st, "finishTime")),
                        "1970-01-01T00:00:01Z");
    json_decref(st);
    ex = (struct gt_shim_exit){.exit_code = 137, .signal = 9, .oom_killed = true};
    st = gt_task_exit_status(prev, &ex);
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Failed");
    assert_string_equal(json_string_value(json_object_get(st, "reason")), "OOMKilled");
    assert_int_equal(json_integer_value(json_object_get(st, "signal")), 9);
    json_decref(st);
    ex = (struct gt_shim_exit){.exit_code = 3};
    st = gt_task_exit_status(NULL, &ex);
    assert_string_equal(json_string_value(json_object_get(st, "reason")), "Error");
    json_decref(st);
    /* a stopped task fails with the stop's reason even when it exits 0 */
    ex = (struct gt_shim_exit){.exit_code = 0, .stop_requested = true};
    snprintf(ex.stop_reason, sizeof(ex.stop_reason), "Deleted");
    st = gt_task_exit_status(prev, &ex);
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Failed");
    assert_string_equal(json_string_value(json_object_get(st, "reason")), "Killed");
    json_decref(st);
    snprintf(ex.stop_reason, sizeof(ex.stop_reason), "Preempted");
    st = gt_task_exit_status(prev, &ex);
    assert_string_equal(json_string_value(json_object_get(st, "reason")), "Preempted");
    json_decref(st);
    /* stopped because its job finished: exit 0 is a success, a kill is not */
    snprintf(ex.stop_reason, sizeof(ex.stop_reason), "JobFinished");
    st = gt_task_exit_status(prev, &ex);
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Succeeded");
    assert_string_equal(json_string_value(json_object_get(st, "reason")), "JobFinished");
    json_decref(st);
    ex.exit_code = 143;
    ex.signal = 15;
    st = gt_task_exit_status(prev, &ex);
    assert_string_equal(json_string_value(json_object_get(st, "phase")), "Failed");
    assert_string_equal(json_string_value(json_object_get(st, "reason")), "JobFinished");
    json_decref(st);
    json_decref(prev);
}

static struct gt_api_task *remote(const char *phase, bool stop)
{
    json_t *t = task_json(NULL, stop ? ",\"stop\":{\"reason\":\"Deleted\"}" : NULL);
    json_object_set_new(json_object_get(t, "status"), "phase", json_string(phase));
    return task_decoded(t);
}

static void decide(void **state)
{
    (void)state;
    struct gt_task_local none = {0}, live = {.known = true, .started = true},
                         starting = {.known = true},
                         exited = {.known = true, .started = true, .exited = true},
                         done = {.known = true, .exited = true, .reported = true};
    struct gt_api_task *bound = remote("Bound", false), *running = remote("Running", false),
                       *stopping = remote("Running", true), *bound_stop = remote("Bound", true),
                       *failed = remote("Failed", false), *pending = remote("Pending", false);
    assert_int_equal(gt_task_decide(&none, bound), GT_TA_START);
    assert_int_equal(gt_task_decide(&none, pending), 0);
    assert_int_equal(gt_task_decide(&none, running), 0); /* never started here: no start */
    assert_int_equal(gt_task_decide(&none, bound_stop), GT_TA_REPORT_UNSTARTED);
    assert_int_equal(gt_task_decide(&none, NULL), 0);      /* deleted while unknown */
    assert_int_equal(gt_task_decide(&starting, bound), 0); /* never twice */
    assert_int_equal(gt_task_decide(&live, bound), GT_TA_REPORT_RUNNING);
    struct gt_task_local reported_running = live;
    reported_running.running_reported = true;
    assert_int_equal(gt_task_decide(&reported_running, bound), 0);
    assert_int_equal(gt_task_decide(&live, running), 0);
    assert_int_equal(gt_task_decide(&live, stopping), GT_TA_STOP);
    struct gt_task_local stop_sent = live;
    stop_sent.stop_sent = true;
    assert_int_equal(gt_task_decide(&stop_sent, stopping), 0);
    assert_int_equal(gt_task_decide(&exited, running), GT_TA_REPORT_EXIT);
    assert_int_equal(gt_task_decide(&exited, stopping), GT_TA_REPORT_EXIT);
    assert_int_equal(gt_task_decide(&exited, failed), GT_TA_MARK_REPORTED);
    assert_int_equal(gt_task_decide(&done, failed), 0); /* logs stay */
    assert_int_equal(gt_task_decide(&done, NULL), GT_TA_REMOVE);
    /* gantryd failed it (NodeLost) or it is gone, but it still runs: kill */
    assert_int_equal(gt_task_decide(&live, failed), GT_TA_KILL);
    assert_int_equal(gt_task_decide(&live, NULL), GT_TA_KILL);
    struct gt_task_local killing = live;
    killing.killing = true;
    assert_int_equal(gt_task_decide(&killing, failed), 0);
    killing.exited = true;
    assert_int_equal(gt_task_decide(&killing, failed), GT_TA_REMOVE);
    gt_api_task_free(bound);
    gt_api_task_free(running);
    gt_api_task_free(stopping);
    gt_api_task_free(bound_stop);
    gt_api_task_free(failed);
    gt_api_task_free(pending);
}

/* The grace period of a stop: spec.stop's, else the template's, else 30 s;
 * the spec's own (a shim stopped without a request) is the template's. */
static void stop_grace(void **state)
{
    (void)state;
    struct gt_api_task *t = task_new(NULL, NULL);
    assert_int_equal(gt_task_stop_grace_ms(t), 30000);
    gt_api_task_free(t);
    t = task_new(",\"terminationGracePeriodSeconds\":7", ",\"stop\":{\"reason\":\"Preempted\"}");
    assert_int_equal(gt_task_stop_grace_ms(t), 7000);
    gt_api_task_free(t);
    t = task_new(",\"terminationGracePeriodSeconds\":7",
                 ",\"stop\":{\"reason\":\"Deleted\",\"gracePeriodSeconds\":0}");
    assert_int_equal(gt_task_stop_grace_ms(t), 0);
    struct gt_shim_spec s;
    assert_int_equal(gt_task_spec_build(t, &params, &s, NULL), 0);
    assert_int_equal(s.stop_grace_ms, 7000);
    gt_shim_spec_fini(&s);
    gt_api_task_free(t);
}

/* The cgroup gets api's effective limits: a limit alone is also the
 * request, a request alone is also the limit (gt_api_resources_effective). */
static void spec_limits_defaulted(void **state)
{
    (void)state;
    json_t *obj = task_json(NULL, NULL);
    json_t *res =
        json_object_get(json_object_get(json_object_get(obj, "spec"), "template"), "resources");
    json_object_set_new(res, "requests", json_pack("{s:s}", "memory", "2Gi"));
    json_object_set_new(res, "limits", json_pack("{s:s}", "cpu", "3"));
    struct gt_api_task *t = task_decoded(obj);
    struct gt_shim_spec s;
    assert_int_equal(gt_task_spec_build(t, &params, &s, NULL), 0);
    assert_int_equal(s.limits.cpu_milli, 3000);
    assert_int_equal(s.limits.memory_bytes, 2LL << 30);
    gt_shim_spec_fini(&s);
    gt_api_task_free(t);
}

static size_t tail_of(const char *s, int64_t n)
{
    int64_t seen = 0;
    size_t off = gt_log_tail_offset(s, strlen(s), n, true, &seen);
    return seen >= n ? off : 0;
}

static void log_tail(void **state)
{
    (void)state;
    assert_int_equal(tail_of("a\nb\nc\n", 2), 2);
    assert_int_equal(tail_of("a\nb\nc", 2), 2); /* an unterminated last line counts */
    assert_int_equal(tail_of("a\nb\nc\n", 1), 4);
    assert_int_equal(tail_of("a\nb\nc\n", 5), 0);
    assert_int_equal(tail_of("a\nb\nc\n", 0), 6);
    /* across pieces: newest "c\nd\n", older "a\nb\n" */
    int64_t seen = 0;
    assert_int_equal(gt_log_tail_offset("c\nd\n", 4, 3, true, &seen), 0);
    assert_int_equal(seen, 1);
    assert_int_equal(gt_log_tail_offset("a\nb\n", 4, 3, false, &seen), 2);
    assert_int_equal(seen, 3);
}

static void token_file(void **state)
{
    (void)state;
    char *dir = test_tmpdir("token");
    char *path = gt_xasprintf("%s/t", dir);
    char *tok = NULL;
    FILE *f = fopen(path, "w");
    fputs("  node-token,node-n1,0,\"gantry:nodes\"\nother\n", f);
    fclose(f);
    assert_int_equal(gt_gantlet_token_read(path, &tok, NULL), 0);
    assert_string_equal(tok, "node-token");
    free(tok);
    f = fopen(path, "w");
    fputs("bare-token\n", f);
    fclose(f);
    assert_int_equal(gt_gantlet_token_read(path, &tok, NULL), 0);
    assert_string_equal(tok, "bare-token");
    free(tok);
    f = fopen(path, "w");
    fclose(f);
    assert_true(gt_gantlet_token_read(path, &tok, NULL) < 0);
    test_rm_rf(dir);
    free(path);
    free(dir);
}

static void config_table(void **state)
{
    (void)state;
    struct gt_gantlet_config cfg;
    bool help;
    struct gt_err err = {0};
    char *argv[] = {"gantlet",
                    "--server",
                    "http://h:1",
                    "--token-file=/t",
                    "--name",
                    "n1",
                    "--storage-root",
                    "/a",
                    "--storage-root",
                    "/b",
                    "--heartbeat",
                    "3",
                    NULL};
    char *envp[] = {"GANTLET_LISTEN=0.0.0.0:9", "GANTLET_STORAGE_ROOT=/env", NULL};
    assert_int_equal(gt_gantlet_config_parse(&cfg, 12, argv, envp, &help, &err), 0);
    assert_string_equal(cfg.listen, "0.0.0.0:9");
    assert_string_equal(cfg.token_file, "/t");
    assert_int_equal(cfg.heartbeat_s, 3);
    assert_int_equal(cfg.storage_roots.n, 2); /* flags replace the environment's list */
    assert_string_equal(cfg.storage_roots.items[1], "/b");
    assert_string_equal(cfg.root, "/var/lib/gantlet");
    gt_gantlet_config_fini(&cfg);
    char *bad[] = {"gantlet", "--server", "x", "--token-file", "/t", NULL};
    assert_int_equal(gt_gantlet_config_parse(&cfg, 5, bad, NULL, &help, &err), GT_EINVAL);
    gt_gantlet_config_fini(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(spec_from_task),  cmocka_unit_test(spec_user_rules),
        cmocka_unit_test(spec_prep_parts), cmocka_unit_test(spec_secret_env),
        cmocka_unit_test(exit_status),     cmocka_unit_test(decide),
        cmocka_unit_test(stop_grace),      cmocka_unit_test(spec_limits_defaulted),
        cmocka_unit_test(log_tail),        cmocka_unit_test(token_file),
        cmocka_unit_test(config_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
