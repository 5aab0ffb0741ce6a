"""`clustered_table` on Delta Lake tables: the cases of harness/format_table_cases.py and Delta's own,
on a session whose `spark_catalog` serves delta (conftest starts it for this module's TABLE_FORMAT)."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.format_table_cases import ROWS, FormatTableCases, build
from spark_clustering_dev.dbt import DbtError

TABLE_FORMAT = "delta"


class TestDeltaTables(FormatTableCases):
    """The cases of every format, then Delta's own."""

    def test_file_stats_takes_the_delta_log_only_where_its_bounds_are_exact(self, spark, sources):
        """A Delta table the package did not make (Delta's defaults: strings cut to 32 characters,
        timestamps kept in milliseconds), then a DELETE that leaves deletion vectors: file_stats takes
        a column from the log only where every file's bound there is exact, and reads the rows
        otherwise; both ways equal to each file's rows, an all-null file's null bounds included."""
        from spark_clustering_dev.dbt import run_operation_json
        from spark_clustering_dev.paths import local

        table = f"{sources}.delta_defaults"
        spark.sql(f"drop table if exists {table}")
        spark.sql(f"""create table {table} using delta tblproperties ('delta.enableDeletionVectors' = 'true') as
            select /*+ REPARTITION_BY_RANGE(4, id) */ id, a, s, timestamp_micros(id * 1001 + 7) as ts,
                   case when id >= {ROWS // 2} then a end as late
            from {sources}.uniform""")

        def file_stats(columns: list[str]) -> tuple[str, dict]:
            sql = run_operation_json("metrics_file_stats_sql", {"schema": sources, "tables": ["delta_defaults"],
                                                                "columns": columns}, schema=sources)["delta_defaults"]
            return sql, {Path(local(r["file_path"])).name: r.asDict() for r in spark.sql(sql).collect()}

        def check(columns: list[str], from_log: bool):
            sql, got = file_stats(columns)
            assert ("table_data_files(" in sql) == from_log, (columns, sql)
            aggs = ", ".join(f"min(`{c}`) as `{c}__min`, max(`{c}`) as `{c}__max`, count(*) - count(`{c}`) as `{c}__null_count`"
                             for c in columns)
            want = {Path(local(r["f"])).name: r.asDict() for r in spark.sql(
                f"select _metadata.file_path as f, count(*) as row_count, {aggs} from {table} group by 1").collect()}
            assert set(got) == set(want) and len(want) == 4, (got.keys(), want.keys())
            for file, w in want.items():
                assert all(got[file][k] == v for k, v in w.items() if k != "f"), (columns, file, got[file], w)
            if "ts" not in columns:
                # what recluster's measure reads: the log's bounds and whether they are exact in one
                # statement, the rows when they are not (_file_stats_rows); alike as text (not for
                # timestamps, which agate and Python print differently)
                measured = run_operation_json("metrics_file_stats_rows", {"schema": sources, "tables": ["delta_defaults"],
                                                                          "columns": columns}, schema=sources)["delta_defaults"]
                assert {Path(local(r[0])).name: r[1:] for r in measured} == {
                    file: [str(w[k]) for k in w if k != "f"] for file, w in want.items()}, (columns, measured)

        check(["a", "late"], from_log=True)   # ints, a file whose `late` is all null: exact in the log
        check(["a", "s"], from_log=False)     # s has 45 characters, Delta kept 32
        check(["ts"], from_log=False)         # microseconds, Delta kept milliseconds
        spark.sql(f"delete from {table} where a < 1000")
        assert spark.sql(f"select count(*) from {table}").first()[0] < ROWS
        check(["a", "late"], from_log=False)  # deletion vectors: the log counts deleted rows


    @pytest.mark.parametrize("case, wanted", [
        ({"cluster_by": ["a", "flag"]},
         ["config 'cluster_by'", "no min/max statistics for the boolean column flag", "take flag out of cluster_by"]),
        ({"cluster_by": ["a", "s"], "tblproperties": {"delta.dataSkippingStatsColumns": "id,a"}},
         ["config 'tblproperties'", "leaves out the clustering column s", "add every column of cluster_by"]),
        ({"cluster_by": ["a", "s"], "tblproperties": {"delta.dataSkippingNumIndexedCols": "2"}},
         ["config 'tblproperties'", "the first 2 columns only", "clustering column s is column 4"]),
    ], ids=["boolean", "stats-columns", "indexed-columns"])
    def test_a_clustering_column_delta_keeps_no_statistics_for_stops_the_build(self, spark, dbt, sources, case, wanted):
        """Delta would keep no min/max for the column (a boolean; a model's statistics properties that
        leave it out): the build stops before it writes, naming model, key, column and fix."""
        table = f"{sources}.unbounded"
        spark.sql(f"drop table if exists {table}")
        with pytest.raises(DbtError) as failure:
            build(dbt, "delta", f"(select id, a, b, s, a % 2 = 0 as flag from {sources}.uniform) s", "unbounded",
                  num_files=2, **case)
        text = str(failure.value)
        assert "model 'cluster_case'" in text and all(w in text for w in wanted), text[-2000:]
        assert not spark.catalog.tableExists(table)
