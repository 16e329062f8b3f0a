#!/bin/sh
# Volume benchmark: one gantryd with a storage class in a temporary
# directory (no gantlet: a Volume's disk image is made by gantryd at
# create). Prints key=value lines:
#   volume_create_ms_p50  (and _p99) POST of a 64Mi Volume until its 201,
#                         which comes once the ext4 image is made
#                         (mkfs.ext4, off gantryd's loop) and the Volume
#                         stored, over 20 creates one at a time
#   volume_create_ms      the mean of the same
# Needs mkfs.ext4 (e2fsprogs); prints volume_bench=skipped otherwise.
# Takes a few seconds.
set -eu
exec "$(dirname "$0")/python" "$@" <<'PYEOF'
import os
import shutil
import tempfile
import time

import gantry_e2e as E

API = E.API
P = API + "/projects/bench"
N = 20


def main():
    if not shutil.which("mkfs.ext4", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin"):
        print("volume_bench=skipped (needs mkfs.ext4)")
        return
    tmp = tempfile.mkdtemp(prefix="gantry-volume-bench-")
    g = None
    try:
        g = E.Gantryd(("--log-level", "warn", "--storage-class", "bench=" + tmp)).start()
        for path, o in ((API + "/departments", E.obj("Department", "bench", spec={
                "quota": {"storage": "64Gi"}})),
                        (API + "/projects", E.obj("Project", "bench", spec={
                            "department": "bench",
                            "members": [{"user": "alice", "role": "admin"}]}))):
            st, body = g.request("POST", path, o)
            assert st == 201, (st, body)
        lat = []
        for i in range(N):
            v = E.obj("Volume", "v%02d" % i, "bench", spec={"capacity": {"storage": "64Mi"}})
            t0 = time.monotonic()
            st, body = g.request("POST", P + "/volumes", v, token="alice")
            lat.append((time.monotonic() - t0) * 1000.0)
            assert st == 201, (st, body)
        print("volume_create_ms=%.0f" % (sum(lat) / len(lat)))
        print("volume_create_ms_p50=%.0f" % E.pct(lat, 50))
        print("volume_create_ms_p99=%.0f" % E.pct(lat, 99))
    finally:
        if g:
            g.cleanup()
        shutil.rmtree(tmp, True)


main()
PYEOF
