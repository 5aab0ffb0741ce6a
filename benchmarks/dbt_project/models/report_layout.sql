-- One clustered layout (linear, zorder or hilbert) of a benchmark report dataset (telemetry,
-- TPC-DS store_sales, TPC-H lineitem) as parquet, for report_measure.py (benchmarks/report.py):
-- the source, table name (var layout_alias), curve (var method), clustering columns (var cluster_by) and
-- file count (var num_files) come from vars.
{{ config(parquet_clustered_config(var('layout_alias', 'report_layout'))) }}

select * from {{ var('source') }}
