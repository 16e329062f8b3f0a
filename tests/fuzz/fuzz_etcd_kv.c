/*
 * Fuzz target: the etcd gateway's answers as gantryd reads them: a range
 * answer's kvs[] and a watch stream's result.events[] (kv and prev_kv),
 * each mvccpb.KeyValue with base64 key and value. Each entry is read or
 * refused with a message; a read key and value are NUL-terminated at their
 * length.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/etcd_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_kv(const json_t *j)
{
    if (!j) {
        return;
    }
    struct gt_store_kv kv;
    struct gt_err err = {0};
    if (gt_etcd_kv_from_json(j, &kv, &err) != 0) {
        GT_ASSERT(err.msg[0] != '\0' && kv.key == NULL && kv.value == NULL);
        return;
    }
    GT_ASSERT(kv.key != NULL && kv.value != NULL && kv.value[kv.value_len] == '\0');
    gt_etcd_jint(j, "version");
    gt_store_kv_fini(&kv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *resp = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!resp) {
        return 0;
    }
    gt_etcd_jint(json_object_get(resp, "header"), "revision");
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(resp, "kvs"), i, v)
    {
        read_kv(v);
    }
    json_t *result = json_object_get(resp, "result");
    json_array_foreach(json_object_get(result, "events"), i, v)
    {
        read_kv(json_object_get(v, "kv"));
        read_kv(json_object_get(v, "prev_kv"));
    }
    json_decref(resp);
    return 0;
}
