#!/usr/bin/env python3
"""The fault chaos test (fault_chaos.py: its cluster, job mix, injections
and checks) bounded for the suite: CHAOS_JOBS jobs, default 400 (250 under
a sanitizer build), about a minute on a 2-core host. Each kind of
injection is drawn once before the weighted draws, so a run this long
makes every kind (the printed counts say which it made). `make
fault-chaos` is the full 1,000-job run. CHAOS_SEED replays a run's
schedule; the seed is printed first. Needs root (namespaces, loop mounts);
exits 77 without.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import fault_chaos  # noqa: E402
from gantry_e2e import SANITIZED  # noqa: E402


class BoundedFaultChaos(fault_chaos.FaultChaos):
    JOBS = int(os.environ.get("CHAOS_JOBS", "250" if SANITIZED else "400"))
    TERMINAL_WAIT_S = 180  # within CTest's TIMEOUT, so what is left gets printed


if __name__ == "__main__":
    fault_chaos.main_if_able()
