-- The clustered build whose peak memory report_memory_probe.py measures (benchmarks/report.py runs
-- it in a fresh Spark application): the report's telemetry rows (var source) as parquet, the table
-- name (var memory_alias), curve (var method), clustering columns (var cluster_by) and file count (var
-- num_files) from vars.
{{ config(parquet_clustered_config(var('memory_alias', 'memory_build'))) }}

select * from {{ var('source') }}
