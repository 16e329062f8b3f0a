/*
 * GPU discovery: the fake-GPU spec parser (good and bad specs, UUIDs,
 * groups) and the NVML path against a fake libnvidia-ml built at run time
 * from fake_nvml/fake_nvml.c, in each of its behaviours.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/agent.h"
#include "test_agent_util.h"

/* ---- fake GPUs ---- */

static void test_fake_default_group(void **state)
{
    (void)state;
    struct gt_gpu_set set;
    struct gt_err err = {0};
    assert_int_equal(gt_gpu_discover_fake(&set, "4xA100-80GB", "node-a", &err), 0);
    assert_int_equal(set.n_gpus, 4);
    for (size_t i = 0; i < 4; i++) {
        const struct gt_gpu *g = &set.gpus[i];
        assert_int_equal(g->index, (int)i);
        assert_string_equal(g->model, "A100-80GB");
        assert_int_equal(g->memory_bytes, 80LL << 30);
        assert_string_equal(g->group, "g0");
        assert_int_equal(g->numa_node, 0);
        assert_true(g->healthy);
        assert_int_equal(g->minor, -1);
        /* GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx */
        assert_int_equal(strlen(g->uuid), 40);
        assert_memory_equal(g->uuid, "GPU-", 4);
        for (size_t k = 4; k < 40; k++) {
            bool dash = k == 12 || k == 17 || k == 22 || k == 27;
            assert_true(dash ? g->uuid[k] == '-' : strchr("0123456789abcdef", g->uuid[k]) != NULL);
        }
        for (size_t j = 0; j < i; j++) {
            assert_string_not_equal(g->uuid, set.gpus[j].uuid);
        }
    }
    assert_int_equal(gt_gpu_poll_health(&set, 10, &err), 0);
    gt_gpu_set_fini(&set);
    assert_null(set.gpus);
}

static void test_fake_groups_and_stable_uuids(void **state)
{
    (void)state;
    struct gt_gpu_set a, b, c;
    struct gt_err err = {0};
    assert_int_equal(gt_gpu_discover_fake(&a, "8xH100-80GB:groups=4+2+2", "node-a", &err), 0);
    assert_int_equal(gt_gpu_discover_fake(&b, "8xH100-80GB:groups=4+2+2", "node-a", &err), 0);
    assert_int_equal(gt_gpu_discover_fake(&c, "8xH100-80GB", "node-b", &err), 0);
    static const char *const groups[] = {"g0", "g0", "g0", "g0", "g1", "g1", "g2", "g2"};
    static const int numa[] = {0, 0, 0, 0, 1, 1, 2, 2};
    for (size_t i = 0; i < 8; i++) {
        assert_string_equal(a.gpus[i].group, groups[i]);
        assert_int_equal(a.gpus[i].numa_node, numa[i]);
        assert_string_equal(a.gpus[i].uuid, b.gpus[i].uuid);     /* stable */
        assert_string_not_equal(a.gpus[i].uuid, c.gpus[i].uuid); /* per node */
    }
    gt_gpu_set_fini(&a);
    gt_gpu_set_fini(&b);
    gt_gpu_set_fini(&c);
    assert_int_equal(gt_gpu_discover_fake(&a, "1xT4-16GB:groups=1", "n", &err), 0);
    assert_int_equal(a.n_gpus, 1);
    assert_int_equal(a.gpus[0].memory_bytes, 16LL << 30);
    gt_gpu_set_fini(&a);
}

/* Fake GPUs read their counters, processes, Xids and loss from a file per GPU. */
static void test_fake_counters(void **state)
{
    (void)state;
    struct gt_gpu_set set;
    struct gt_err err = {0};
    char *dir = test_tmpdir("fakegpu");
    assert_int_equal(gt_gpu_discover_fake(&set, "3xA100-80GB", "node-a", &err), 0);
    gt_gpu_fake_counters(&set, dir);
    test_write_file(dir, "0",
                    "util 37\nmem_copy_util 5\nfb_used_mib 2048\npower_w 212.5\ntemp_c 55\n"
                    "sm_clock_mhz 1410\nprocess 100 1024\nprocess 101 512\n");
    test_write_file(dir, "2", "lost 1\n");
    /* failing before the first sample: listed Unhealthy, the others healthy */
    assert_int_equal(gt_gpu_sample_all(&set), 1);
    const struct gt_gpu_sample *s = &set.samples[0];
    assert_int_equal(s->util_pct, 37);
    assert_int_equal(s->mem_copy_util_pct, 5);
    assert_int_equal(s->fb_used_mib, 2048);
    assert_int_equal(s->fb_free_mib, 80 * 1024 - 2048);
    assert_true(s->power_w > 212.4 && s->power_w < 212.6);
    assert_int_equal(s->temp_c, 55);
    assert_int_equal(s->sm_clock_mhz, 1410);
    assert_int_equal(s->n_procs, 2);
    assert_int_equal(s->procs[1].pid, 101);
    assert_int_equal(s->procs[1].used_bytes, 512LL << 20);
    assert_int_equal(set.samples[1].util_pct, 0); /* no file: idle */
    assert_int_equal(set.samples[1].fb_free_mib, 80 * 1024);
    assert_true(set.gpus[0].healthy && set.gpus[1].healthy);
    assert_false(set.gpus[2].healthy);
    /* an application Xid is recorded, a critical one fails the GPU */
    test_write_file(dir, "1", "xid 13\n");
    assert_int_equal(gt_gpu_sample_all(&set), 0);
    assert_int_equal(set.gpus[1].last_xid, 13);
    assert_int_equal(set.gpus[1].n_xid, 0);
    test_write_file(dir, "1", "xid 79\n");
    assert_int_equal(gt_gpu_sample_all(&set), 1);
    assert_false(set.gpus[1].healthy);
    assert_int_equal(set.gpus[1].n_xid, 1);
    assert_int_equal(gt_gpu_sample_all(&set), 0);
    assert_int_equal(set.gpus[1].n_xid, 1); /* the same event, not another */
    /* both recover */
    test_write_file(dir, "1", "");
    test_write_file(dir, "2", "util 3\n");
    assert_int_equal(gt_gpu_sample_all(&set), 2);
    assert_true(set.gpus[1].healthy && set.gpus[2].healthy);
    assert_int_equal(set.samples[2].util_pct, 3);
    /* a file it cannot parse reads as lost */
    test_write_file(dir, "0", "util many\n");
    assert_int_equal(gt_gpu_sample_all(&set), 1);
    assert_false(set.gpus[0].healthy);
    gt_gpu_set_fini(&set);
    test_rm_rf(dir);
    free(dir);
}

static void test_fake_bad_specs(void **state)
{
    (void)state;
    static const struct {
        const char *spec;
        const char *says;
    } bad[] = {
        {"", "want <count"},
        {"x", "want <count"},
        {"0xA100-80GB", "want <count"},
        {"-1xA100-80GB", "want <count"},
        {"8A100-80GB", "want <count"},
        {"257xA100-80GB", "want <count"},
        {"99999999999999999999xA100-80GB", "want <count"},
        {"8x", "model must be"},
        {"8x:groups=8", "model must be"},
        {"8xA100", "must end in -<N>GB"},
        {"8xA100-0GB", "memory must be"},
        {"8xA100-GB", "memory must be"},
        {"8xA 100-80GB", "only letters"},
        {"8xA100-80GB:groups=4+3", "sum to 7"},
        {"8xA100-80GB:groups=", "positive sizes"},
        {"8xA100-80GB:groups=4++4", "positive sizes"},
        {"8xA100-80GB:groups=8+0", "positive sizes"},
        {"8xA100-80GB:groups=4+4+", "positive sizes"},
        {"8xA100-80GB:groups=4+4:x", "unexpected"},
        {"8xA100-80GB:numa=2", "unknown option"},
    };
    for (size_t i = 0; i < GT_ARRAY_LEN(bad); i++) {
        struct gt_gpu_set set;
        struct gt_err err = {0};
        int rc = gt_gpu_discover_fake(&set, bad[i].spec, "n", &err);
        if (rc != GT_EINVAL || !strstr(err.msg, bad[i].says)) {
            fail_msg("spec \"%s\": rc %d, message \"%s\" (want \"%s\")", bad[i].spec, rc, err.msg,
                     bad[i].says);
        }
        assert_int_equal(set.n_gpus, 0);
        assert_null(set.gpus);
        gt_gpu_set_fini(&set);
    }
}

/* ---- NVML through a fake library ---- */

struct nvml_fixture {
    char *dir;
    char *lib;
};

static int remove_fake_nvml(void **state)
{
    struct nvml_fixture *fx = *state;
    test_rm_rf(fx->dir);
    free(fx->dir);
    free(fx->lib);
    free(fx);
    unsetenv("FAKE_NVML_MODE");
    return 0;
}

static int build_fake_nvml(void **state)
{
    struct nvml_fixture *fx = gt_xcalloc(1, sizeof(*fx));
    fx->dir = test_tmpdir("nvml");
    fx->lib = gt_xasprintf("%s/libfake-nvml.so", fx->dir);
    char *src = gt_xstrdup(__FILE__);
    *strrchr(src, '/') = '\0';
    char *file = gt_xasprintf("%s/fake_nvml/fake_nvml.c", src);
    char *argv[] = {"cc", "-shared", "-fPIC", "-O1", "-o", fx->lib, file, NULL};
    int st = test_run(argv);
    free(file);
    free(src);
    *state = fx;
    if (st != 0) {
        fprintf(stderr, "building the fake NVML library failed (status %d)\n", st);
        remove_fake_nvml(state);
        return -1;
    }
    return 0;
}

static int discover_mode(struct nvml_fixture *fx, const char *mode, struct gt_gpu_set *set,
                         struct gt_err *err)
{
    setenv("FAKE_NVML_MODE", mode, 1);
    return gt_gpu_discover_nvml(set, fx->lib, err);
}

static void test_nvml_ok(void **state)
{
    struct gt_gpu_set set;
    struct gt_err err = {0};
    assert_int_equal(discover_mode(*state, "ok", &set, &err), 0);
    assert_int_equal(set.n_gpus, 2);
    for (int i = 0; i < 2; i++) {
        char uuid[64];
        snprintf(uuid, sizeof(uuid), "GPU-fa4e0000-0000-0000-0000-00000000000%d", i);
        assert_string_equal(set.gpus[i].uuid, uuid);
        assert_string_equal(set.gpus[i].model, "NVIDIA H100 80GB HBM3");
        assert_int_equal(set.gpus[i].memory_bytes, (80LL << 30) + i);
        assert_int_equal(set.gpus[i].minor, i + 4);
        assert_int_equal(set.gpus[i].numa_node, -1); /* no such PCI device here */
        assert_true(set.gpus[i].healthy);
        /* on different PCIe roots, joined by NvLink */
        assert_string_equal(set.gpus[i].group, "g0");
    }
    assert_int_equal(gt_gpu_poll_health(&set, 0, &err), 0);
    gt_gpu_set_fini(&set);
}

static void test_nvml_pcie_groups(void **state)
{
    struct gt_gpu_set set;
    struct gt_err err = {0};
    assert_int_equal(discover_mode(*state, "pcie", &set, &err), 0);
    assert_int_equal(set.n_gpus, 3);
    assert_string_equal(set.gpus[0].group, "g0");
    assert_string_equal(set.gpus[1].group, "g0");
    assert_string_equal(set.gpus[2].group, "g1");
    gt_gpu_set_fini(&set);
}

static void test_nvml_failures(void **state)
{
    static const struct {
        const char *mode;
        const char *says;
    } cases[] = {
        {"init_fail", "nvmlInit_v2 failed: Fake Error (9)"},
        {"count_fail", "nvmlDeviceGetCount_v2 failed: Unknown Error (999)"},
    };
    for (size_t i = 0; i < GT_ARRAY_LEN(cases); i++) {
        struct gt_gpu_set set;
        struct gt_err err = {0};
        assert_true(discover_mode(*state, cases[i].mode, &set, &err) < 0);
        assert_int_equal(set.n_gpus, 0);
        assert_null(set.gpus);
        if (!strstr(err.msg, cases[i].says)) {
            fail_msg("mode %s: \"%s\" lacks \"%s\"", cases[i].mode, err.msg, cases[i].says);
        }
        assert_int_equal(gt_gpu_poll_health(&set, 0, &err), 0);
        gt_gpu_set_fini(&set);
    }
}

/* A GPU that cannot be described at discovery is listed Unhealthy, not
 * dropped with the healthy one. */
static void test_nvml_failing_gpu_listed_unhealthy(void **state)
{
    struct gt_gpu_set set;
    struct gt_err err = {0};
    assert_int_equal(discover_mode(*state, "uuid_fail", &set, &err), 0);
    assert_int_equal(set.n_gpus, 2);
    assert_true(set.gpus[0].healthy);
    assert_string_equal(set.gpus[0].uuid, "GPU-fa4e0000-0000-0000-0000-000000000000");
    assert_false(set.gpus[1].healthy);
    assert_true(set.gpus[1].lost);
    assert_int_equal(set.gpus[1].index, 1);
    assert_string_equal(set.gpus[1].uuid, "GPU-unavailable-1");
    assert_string_not_equal(set.gpus[0].group, set.gpus[1].group);
    /* it is never sampled, and stays lost */
    assert_int_equal(gt_gpu_sample_all(&set), 0);
    assert_false(set.gpus[1].healthy);
    assert_int_equal(set.samples[1].taken_ms, 0);
    assert_int_equal(set.samples[0].util_pct, 40);
    gt_gpu_set_fini(&set);
}

static void test_nvml_sample_readings(void **state)
{
    struct gt_gpu_set set;
    struct gt_err err = {0};
    assert_int_equal(discover_mode(*state, "ok", &set, &err), 0);
    assert_int_equal(gt_gpu_sample_all(&set), 0);
    for (int i = 0; i < 2; i++) {
        const struct gt_gpu_sample *s = &set.samples[i];
        assert_true(s->taken_ms > 0);
        assert_int_equal(s->util_pct, 40 + i);
        assert_int_equal(s->mem_copy_util_pct, 10 + i);
        assert_int_equal(s->fb_used_mib, 1024);
        assert_int_equal(s->fb_free_mib, 80 * 1024 - 1024);
        assert_true(s->power_w > 250.49 && s->power_w < 250.51);
        assert_int_equal(s->temp_c, 60 + i);
        assert_int_equal(s->sm_clock_mhz, 1410);
    }
    /* GPU 0's processes, read again after NVML asked for a larger buffer */
    assert_int_equal(set.samples[0].n_procs, 2);
    assert_int_equal(set.samples[0].procs[0].pid, 4242);
    assert_int_equal(set.samples[0].procs[0].used_bytes, 1LL << 30);
    assert_int_equal(set.samples[0].procs[1].pid, getpid());
    assert_int_equal(set.samples[0].procs[1].used_bytes, 512LL << 20);
    assert_int_equal(set.samples[1].n_procs, 0);
    gt_gpu_set_fini(&set);
}

/* A device that stops answering is Unhealthy at the next sample, the other
 * stays healthy, and it is Healthy again once it answers. */
static void test_nvml_lost_and_recovered(void **state)
{
    struct gt_gpu_set set;
    struct gt_err err = {0};
    assert_int_equal(discover_mode(*state, "ok", &set, &err), 0);
    assert_int_equal(gt_gpu_sample_all(&set), 0);
    setenv("FAKE_NVML_LOST", "1", 1);
    assert_int_equal(gt_gpu_sample_all(&set), 1);
    assert_true(set.gpus[0].healthy);
    assert_false(set.gpus[1].healthy);
    assert_true(set.gpus[1].lost);
    assert_int_equal(set.samples[1].taken_ms, 0);
    assert_int_equal(gt_gpu_sample_all(&set), 0);
    unsetenv("FAKE_NVML_LOST");
    assert_int_equal(gt_gpu_sample_all(&set), 1);
    assert_true(set.gpus[1].healthy);
    assert_int_equal(set.samples[1].util_pct, 41);
    gt_gpu_set_fini(&set);
}

static void test_nvml_xid_marks_unhealthy(void **state)
{
    struct gt_gpu_set set;
    struct gt_err err = {0};
    assert_int_equal(discover_mode(*state, "xid", &set, &err), 0);
    /* Xid 13 (application error) on GPU 0 is ignored, Xid 79 on GPU 1 is not */
    assert_int_equal(gt_gpu_poll_health(&set, 10, &err), 1);
    assert_true(set.gpus[0].healthy);
    assert_false(set.gpus[1].healthy);
    assert_int_equal(set.gpus[0].last_xid, 13);
    assert_int_equal(set.gpus[0].n_xid, 0);
    assert_int_equal(set.gpus[1].last_xid, 79);
    assert_int_equal(set.gpus[1].n_xid, 1);
    assert_int_equal(gt_gpu_poll_health(&set, 10, &err), 0);
    /* a failed GPU stays Unhealthy though it answers */
    assert_int_equal(gt_gpu_sample_all(&set), 0);
    assert_false(set.gpus[1].healthy);
    gt_gpu_set_fini(&set);
}

static void test_nvml_missing_library(void **state)
{
    struct nvml_fixture *fx = *state;
    struct gt_gpu_set set;
    struct gt_err err = {0};
    char *missing = gt_xasprintf("%s/libnvidia-ml.so.1", fx->dir);
    assert_true(gt_gpu_discover_nvml(&set, missing, &err) < 0);
    assert_int_equal(set.n_gpus, 0);
    assert_non_null(strstr(err.msg, "NVML not available"));
    gt_gpu_set_fini(&set);
    free(missing);
    /* a library without NVML's symbols */
    gt_err_clear(&err);
    assert_true(gt_gpu_discover_nvml(&set, "libm.so.6", &err) < 0);
    assert_non_null(strstr(err.msg, "lacks nvmlInit_v2"));
    gt_gpu_set_fini(&set);
}

int main(void)
{
    const struct CMUnitTest fake[] = {
        cmocka_unit_test(test_fake_default_group),
        cmocka_unit_test(test_fake_groups_and_stable_uuids),
        cmocka_unit_test(test_fake_bad_specs),
        cmocka_unit_test(test_fake_counters),
    };
    const struct CMUnitTest nvml[] = {
        cmocka_unit_test(test_nvml_ok),
        cmocka_unit_test(test_nvml_pcie_groups),
        cmocka_unit_test(test_nvml_failures),
        cmocka_unit_test(test_nvml_failing_gpu_listed_unhealthy),
        cmocka_unit_test(test_nvml_sample_readings),
        cmocka_unit_test(test_nvml_lost_and_recovered),
        cmocka_unit_test(test_nvml_xid_marks_unhealthy),
        cmocka_unit_test(test_nvml_missing_library),
    };
    int failed = cmocka_run_group_tests_name("fake_gpus", fake, NULL, NULL);
    failed += cmocka_run_group_tests_name("nvml", nvml, build_fake_nvml, remove_fake_nvml);
    return failed ? 1 : 0;
}
