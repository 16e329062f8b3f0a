"""What the dashboard's browser tests share: finding node, Chromium and
web/node_modules, running one Playwright flow (web/tests/*.mjs) with its
settings in a JSON file, and stopping the daemons it ran against.

The flow gets env (a dict) plus "chromium" and "shots" (the screenshots'
folder: GANTRY_UI_SHOTS, else BUILD/ui-shots) as its one argument's file."""
import json
import os
import shutil
import subprocess
import sys

from gantry_e2e import BUILD, SOURCE

CHROMIUM = os.environ.get("GANTRY_CHROMIUM", "/usr/bin/chromium")
WEB = os.path.join(SOURCE, "web")


def tools(*commands):
    """node's path, or an exit status: 77 (skip) where node, Chromium or one
    of commands is absent, 1 where web/node_modules is missing."""
    node = shutil.which("node")
    missing = [c for c in commands if not shutil.which(c)]
    if not node or not os.access(CHROMIUM, os.X_OK) or missing:
        print("skip: needs node, %s%s" % (CHROMIUM, "".join(" and " + c for c in commands)))
        return 77
    if not os.path.isdir(os.path.join(WEB, "node_modules", "playwright-core")):
        print("web/node_modules is missing: run scripts/install-deps", file=sys.stderr)
        return 1
    return node


def run(node, script, tmp, env, timeout, daemons):
    """Run web/tests/SCRIPT with env; on failure print each daemon's log
    (daemons: (name, object with .logs())). Returns 0 or 1."""
    shots = os.path.abspath(os.environ.get("GANTRY_UI_SHOTS") or os.path.join(BUILD, "ui-shots"))
    os.makedirs(shots, exist_ok=True)
    env_file = os.path.join(tmp, "env.json")
    with open(env_file, "w") as f:
        json.dump(dict(env, chromium=CHROMIUM, shots=shots), f)
    p = subprocess.run([node, os.path.join(WEB, "tests", script), env_file], cwd=WEB,
                       timeout=timeout)
    if p.returncode != 0:
        for name, d in daemons:
            print("--- %s log ---\n%s" % (name, d.logs()), file=sys.stderr)
    return 1 if p.returncode else 0


def cleanup(procs, tmp):
    """Stop procs, last started first (each one's failure printed, the rest
    still stopped), and remove tmp."""
    for pr in reversed(procs):
        try:
            pr.cleanup()
        except Exception as e:  # noqa: BLE001 -- keep cleaning up the others
            print("cleanup: %s" % e, file=sys.stderr)
    shutil.rmtree(tmp, ignore_errors=True)
