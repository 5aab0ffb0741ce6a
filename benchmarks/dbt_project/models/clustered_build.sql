-- A plain (parquet) clustered table built from var source, for bench_spark_lines.py: the columns,
-- curve, file count and table name (var build_alias: format_table's alias is var alias) come from vars.
{{ config(parquet_clustered_config(var('build_alias', 'clustered_build'))) }}

select * from {{ var('source') }}
