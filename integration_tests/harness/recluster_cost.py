"""What one recluster() costs, from dbt's own events: the statements it runs (dbt's `SQLQuery`
events) and its seconds, from the debug line `_recluster_run` logs first to the line it logs last
(its decision). Pass an instance as a callback of a dbt invocation (run_dbt(..., callbacks=[...]))."""
from __future__ import annotations

import time

START = "spark_clustering: recluster: start"


class ReclusterCost:
    def __init__(self) -> None:
        self.runs: list[dict] = []  # each: statements (SQL), seconds, decision line

    def __call__(self, event) -> None:
        now = time.monotonic()
        name, msg = event.info.name, event.info.msg
        if msg == START:
            self.runs.append({"statements": [], "started": now, "seconds": None, "line": None})
            return
        if not self.runs or self.runs[-1]["seconds"] is not None:
            return
        run = self.runs[-1]
        if name == "SQLQuery":
            run["statements"].append(event.data.sql)
        elif name == "SQLQueryStatus":
            run.setdefault("elapsed", []).append(event.data.elapsed)
        elif name == "JinjaLogInfo" and msg.startswith("spark_clustering: recluster ") and (
                ": skipped (" in msg or "; average depth" in msg):
            run["seconds"], run["line"] = now - run["started"], msg

    @property
    def last(self) -> dict:
        assert self.runs and self.runs[-1]["seconds"] is not None, self.runs
        return self.runs[-1]


def statement_texts(run: dict) -> list[str]:
    """A run's statements (ReclusterCost.last) lower-cased, each on one line, without dbt's leading
    /* ... */ comment: what a test matches a statement's start against."""
    return [" ".join(s.lower().split()).split("*/", 1)[-1].strip() for s in run["statements"]]
