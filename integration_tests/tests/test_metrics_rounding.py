"""Averages are rounded to 4 decimals half away from zero, as Databend rounds them, in the package
(`_rounded_average`) and in the reference (`metrics_reference.rounded_average`); Python's round()
(half to even) would give 1.1562 for 37 / 32 = 1.15625 where Databend reports 1.1563. No Spark:
the Jinja runs in one `dbt run-operation` each, which never opens a connection."""
from __future__ import annotations

import contextlib
import io
import json
import random

from spark_clustering_dev import metrics_reference as ref
from spark_clustering_dev.dbt import DbtError, run_dbt
from spark_clustering_dev.paths import WORK

# Own target dir: other processes may run dbt on the same project at the same time.
TARGET = ["--target-path", str(WORK / "pytest" / "dbt_target_metrics_rounding")]


def printed(macro: str, args: dict) -> object:
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            run_dbt(["run-operation", macro, "--args", json.dumps(args), *TARGET], schema="it_test_metrics_rounding")
    except DbtError:
        raise AssertionError(f"run-operation {macro} failed:\n" + out.getvalue()[-4000:]) from None
    lines = [line for line in out.getvalue().splitlines() if line.startswith(macro + ": ")]
    assert len(lines) == 1, out.getvalue()[-3000:]
    return json.loads(lines[0].split(": ", 1)[1])


def test_depth_of_exactly_half_a_unit_in_the_last_place_rounds_up():
    # 32 files: 27 alone (depth 1), a trio (0, 10), (1, 2), (5, 6) (depth 2 each: the big file
    # holds two points of depth 2), and a pair (20, 21), (21, 22) (depth 2 each):
    # sum of depths = 27 + 6 + 4 = 37, average 37 / 32 = 1.15625 exactly.
    files = [[[100 + 2 * i, 100 + 2 * i]] for i in range(27)]
    files += [[[0, 10]], [[1, 2]], [[5, 6]], [[20, 21]], [[21, 22]]]
    case = {"columns": ["c"], "files": files}
    [result] = printed("metrics_core_cases", {"cases": [case]})
    column = result["columns"]["c"]
    assert column["total_file_count"] == 32
    assert column["average_depth"] == 1.1563            # Databend: half away from zero
    assert round(37 / 32, 4) == 1.1562                  # what Python's round() gave before
    # overlaps: the trio's big file meets 2, each small one 1; the pair 1 each: 6 / 32 = 0.1875
    assert column["average_overlaps"] == 0.1875
    reference = ref.column_metrics(tuple(f[0]) for f in files)
    assert reference["average_depth"] == 1.1563 and reference["average_overlaps"] == 0.1875


def test_rounded_average_matches_the_reference():
    hand = {(37, 32): 1.1563, (1, 32): 0.0313, (3, 32): 0.0938, (4, 3): 1.3333, (2, 3): 0.6667,
            (0, 5): 0.0, (7, 0): 0.0, (-37, 32): -1.1563, (10, 4): 2.5}
    rng = random.Random(5)
    randoms = [(rng.randrange(0, 10 ** 6), rng.randrange(1, 10 ** 4)) for _ in range(400)]
    # every exact half at the 4th decimal below 64 files: k / 2^j
    halves = [(k, 2 ** j) for j in range(5, 7) for k in range(1, 200, 2)]
    cases = list(hand) + randoms + halves
    results = printed("rounding_cases", {"cases": [list(c) for c in cases]})
    for (total, count), got in zip(cases, results):
        assert got == ref.rounded_average(total, count), (total, count, got)
    for (total, count), expected in hand.items():
        assert ref.rounded_average(total, count) == expected, (total, count)
