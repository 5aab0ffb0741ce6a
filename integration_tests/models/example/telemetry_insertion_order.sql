-- The baseline: the same rows as written by a plain table, in generation order.
{{ config(materialized='table') }}

select /*+ REPARTITION_BY_RANGE(16, event_id) */ * from {{ ref('telemetry_events') }}
sort by event_id
