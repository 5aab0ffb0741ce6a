"""CPU per test, the processes a test starts included (its child processes' JVMs, servers, a
killed child's orphans): where a CPU-bound test run spends its cores, which wall times under
pytest-xdist do not show (two workers share two cores, and a killed child's CPU is nobody's).

    SPARK_CLUSTERING_TEST_CPU=1 ./scripts/test      (integration_tests/tests/conftest.py loads it)

Each test process samples, once a second, the CPU time of every process descended from it (one read
of /proc/<pid>/stat each) and adds what each used since the last sample to the test running then:
module-scoped set-up counts to the module's first test. A process that starts and ends within one
second is missed. At the end each process writes build/test-cpu-<worker>.tsv (CPU seconds, wall
seconds, test id), and scripts/test prints the 25 tests that took the most CPU."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

ENV = "SPARK_CLUSTERING_TEST_CPU"
_TICK = os.sysconf("SC_CLK_TCK")


def _processes() -> dict[tuple[int, int], tuple[int, int]]:
    """(pid, start time) -> (parent pid, user + system ticks) of every process. A pid alone does not
    name a process for long: the kernel hands out pids (and every thread's id) from one space of
    32,768 here, so a CI run goes round it, and a new process of another test worker can get the pid
    of one of this worker's dead ones."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        found[(int(name), int(fields[19]))] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    return found


class TestCpu:
    """Samples the descendants of this process in a thread; `test` names what their CPU counts to."""

    def __init__(self, out: Path):
        self.out, self.test = out, "(session set-up)"
        self.cpu: dict[str, float] = {}
        self.wall: dict[str, float] = {}
        self._last: dict[tuple[int, int], int] = {}
        # (pid, start time) of this process and its descendants: a process once seen stays ours after
        # its parent dies
        own = os.getpid()
        self._known: set[tuple[int, int]] = {key for key in _processes() if key[0] == own}
        # the thread's samples and the test hooks' interleave: one at a time, or a process's CPU since
        # its last sample counts twice
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        with self._lock:
            processes = _processes()
            started = {pid: start for pid, start in processes}
            for key, (parent, _) in sorted(processes.items(), key=lambda kv: kv[0][1]):
                if (parent, started.get(parent)) in self._known:
                    self._known.add(key)
            # a dead process's key never names another: forget it
            self._known &= processes.keys()
            used = 0
            for key in self._known:
                ticks = processes[key][1]
                used += ticks - self._last.get(key, 0)
                self._last[key] = ticks
            self._last = {key: ticks for key, ticks in self._last.items() if key in self._known}
            self.cpu[self.test] = self.cpu.get(self.test, 0.0) + used / _TICK

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self._sample()

    def start(self, test: str) -> None:
        self._sample()  # what ran before counts to the test before
        self.test = test
        self.wall[test] = time.monotonic()

    def finish(self, test: str) -> None:
        self._sample()
        self.wall[test] = time.monotonic() - self.wall[test]

    def write(self) -> None:
        self._stop.set()
        self._sample()
        self.out.parent.mkdir(parents=True, exist_ok=True)
        rows = sorted(self.cpu.items(), key=lambda kv: -kv[1])
        self.out.write_text("".join(f"{cpu:.1f}\t{self.wall.get(test, 0.0):.1f}\t{test}\n" for test, cpu in rows))
