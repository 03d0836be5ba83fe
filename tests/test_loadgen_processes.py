"""The load generator's processes: forked from one forkserver that lives as long as the harness,
none outliving its run, all of them ending when the harness is SIGKILLed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from perfpages import Load, Request
from perfpages.loadgen.generator import run
from test_loadgen import Server  # beside this file


def _tree() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def _helper(pid: int) -> bool:
    """The forkserver or its resource tracker (a run's processes, forked from the forkserver,
    share its command line, but never outlive their run: see the test)."""
    command = " ".join(psutil.Process(pid).cmdline())
    return any(f"multiprocessing.{m} import main" in command
               for m in ("forkserver", "resource_tracker"))


def test_a_runs_processes_end_with_it_and_the_forkserver_is_shared() -> None:
    during: list[set[int]] = []
    before = _tree()
    with Server() as server:
        load = Load([Request(f"{server.base}/ok")], duration_s=0.3, callers=2, processes=2)
        first = run(load, on_start=lambda _: during.append(_tree() - before))
        second = run(load, on_start=lambda _: during.append(_tree() - before))
    assert first.total().codes["200"] > 0 and second.total().codes["200"] > 0
    after = _tree() - before
    # What remains is multiprocessing's forkserver and its resource tracker (none when an earlier
    # test started them), with no child: both runs' two processes are gone.
    assert len(after) <= 2 and all(_helper(pid) for pid in after)
    assert all(psutil.Process(pid).children() == [] for pid in after)
    workers = [pids - after for pids in during]
    assert [len(w) for w in workers] == [2, 2] and not workers[0] & workers[1]
    assert not any(psutil.pid_exists(pid) for pids in workers for pid in pids)


HARNESS = """
import json, sys
import psutil
from perfpages import Load, Request
from perfpages.loadgen.generator import run

def started(_):
    tree = psutil.Process().children(recursive=True)
    print(json.dumps([p.pid for p in tree]), flush=True)

run(Load([Request(sys.argv[1])], duration_s=60, callers=2, processes=2), on_start=started)
"""


def test_a_harness_killed_mid_run_leaves_no_process(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with Server() as server:
        harness = subprocess.Popen([sys.executable, "-c", HARNESS, f"{server.base}/ok"],
                                   stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
        assert harness.stdout is not None
        # The forkserver, its resource tracker and the run's two processes.
        pids = json.loads(harness.stdout.readline())
        assert len(pids) == 4
        for _ in range(200):  # killed while loading the server
            if server.counts["ok"]:
                break
            time.sleep(0.05)
        harness.send_signal(signal.SIGKILL)
        harness.wait()
        procs = [psutil.Process(pid) for pid in pids if psutil.pid_exists(pid)]
        _, alive = psutil.wait_procs(procs, timeout=20)
        assert alive == [] and server.counts["ok"] > 0
