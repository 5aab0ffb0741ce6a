-- A benchmark table (TPC-H lineitem clustered on (l_shipdate, l_partkey, l_suppkey) unless var
-- cluster_by says otherwise, e.g. TPC-DS store_sales) as a Delta or Iceberg table, for
-- bench_table_formats.py and bench_format_maintenance.py: the source, table name, format, curve and
-- file count come from vars, the declared workload of cluster_method auto (var workload), and
-- recluster()'s gate settings (var recluster); recluster() runs on it with
-- this model's config.
{{ config(
    materialized='clustered_table',
    cluster_by=var('cluster_by', ['l_shipdate', 'l_partkey', 'l_suppkey']),
    cluster_method=var('method', 'hilbert'),
    cluster_workload=var('workload', none),
    cluster_num_files=var('num_files', none),
    cluster_target_file_rows=var('file_rows', 1000000),
    file_format=var('format'),
    alias=var('alias', 'format_table'),
    recluster=var('recluster', none),
) }}

select * from {{ var('source') }}
