-- A plain (parquet) clustered table of var source, for bench_clustered_write.py (clustered CTAS
-- against ORDER BY CTAS): the table name (var write_alias), curve (var method), clustering columns (var
-- cluster_by) and file count (var num_files) come from vars.
{{ config(parquet_clustered_config(var('write_alias', 'clustered_write'))) }}

select * from {{ var('source') }}
