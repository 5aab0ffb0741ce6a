-- The clustered build whose peak memory report_memory_probe.py measures (benchmarks/report.py runs
-- it in a fresh Spark application): the report's telemetry rows (var source) as parquet, the table
-- name (var memory_alias), curve (var method), clustering columns (var cluster_by) and file count (var
-- num_files) from vars.
{{ config(
    materialized='clustered_table',
    cluster_by=var('cluster_by'),
    cluster_method=var('method'),
    cluster_num_files=var('num_files'),
    file_format='parquet',
    alias=var('memory_alias', 'memory_build'),
) }}

select * from {{ var('source') }}
