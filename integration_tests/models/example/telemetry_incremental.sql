-- The incremental way: dbt appends new rows, the recluster() post-hook keeps the table clustered.
-- The first build loads events 0..8 of every 10; a later run with var telemetry_increment=9 appends
-- the last tenth, and the post-hook's gate decides what to rewrite.
{{ config(materialized='incremental', incremental_strategy='append',
          cluster_by=['mission_id', 'ts', 'payload_id'],
          cluster_target_file_rows=var('telemetry_file_rows', 12500),
          recluster=var('telemetry_recluster', {}),
          post_hook="{{ spark_clustering.recluster() }}") }}

{%- set batch_filter = 'pmod(event_id, 10) = ' ~ var('telemetry_increment', 9) if is_incremental()
    else 'pmod(event_id, 10) < 9' %}

select * from {{ ref('telemetry_events') }}
where {{ batch_filter }}
