#!/usr/bin/env python3
"""`gantry top nodes` against a real gantryd and gantlet (2 fake GPUs whose
readings come from --fake-gpu-counters): the node's allocation beside what
its tasks use now.

One task holds a GPU (reading 73 % utilisation), spins one CPU and keeps
about 48 MiB of memory. Within a few telemetry rounds `top nodes` shows,
beside GPUS USED 1 of 2 and the allocated cpu and memory, CPU(cores)
above 50m (from the task's cgroup: a spinning task gets that much even on a
loaded machine), MEMORY(bytes) of at least 40Mi and GPU UTIL 73%; GET nodestats has the same sums. Once the job is
deleted the use goes back to 0 and GPU UTIL to "-".
"""
import os

from gantry_e2e import API, AgentTest, main, wait_for

# about 48 MiB resident (a string kept), then one core busy
HOG = ("import time\nb = bytearray(48 << 20)\nfor i in range(0, len(b), 4096):\n"
       "    b[i] = 1\nprint('ready', flush=True)\nwhile True:\n    pass\n")


def parse_table(text):
    lines = text.splitlines()
    head = lines[0]
    # column starts from the header (names hold single spaces)
    starts, i = [], 0
    while i < len(head):
        if head[i] != " " and (i == 0 or head[i - 2:i] == "  "):
            starts.append(i)
        i += 1
    names = [head[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]
    rows = {}
    for line in lines[1:]:
        cells = [line[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]
        rows[cells[0]] = dict(zip(names, cells))
    return rows


def mebibytes(q):
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024}
    for u, f in units.items():
        if q.endswith(u):
            return float(q[:-2]) * f
    return float(q) / (1 << 20)


def millicores(q):
    return float(q[:-1]) if q.endswith("m") else float(q) * 1000


class Top(AgentTest):
    def setUp(self):
        super().setUp()
        self.agent = self.gantlet_with_gpu_counters()

    def test_top_nodes_shows_use_beside_allocation(self):
        t = self.submit("hog", ["/usr/bin/python3", "-c", HOG], gpus=1, cpu="2",
                        memory="256Mi", grace_s=0)
        task = self.wait_phase(t, "Running", timeout=30)
        gpu = task["spec"]["gpus"][0]["index"]
        with open(os.path.join(self.counters, str(gpu)), "w") as f:
            f.write("util 73\n")

        seen = {}

        def busy():
            rows = parse_table(self.g.cli("top", "nodes").stdout)
            r = seen["row"] = rows.get("n1", {})
            ok = (r.get("CPU(cores)", "-") not in ("-", "0") and
                  millicores(r["CPU(cores)"]) > 50 and
                  mebibytes(r["MEMORY(bytes)"]) >= 40 and r.get("GPU UTIL") == "73%")
            return r if ok else None

        try:
            row = wait_for("top nodes to show the task's use", busy, timeout=45, interval=0.5)
        except AssertionError:
            self.fail("top nodes showed %s" % seen.get("row"))
        self.assertEqual((row["GPUS USED"], row["GPUS"], row["GPU%"]), ("1", "2", "50%"), row)
        self.assertEqual(row["CPU USED"], "2", row)
        self.assertEqual(row["MEMORY USED"], "256Mi", row)
        st, body = self.g.request("GET", API + "/nodestats", token="carol")
        self.assertEqual(st, 200, body)
        (item,) = body["items"]
        self.assertEqual((item["node"], item["tasks"], item["gpuMilli"]), ("n1", 1, 1000), item)
        self.assertGreater(item["cpuMilli"], 50)
        self.assertGreaterEqual(item["memoryBytes"], 40 << 20)
        self.g.cli("delete", "job", "hog", "-p", "proj-a")
        wait_for("hog gone", lambda: self.task(t) is None, timeout=30)
        rows = wait_for("use back to none", lambda: (lambda r: r if r["n1"]["GPU UTIL"] == "-"
                                                     else None)(
            parse_table(self.g.cli("top", "nodes").stdout)), timeout=40, interval=0.5)
        self.assertEqual((rows["n1"]["CPU(cores)"], rows["n1"]["MEMORY(bytes)"],
                          rows["n1"]["GPUS USED"]), ("0", "0", "0"), rows)


if __name__ == "__main__":
    main()
