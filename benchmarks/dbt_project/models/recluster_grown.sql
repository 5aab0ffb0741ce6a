-- The incremental table bench_recluster.py grows by appends (table `grown`: the rows of ids
-- [var start, var end) of macro recluster_rows, hilbert on a, b, c) and keeps clustered with the
-- recluster() post-hook: the target rows per file (var file_rows) and the gate (var recluster) come
-- from vars; the benchmark switches the post-hook off for its appends (var
-- spark_clustering_recluster: false) and runs recluster itself.
{{ config(
    materialized='incremental',
    incremental_strategy='append',
    file_format='parquet',
    alias='grown',
    cluster_by=['a', 'b', 'c'],
    cluster_method='hilbert',
    cluster_target_file_rows=var('file_rows'),
    recluster=var('recluster', {}),
    post_hook="{{ spark_clustering.recluster() }}",
) }}

{{ recluster_rows(var('start', 0), var('end', 0)) }}
