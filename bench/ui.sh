#!/bin/sh
# The dashboard against 10,000 jobs, on a release gantryd serving the built
# dashboard on loopback:
#   ui_jobs_first_page_ms: the API answering the dashboard's first page of
#     the jobs list (GET /apis/gantry.dev/v1/jobs?limit=50), median of 21;
#   ui_load_ms: headless Chromium (Debian's, driven by playwright-core),
#     from navigating to the dashboard to the jobs list rendered, each run
#     in a fresh browser context (nothing cached), median of 7.
set -eu
BUILD=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d "$BUILD/bench-ui.XXXXXX")
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
token=bench-admin-token
printf '%s,bench,0,"gantry:admins"\n' "$token" >"$dir/tokens.csv"
"$BUILD/gantryd" --data-dir "$dir/data" --listen "127.0.0.1:$port" --token-file "$dir/tokens.csv" \
    --ui-dir "$BUILD/web" --log-level warn 2>"$dir/gantryd.log" &
pid=$!
cleanup() { kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
trap 'cleanup; trap - EXIT; exit 1' HUP INT TERM PIPE
url="http://127.0.0.1:$port"
until curl -fs "$url/healthz" >/dev/null; do sleep 0.1; done
/usr/bin/python3 - "$url" "$token" <<'PY'
import http.client, json, sys, threading
url, token = sys.argv[1], sys.argv[2]
host, port = url[len("http://"):].split(":")
H = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
API = "/apis/gantry.dev/v1"
def post(c, path, body):
    c.request("POST", API + path, body=json.dumps(body), headers=H)
    r = c.getresponse(); r.read()
    assert r.status == 201, (path, r.status)
c = http.client.HTTPConnection(host, int(port))
post(c, "/departments", {"apiVersion": "gantry.dev/v1", "kind": "Department", "metadata": {"name": "bench"}})
post(c, "/projects", {"apiVersion": "gantry.dev/v1", "kind": "Project", "metadata": {"name": "bench"},
                      "spec": {"department": "bench"}})
def worker(k):
    c = http.client.HTTPConnection(host, int(port))
    for i in range(k, 10000, 32):
        post(c, "/projects/bench/jobs", {"apiVersion": "gantry.dev/v1", "kind": "Job",
             "metadata": {"name": "job-%05d" % i, "project": "bench"},
             "spec": {"replicaSpecs": {"Worker": {"template": {"command": ["true"]}}}}})
ts = [threading.Thread(target=worker, args=(k,)) for k in range(32)]
[t.start() for t in ts]
[t.join() for t in ts]
PY
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
page_ms=$(for i in $(seq 21); do
    curl -fs -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $token" \
        "$url/apis/gantry.dev/v1/jobs?limit=50"
done | awk '{printf "%.2f\n", $1 * 1000}' | median)
echo "ui_jobs_first_page_ms=$page_ms jobs=10000 limit=50 runs=21 target_ms=50"
if command -v node >/dev/null && [ -x /usr/bin/chromium ] && [ -d web/node_modules/playwright-core ]; then
    load=$(node "$here/ui_load.mjs" "$url" "$token" 7)
    echo "ui_load_ms=$load jobs=10000 browser=chromium-headless runs=7 target_ms=500"
else
    echo "ui bench: node, /usr/bin/chromium or web/node_modules missing: no ui_load_ms" >&2
fi
