"""Reading what the data-skipping scan says about itself in a plan's text (EXPLAIN)."""
from __future__ import annotations

import re

SUMMARY = re.compile(r"DataSkipping: kept (\d+) of (\d+) files \(stats: sidecar (\d+), footers (\d+), unknown (\d+)")


def skipping_summaries(plan_text: str) -> list[dict[str, int]]:
    """{kept, total, sidecar, footers, unknown} of every skipping scan in `plan_text`, in plan order."""
    keys = ("kept", "total", "sidecar", "footers", "unknown")
    return [dict(zip(keys, (int(x) for x in found))) for found in SUMMARY.findall(plan_text)]


def skipping_summary(plan_text: str) -> dict[str, int]:
    """The summary of the one skipping scan in `plan_text`."""
    found = skipping_summaries(plan_text)
    assert len(found) >= 1, f"no 'DataSkipping: kept ...' in the plan:\n{plan_text}"
    assert all(f == found[0] for f in found), f"several different skipping scans in the plan: {found}"
    return found[0]
