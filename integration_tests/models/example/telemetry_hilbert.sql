{{ config(materialized='clustered_table', cluster_by=['mission_id', 'ts', 'payload_id'],
          cluster_method='hilbert', cluster_target_file_rows=var('telemetry_file_rows', 12500)) }}

select * from {{ ref('telemetry_events') }}
