"""The clustering metrics on synthetic per-file ranges, no Spark: hand-computed cases, the Jinja
core against the independent Python reference on hundreds of random cases, and 10,000 files.

The Jinja core (`spark_clustering._clustering_metrics`) is evaluated by ONE `dbt run-operation`
for all cases (`metrics_core_cases` in integration_tests/macros/metrics_helpers.sql); it runs no
SQL, so dbt never opens the Spark connection.
"""
from __future__ import annotations

import contextlib
import io
import json
import random

import pytest

from spark_clustering_dev import metrics_reference as ref
from spark_clustering_dev.dbt import DbtError, run_dbt
from spark_clustering_dev.paths import WORK

# Own target dir: other processes may run dbt on the same project at the same time.
TARGET = ["--target-path", str(WORK / "pytest" / "dbt_target_metrics_unit")]


def run_core(cases: list[dict], vars: dict | None = None) -> list[dict]:
    """Evaluate the Jinja metric core on every case in one dbt call."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            run_dbt(["run-operation", "metrics_core_cases", "--args", json.dumps({"cases": cases}), *TARGET],
                    schema="it_test_metrics_unit", vars=vars)
    except DbtError:
        # run-operation reports its errors on stdout only; the args are too long to repeat.
        raise AssertionError("run-operation metrics_core_cases failed:\n" + out.getvalue()[-4000:]) from None
    lines = [line for line in out.getvalue().splitlines() if line.startswith("metrics_core_cases: ")]
    assert len(lines) == 1, out.getvalue()[-3000:]
    results = json.loads(lines[0].split(": ", 1)[1])
    assert len(results) == len(cases)
    return results


def column(ranges):
    """A one-column case from a list of (lo, hi) / None."""
    return {"columns": ["c"], "files": [[list(r) if r is not None else None] for r in ranges]}


def reference(case: dict) -> dict:
    files = [[tuple(r) if r is not None else None for r in f] for f in case["files"]]
    return json.loads(json.dumps(ref.clustering_metrics(files, case["columns"])))


def metrics(average_overlaps, average_depth, p95, p99, histogram, total, constant=0, null_only=0, max_depth=None):
    # max_depth defaults to the largest histogram bucket, exact up to 16 (buckets are 1..16, then 32, 64, ...)
    return {"total_file_count": total, "constant_file_count": constant, "null_only_file_count": null_only,
            "average_overlaps": average_overlaps, "average_depth": average_depth, "p95_depth": p95,
            "p99_depth": p99, "max_depth": max_depth if max_depth is not None else max((int(k) for k in histogram), default=0),
            "depth_histogram": histogram}


# name -> (case, expected metrics of column "c"), every number worked out by hand.
HAND_COLUMN_CASES = {
    "disjoint": (column([(0, 1), (2, 3), (4, 5)]), metrics(0.0, 1.0, 1, 1, {"00001": 3}, 3)),
    # pointdepth 0:1 2:2 3:2 4:2 5:3 6:3 8:2 10:1 -> depths 3, 2, 3, 3; overlaps 3, 1, 2, 2
    "nested": (column([(0, 10), (2, 3), (4, 8), (5, 6)]),
               metrics(2.0, 2.75, 3, 3, {"00002": 1, "00003": 3}, 4)),
    # closed ranges: touching endpoints overlap; overlaps 1, 2, 1; pointdepth 2 at 5 and at 10
    "touching": (column([(0, 5), (5, 10), (10, 15)]), metrics(1.3333, 2.0, 2, 2, {"00002": 3}, 3)),
    # overlaps 2, 2, 2, 0; pointdepth at 3 is 3 -> depths 3, 3, 3, 1
    "constant files": (column([(3, 3), (3, 3), (1, 5), (7, 7)]),
                       metrics(1.5, 2.5, 3, 3, {"00001": 1, "00003": 3}, 4, constant=3)),
    "null-only files": (column([(1, 2), None, (2, 3), None]),
                        metrics(1.0, 2.0, 2, 2, {"00002": 2}, 2, null_only=2)),
    "same range": (column([(1, 4)] * 5), metrics(4.0, 5.0, 5, 5, {"00005": 5}, 5)),
    "all null": (column([None, None]), metrics(0.0, 0.0, 0, 0, {}, 0, null_only=2)),
    "no files": (column([]), metrics(0.0, 0.0, 0, 0, {}, 0)),
    # 17 identical files: depth 17 falls in the "00032" bucket; 16 would be its own bucket
    "bucket 32": (column([(0, 1)] * 17), metrics(16.0, 17.0, 17, 17, {"00032": 17}, 17, max_depth=17)),
    "bucket 16": (column([(0, 1)] * 16), metrics(15.0, 16.0, 16, 16, {"00016": 16}, 16)),
    # 33 identical + 1 apart: depth 33 -> "00064"; n=34: p95 rank ceil(32.3)=33, p99 rank 34
    "bucket 64": (column([(0, 1)] * 33 + [(5, 5)]),
                  metrics(31.0588, 32.0588, 33, 33, {"00001": 1, "00064": 33}, 34, constant=1, max_depth=33)),
    # nearest rank: 38 disjoint + 2 identical, n=40: p95 = 38th smallest = 1, p99 = 40th = 2
    "nearest rank": (column([(10 * i, 10 * i + 1) for i in range(38)] + [(1000, 1001)] * 2),
                     metrics(0.05, 1.05, 1, 2, {"00001": 38, "00002": 2}, 40)),
    # case-sensitive order (Spark's and Python's): 'A' < 'B' < 'a' < 'b', so these are disjoint
    "strings by case": (column([("A", "B"), ("a", "b")]), metrics(0.0, 1.0, 1, 1, {"00001": 2}, 2)),
    "dates as strings": (column([("2024-01-01", "2024-01-31"), ("2024-01-31", "2024-02-28"),
                                 ("2024-03-01", "2024-03-01")]),
                         metrics(0.6667, 1.6667, 2, 2, {"00001": 1, "00002": 2}, 3, constant=1)),
}

# name -> (case, expected box metric)
HAND_BOX_CASES = {
    # A overlaps D only; B overlaps A on `a` but not on `b`; C overlaps A on `b` but not on `a`;
    # D = [8, 22] x [5, 25] overlaps A, B and C; E is NULL-only on `a`: left out of the box metric.
    "box": ({"columns": ["a", "b"], "files": [
        [[0, 10], [0, 10]], [[5, 15], [20, 30]], [[20, 30], [0, 10]], [[8, 22], [5, 25]], [None, [0, 100]],
    ]}, {"total_file_count": 4, "null_only_file_count": 1, "average_overlaps": 1.5, "max_overlaps": 3,
         "exact": True}),
    "box corner touch": ({"columns": ["a", "b"], "files": [[[0, 10], [0, 10]], [[10, 20], [10, 20]]]},
                         {"total_file_count": 2, "null_only_file_count": 0, "average_overlaps": 1.0,
                          "max_overlaps": 1, "exact": True}),
    # three columns: overlapping on two of three is not an overlap
    "box 3 columns": ({"columns": ["a", "b", "c"], "files": [
        [[0, 5], [0, 5], [0, 5]], [[1, 6], [1, 6], [7, 9]], [[2, 3], [2, 3], [2, 3]],
    ]}, {"total_file_count": 3, "null_only_file_count": 0, "average_overlaps": 0.6667, "max_overlaps": 1,
         "exact": True}),
    "box one column": ({"columns": ["a"], "files": [[[0, 5]], [[5, 6]], [[7, 8]]]},
                       {"total_file_count": 3, "null_only_file_count": 0, "average_overlaps": 0.6667,
                        "max_overlaps": 1, "exact": True}),
}


def random_case(rng: random.Random) -> dict:
    columns = [f"c{k}" for k in range(rng.randint(1, 3))]
    kinds = [rng.choice(["int", "narrow int", "float", "string", "date"]) for _ in columns]
    file_count = rng.choice([0, 1, 2, 3, rng.randint(4, 20), rng.randint(20, 60)])

    def value(kind):
        if kind == "int":
            return rng.randint(-1000, 1000)
        if kind == "narrow int":  # many ties and shared endpoints
            return rng.randint(0, 4)
        if kind == "float":
            return round(rng.uniform(-1, 1), rng.choice([1, 6]))
        if kind == "string":
            return "".join(rng.choice("aAbB_z") for _ in range(rng.randint(0, 3)))
        return f"2024-{rng.randint(1, 3):02d}-{rng.randint(1, 28):02d}"

    files = []
    for _ in range(file_count):
        ranges = []
        for kind in kinds:
            if rng.random() < 0.08:
                ranges.append(None)
            elif rng.random() < 0.15:
                v = value(kind)
                ranges.append([v, v])
            else:
                ranges.append(sorted([value(kind), value(kind)]))
        files.append(ranges)
    return {"columns": columns, "files": files}


RANDOM_CASES = [random_case(random.Random(seed)) for seed in range(400)]


@pytest.fixture(scope="module")
def core_results():
    """Hand cases + 400 random cases through the Jinja core in one dbt call."""
    cases = ([c for c, _ in HAND_COLUMN_CASES.values()] + [c for c, _ in HAND_BOX_CASES.values()]
             + RANDOM_CASES)
    results = run_core(cases)
    for r in results:
        r.pop("seconds")
    names = list(HAND_COLUMN_CASES) + list(HAND_BOX_CASES)
    return {"hand": dict(zip(names, results)), "random": results[len(names):]}


@pytest.mark.parametrize("name", list(HAND_COLUMN_CASES))
def test_hand_computed_column_metrics(core_results, name):
    case, expected = HAND_COLUMN_CASES[name]
    assert reference(case)["columns"]["c"] == expected, "the reference itself disagrees with the hand values"
    assert core_results["hand"][name]["columns"]["c"] == expected
    assert core_results["hand"][name]["total_files"] == len(case["files"])


@pytest.mark.parametrize("name", list(HAND_BOX_CASES))
def test_hand_computed_box_metric(core_results, name):
    case, expected = HAND_BOX_CASES[name]
    assert reference(case)["box"] == expected, "the reference itself disagrees with the hand values"
    assert core_results["hand"][name]["box"] == expected


def test_jinja_core_matches_reference_on_random_cases(core_results):
    mismatches = []
    for case, got in zip(RANDOM_CASES, core_results["random"]):
        expected = reference(case)
        if got != expected:
            mismatches.append((case, expected, got))
    assert not mismatches, f"{len(mismatches)} of {len(RANDOM_CASES)} differ; first: {mismatches[0]}"
    # the random cases do exercise what they should
    assert sum(1 for c in RANDOM_CASES if any(r is None for f in c["files"] for r in f)) > 50
    assert sum(1 for c in RANDOM_CASES if len(c["columns"]) == 3 and len(c["files"]) > 20) > 20
    assert max(max(m["depth_histogram"] or {"0": 0}) for r in core_results["random"]
               for m in r["columns"].values()) >= "00032"


def test_box_metric_samples_above_the_pair_budget():
    # 20 identical boxes: 190 overlapping pairs > budget 10 -> estimated from a sample; any sampled
    # file overlaps all 19 others, so the estimate is exact here, but it must say it sampled.
    case = {"columns": ["a", "b"], "files": [[[0, 1], [0, 1]]] * 20}
    [result] = run_core([case], vars={"spark_clustering_box_max_pairs": 10})
    assert result["box"]["exact"] is False
    assert result["box"]["sampled_file_count"] == 1
    assert (result["box"]["average_overlaps"], result["box"]["max_overlaps"]) == (19.0, 19)
    assert result["columns"] == reference(case)["columns"]


def test_ten_thousand_files_compute_in_seconds():
    rng = random.Random(10_000)
    # 100 x 100 grid with jitter (a clustered table) and every file spanning everything (insertion
    # order: the box metric's worst case, answered from a sample).
    grid = {"columns": ["a", "b"], "files": [
        [[i * 100 + rng.randint(0, 5), i * 100 + 99 + rng.randint(0, 5)],
         [j * 1000 + rng.randint(0, 50), j * 1000 + 999]]
        for i in range(100) for j in range(100)]}
    spanning = {"columns": ["a", "b"], "files": [
        [[rng.randint(0, 50), rng.randint(999_950, 1_000_000)] for _ in range(2)] for _ in range(10_000)]}
    grid_result, spanning_result = run_core([grid, spanning])
    print(f"\n10,000 files, Jinja metric core: grid {grid_result['seconds']:.1f}s, "
          f"all-spanning {spanning_result['seconds']:.1f}s")
    assert grid_result["seconds"] < 60 and spanning_result["seconds"] < 60
    assert grid_result["total_files"] == spanning_result["total_files"] == 10_000
    # the grid: each a-range is shared by the 100 files of its column of the grid (+ jitter)
    assert grid_result["columns"]["b"]["average_depth"] == 100.0
    assert 100 <= grid_result["columns"]["a"]["average_depth"] < 200
    assert grid_result["box"]["exact"] is True and grid_result["box"]["max_overlaps"] <= 8
    assert spanning_result["columns"]["a"]["average_depth"] == 10_000.0
    assert spanning_result["box"] == {"total_file_count": 10_000, "null_only_file_count": 0,
                                      "average_overlaps": 9999.0, "max_overlaps": 9999, "exact": False,
                                      "sampled_file_count": 100}


def test_reference_helpers():
    assert [ref.depth_bucket(d) for d in (1, 16, 17, 32, 33, 64, 65, 1000)] == [1, 16, 32, 32, 64, 64, 128, 1024]
    assert ref.nearest_rank([1] * 19 + [2], 95) == 1 and ref.nearest_rank([1] * 19 + [2], 99) == 2
    assert ref.ideal_files(2501, 50_000, 16) == 1 and ref.ideal_files(0, 10, 2) == 0
    assert ref.ideal_files(5, 10, 2) == 1 and ref.ideal_files(6, 10, 2) == 2
