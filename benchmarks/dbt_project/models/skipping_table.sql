-- The clustered parquet table the data-skipping benchmarks query (TPC-H lineitem, hilbert on
-- (l_shipdate, l_partkey, l_suppkey)), for bench_data_skipping.py (local disk) and
-- bench_object_store.py (in a database located in an S3 bucket, so the default cluster_swap: auto
-- swaps it by location): the source, table name (var skipping_alias), curve (var method), clustering
-- columns (var cluster_by) and file count (var num_files) come from vars.
{{ config(parquet_clustered_config(var('skipping_alias', 'skipping_table'))) }}

select * from {{ var('source') }}
