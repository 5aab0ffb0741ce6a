"""`clustered_table` on Iceberg tables: the cases of harness/format_table_cases.py, on a session whose
`spark_catalog` serves iceberg (conftest starts it for this module's TABLE_FORMAT), and what only
Iceberg's reader asks of a rewrite."""
import json

from harness.format_table_cases import ROWS, FormatTableCases, _grown_table, live_files
from spark_clustering_dev.dbt import dbt_output
from spark_clustering_dev.store_reads import StatementReads

TABLE_FORMAT = "iceberg"


class TestIcebergTables(FormatTableCases):
    """The cases of every format, and Iceberg's own."""

    def test_a_recluster_reads_small_files_once(self, spark, dbt, sources, tmp_path):
        """Iceberg's reader fetches a data file of at most 1 MiB whole, whatever columns a scan asks
        for (docs/table_formats.md), so a rewrite's sampling pass over the clustering columns read
        its small files whole, and its write read them again: 2x. A selection with such files is read
        into Spark's cache by its first pass, and the write reads the cache: the rewrite reads the
        files once. Measured by Hadoop's byte counters per statement of the rewrite (they see the
        whole-file reads of small files), against the bytes of the files it replaced; the rest is
        metadata (manifests, the commit's). Before: 2.07x, the sampling pass 1.01x, the write 1.01x."""
        table, case = _grown_table(spark, dbt, sources, TABLE_FORMAT, "read_once")
        # appends of files of ~0.5 MiB, so the rewrite's data dwarfs the metadata it reads
        for i in range(3):
            spark.sql(f"""insert into {table} select /*+ repartition(2) */ id, cast(abs(xxhash64(id, 1)) % 100000 as int),
                cast(abs(xxhash64(id, 2)) % 100000 as double) / 3.0, concat('customer-reference-number-', uuid())
                from range({10 * ROWS + i * 40_000}, {10 * ROWS + (i + 1) * 40_000})""")
        sizes = {r[0]: r[1] for r in spark.sql(f"select file_path, file_size_in_bytes from {table}.files").collect()}
        assert max(sizes.values()) < 1 << 20, sizes  # every file is one the reader reads whole
        reads = StatementReads(spark)
        _, out = dbt_output(dbt, ["run-operation", "spark_clustering.recluster", "--args",
                                  json.dumps({"relation": table, "final": True})], tmp_path / "target",
                            vars={f"case_{k}": v for k, v in case.items()}, callbacks=[reads])
        outcome = json.loads([x for x in out.splitlines() if "recluster: {" in x][-1].split("recluster: ", 1)[1])
        assert outcome["decision"] == "reclustered", outcome
        replaced = set(sizes) - live_files(spark, TABLE_FORMAT, table)
        size = sum(sizes[f] for f in replaced)
        rewrite = [(n, sql) for n, sql in reads.per_statement() if "read_once__sc_recluster" in sql]
        report = "\n".join(f"{n / size:.2f}x {sql[:160]}" for n, sql in rewrite[:8])
        total = sum(n for n, _ in rewrite)
        print(f"\n{len(replaced)} files replaced, {size:,} B; the rewrite's statements read {total / size:.2f}x:\n{report}")
        assert size > 2 << 20 and total < 1.3 * size, report
        # the cache went with the view (the write plan's sample too)
        assert spark._jsparkSession.sharedState().cacheManager().isEmpty()

    def test_a_measure_takes_the_manifests_bounds_until_delete_files_make_them_inexact(self, spark, sources):
        """What recluster's measure and clustering_information read (_file_stats_rows): the bounds in
        the manifests and, in the same statement, whether the table has delete files; then a DELETE
        in merge-on-read mode leaves position delete files, the manifests' record counts still count
        the deleted rows, and the measure reads the rows instead. Both times equal to each file's rows."""
        from pathlib import Path

        from spark_clustering_dev.dbt import run_operation_json
        from spark_clustering_dev.paths import local

        table = f"{sources}.merge_on_read"
        spark.sql(f"drop table if exists {table}")
        spark.sql(f"""create table {table} using iceberg tblproperties ('write.delete.mode' = 'merge-on-read',
                'write.metadata.metrics.column.a' = 'full', 'write.metadata.metrics.column.s' = 'full') as
            select /*+ REPARTITION_BY_RANGE(4, id) */ id, a, s from {sources}.uniform""")

        def check() -> None:
            measured = run_operation_json("metrics_file_stats_rows", {"schema": sources, "tables": ["merge_on_read"],
                                                                      "columns": ["a", "s"]}, schema=sources)["merge_on_read"]
            want = {Path(local(r[0])).name: [str(v) for v in r[1:]] for r in spark.sql(
                f"""select _file, count(*), min(a), max(a), count(*) - count(a), min(s), max(s), count(*) - count(s)
                    from {table} group by 1""").collect()}
            assert {Path(local(r[0])).name: r[1:] for r in measured} == want and len(want) == 4, (measured, want)

        check()
        spark.sql(f"delete from {table} where a < 1000")
        assert spark.sql(f"select count(*) from {table}.delete_files").first()[0] > 0
        check()
