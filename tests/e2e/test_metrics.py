"""Metrics end to end: a real Prometheus (Debian's) scrapes gantryd and a
gantlet with fake GPUs, configured with the scrape block docs/metrics.md
documents; PromQL then returns the GPU utilisation the test wrote into a
fake GPU's counters file for a running job, with the holder's labels, and
two tasks sharing one GPU (500 milli each) each get their own
process-memory series. Both endpoints are promtool clean.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import gantry_e2e as E

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")


def documented_config(gantryd, gantlet):
    """The scrape configuration of docs/metrics.md, for these addresses,
    scraping every second."""
    with open(os.path.join(E.SOURCE, "docs", "metrics.md")) as f:
        doc = f.read()
    block = re.search(r"<!-- scrape-config -->\n```yaml\n(.*?)```\n", doc, re.S).group(1)
    block = block.replace("GANTRYD_ADDR", gantryd).replace("GANTLET_ADDR", gantlet)
    return block.replace("scrape_interval: 5s", "scrape_interval: 1s")


class Prometheus:
    """Debian's prometheus on a free loopback port with its own data directory."""

    def __init__(self, config):
        self.tmp = tempfile.mkdtemp(prefix="gantry-prom-")
        self.port = E.free_port()
        conf = os.path.join(self.tmp, "prometheus.yml")
        with open(conf, "w") as f:
            f.write(config)
        self.log = open(os.path.join(self.tmp, "prometheus.log"), "wb")
        self.proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + conf,
             "--storage.tsdb.path=" + os.path.join(self.tmp, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port],
            stdout=self.log, stderr=self.log)

    def get(self, path):
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.port, path), timeout=5) as r:
            return json.loads(r.read())

    def query(self, promql):
        """The instant vector of promql: [(labels, value)]."""
        try:
            body = self.get("/api/v1/query?query=" + urllib.parse.quote(promql))
        except OSError:
            return []
        return [(r["metric"], float(r["value"][1])) for r in body["data"]["result"]]

    def cleanup(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
        return r.read().decode()


def promtool_check(text):
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


class MetricsTest(E.AgentTest):
    def setUp(self):
        if not PROMETHEUS or not PROMTOOL:
            self.skipTest("prometheus and promtool are not installed (scripts/install-deps)")
        super().setUp()
        self.agent = self.gantlet_with_gpu_counters()

    def set_gpu(self, index, text):
        path = os.path.join(self.counters, str(index))
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.rename(path + ".tmp", path)

    def submit_share(self, name, milli):
        tmpl = {"command": ["sleep", "600"], "terminationGracePeriodSeconds": 0,
                "resources": {"limits": {"gantry.dev/gpu-milli": milli, "cpu": "100m",
                                         "memory": "64Mi"}}}
        st, body = self.g.request("POST", self.PROJECT + "/jobs", E.obj(
            "Job", name, "proj-a",
            spec={"replicaSpecs": {"Worker": {"replicas": 1, "template": tmpl}}}), token="alice")
        self.assertEqual(st, 201, body)
        return name + "-worker-0"

    def test_prometheus_sees_holders_and_shared_gpu_processes(self):
        whole = self.submit("train", ["sleep", "600"], gpus=1, cpu="100m", grace_s=0)
        t = self.wait_phase(whole, "Running")
        gpu = t["spec"]["gpus"][0]["index"]
        pid_whole = self.wait_host_pid(whole)
        other = 1 - gpu
        a, b = self.submit_share("share-a", 500), self.submit_share("share-b", 500)
        ta, tb = self.wait_phase(a, "Running"), self.wait_phase(b, "Running")
        self.assertEqual(ta["spec"]["gpus"][0]["index"], other)
        self.assertEqual(tb["spec"]["gpus"][0]["index"], other)
        pa, pb = self.wait_host_pid(a), self.wait_host_pid(b)
        # the whole GPU at 73 %, the shared one with both tasks' processes
        self.set_gpu(gpu, "util 73\nfb_used_mib 4096\nprocess %d 4096\n" % pid_whole)
        self.set_gpu(other, "util 20\nprocess %d 1000\nprocess %d 3000\nprocess 1 5\n"
                     % (pa, pb))

        prom = Prometheus(documented_config("127.0.0.1:%d" % self.g.port,
                                            "127.0.0.1:%d" % self.agent.port))
        self.addCleanup(prom.cleanup)
        # the first scrape comes some seconds after start (PLATFORM-NOTES)
        got = E.wait_for("PromQL for the job's GPU utilisation", lambda: prom.query(
            'DCGM_FI_DEV_GPU_UTIL{project="proj-a", job="train"}'), timeout=60, interval=0.5)
        self.assertEqual(len(got), 1, got)
        labels, value = got[0]
        self.assertEqual(value, 73)
        self.assertEqual(labels["task"], whole)
        self.assertEqual(labels["department"], "dept-a")
        self.assertEqual(labels["gpu"], str(gpu))
        self.assertEqual(labels["UUID"], t["spec"]["gpus"][0]["uuid"])
        self.assertEqual(labels["modelName"], "A100-80GB")  # dcgm-exporter's name, relabelled
        self.assertNotIn("model_name", labels)
        self.assertEqual(labels["Hostname"], "n1")

        # a changed reading shows in the next scrapes
        self.set_gpu(gpu, "util 12\nprocess %d 4096\n" % pid_whole)
        E.wait_for("the new utilisation", lambda: [v for _, v in prom.query(
            'DCGM_FI_DEV_GPU_UTIL{job="train"}')] == [12], timeout=20, interval=0.5)

        # the shared GPU: a series per holder, and each task its own process memory
        util = prom.query('DCGM_FI_DEV_GPU_UTIL{gpu="%d", project="proj-a"}' % other)
        self.assertEqual(sorted(m["task"] for m, _ in util), sorted([a, b]))
        self.assertTrue(all(m["gpu_milli"] == "500" and v == 20 for m, v in util), util)
        mem = E.wait_for("process memory of both sharing tasks", lambda: (lambda r: r if len(
            r) == 2 else None)(prom.query(
                'gantry_gpu_process_memory_bytes{gpu="%d", project="proj-a"}' % other)),
            timeout=20, interval=0.5)
        by_task = {m["task"]: (m["pid"], v) for m, v in mem}
        self.assertEqual(by_task, {a: (str(pa), 1000 * 2 ** 20), b: (str(pb), 3000 * 2 ** 20)})
        # a process of no task is there too, without holder labels
        stray = prom.query('gantry_gpu_process_memory_bytes{pid="1"}')
        self.assertEqual(len(stray), 1, stray)
        self.assertNotIn("task", stray[0][0])

        # cAdvisor's series for the tasks' cgroups
        cpu = prom.query('container_cpu_usage_seconds_total{task="%s"}' % a)
        self.assertEqual(len(cpu), 1, cpu)
        ws = prom.query('container_memory_working_set_bytes{job="train"}')
        self.assertTrue(ws and ws[0][1] > 0, ws)
        oom = prom.query('container_oom_events_total{task="%s"}' % b)
        self.assertEqual([v for _, v in oom], [0])

        # gantryd's state series, scraped by the same Prometheus
        running = E.wait_for("gantryd's job phase series", lambda: prom.query(
            'gantry_job_status_phase{job="train", phase="Running"}'), timeout=20, interval=0.5)
        self.assertEqual(running[0][1], 1)
        self.assertEqual(running[0][0]["department"], "dept-a")
        used = prom.query('gantry_department_quota_used{department="dept-a", '
                          'resource="nvidia.com/gpu"}')
        self.assertEqual([v for _, v in used], [2])
        lat = prom.query('gantry_scheduling_latency_seconds_count')
        self.assertTrue(lat and lat[0][1] >= 3, lat)

        # both endpoints lint clean
        for port in (self.g.port, self.agent.port):
            rc, out = promtool_check(scrape(port))
            self.assertEqual((rc, out), (0, ""))

    def test_pending_by_department_and_reason(self):
        # more GPUs than the node has: it waits, with the reason its status gives
        # (its Queued condition's message starts with the wait's code)
        st, body = self.g.request("POST", self.PROJECT + "/jobs", E.obj(
            "Job", "huge", "proj-a", spec={"replicaSpecs": {"Worker": {"replicas": 1, "template": {
                "command": ["true"],
                "resources": {"limits": {"nvidia.com/gpu": 3, "cpu": "1",
                                         "memory": "64Mi"}}}}}}), token="alice")
        self.assertEqual(st, 201, body)

        def queued_reason():
            st, job = self.g.request("GET", self.PROJECT + "/jobs/huge")
            for c in job.get("status", {}).get("conditions", []):
                if c["type"] == "Queued" and c["status"] == "True" and ":" in c.get(
                        "message", ""):
                    return c["message"].split(":")[0]  # "CODE: why", the scheduler's wait
            return None

        def pending():
            m = re.search(r'^gantry_job_pending\{project="proj-a",job="huge",'
                          r'department="dept-a",reason="(\w+)"\} 1$', scrape(self.g.port), re.M)
            return m.group(1) if m and m.group(1) != "Pending" else None
        reason = E.wait_for("the queued job's series", pending)
        self.assertEqual(reason, E.wait_for("the job's Queued reason", queued_reason))
        rc, out = promtool_check(scrape(self.g.port))
        self.assertEqual((rc, out), (0, ""))


if __name__ == "__main__":
    E.main()
