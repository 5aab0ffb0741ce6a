"""Reading what the data-skipping scan says about itself in a plan's text (EXPLAIN)."""
from __future__ import annotations

import re

SUMMARY = re.compile(r"DataSkipping: kept (\d+) of (\d+) files \(stats: sidecar (\d+), footers (\d+), unknown (\d+)")


def skipping_summary(plan_text: str) -> dict[str, int]:
    """{kept, total, sidecar, footers, unknown} of the one skipping scan in `plan_text`."""
    found = SUMMARY.findall(plan_text)
    assert len(found) >= 1, f"no 'DataSkipping: kept ...' in the plan:\n{plan_text}"
    assert len(set(found)) == 1, f"several different skipping scans in the plan: {found}"
    kept, total, sidecar, footers, unknown = (int(x) for x in found[0])
    return {"kept": kept, "total": total, "sidecar": sidecar, "footers": footers, "unknown": unknown}
