-- Partitioned: clustering happens inside each region partition, no file spans two regions.
{{ config(materialized='clustered_table', partition_by=['region'], cluster_by=['ts', 'mission_id'],
          cluster_method='hilbert', cluster_target_file_rows=var('telemetry_file_rows', 12500)) }}

select * from {{ ref('telemetry_events') }}
