-- A plain (parquet) clustered table of var source, for bench_clustered_write.py (clustered CTAS
-- against ORDER BY CTAS): the table name (var write_alias), curve (var method), clustering columns (var
-- cluster_by) and file count (var num_files) come from vars.
{{ config(
    materialized='clustered_table',
    cluster_by=var('cluster_by'),
    cluster_method=var('method'),
    cluster_num_files=var('num_files'),
    file_format='parquet',
    alias=var('write_alias', 'clustered_write'),
) }}

select * from {{ var('source') }}
