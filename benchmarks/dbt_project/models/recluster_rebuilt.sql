-- The table `rebuilt` bench_recluster.py builds again clustered at every step (clustered_table over
-- all the rows, view recluster_all_rows, hilbert on a, b, c), to set against recluster_grown's
-- incremental recluster: the target rows per file (var file_rows) comes from a var.
{{ config(
    materialized='clustered_table',
    cluster_by=['a', 'b', 'c'],
    cluster_method='hilbert',
    cluster_target_file_rows=var('file_rows'),
    file_format='parquet',
    alias='rebuilt',
) }}

select * from {{ ref('recluster_all_rows') }}
