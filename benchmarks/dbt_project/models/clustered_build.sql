-- A plain (parquet) clustered table built from var source, for bench_spark_lines.py: the columns,
-- curve, file count and table name (var build_alias: format_table's alias is var alias) come from vars.
{{ config(
    materialized='clustered_table',
    cluster_by=var('cluster_by'),
    cluster_method=var('method', 'hilbert'),
    cluster_num_files=var('num_files', none),
    file_format='parquet',
    alias=var('build_alias', 'clustered_build'),
) }}

select * from {{ var('source') }}
