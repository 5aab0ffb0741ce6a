-- A parquet table laid out uniformly (method hilbert) or for a workload (method auto, with the
-- declared boxes of var workload, or 'observed': the scans Spark recorded), for
-- bench_workload_layouts.py: the source, table name (var workload_alias), curve (var method), clustering
-- columns (var cluster_by), file count (var num_files) and workload come from vars.
{{ config(
    materialized='clustered_table',
    cluster_by=var('cluster_by'),
    cluster_method=var('method'),
    cluster_num_files=var('num_files'),
    cluster_workload=var('workload', none),
    file_format='parquet',
    alias=var('workload_alias', 'workload_layout'),
) }}

select * from {{ var('source') }}
