-- The view `all_rows` of every row bench_recluster.py's tables hold after a step (macro
-- recluster_rows over ids [0, var end)), which recluster_rebuilt clusters in full.
{{ config(materialized='view', alias='all_rows') }}

{{ recluster_rows(0, var('end', 0)) }}
