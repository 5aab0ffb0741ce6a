-- Synthetic telemetry, generated in SQL and deterministic (hash-based, no rand()):
-- var telemetry_rows sets the size (small for the example and tests, millions for benchmarks).
{{ config(materialized='table') }}

with numbered as (
    select
        id,
        abs(xxhash64(id, 1)) as h1,
        abs(xxhash64(id, 2)) as h2,
        abs(xxhash64(id, 3)) as h3
    from range(0, {{ var('telemetry_rows', 200000) }})
)

select
    id as event_id,
    cast(h1 % 64 as int) as mission_id,
    timestamp_seconds(1735689600 + h2 % 31536000) as ts,
    concat('payload-', lpad(cast(h3 % 5000 as string), 5, '0')) as payload_id,
    element_at(
        array('temp', 'pressure', 'voltage', 'current', 'gyro', 'accel', 'mag', 'lidar'),
        cast(h3 % 8 as int) + 1
    ) as sensor_kind,
    element_at(array('leo', 'meo', 'geo', 'lunar', 'deep'), cast(h1 % 5 as int) + 1) as region,
    -- skewed on purpose: ~90 % of readings are good
    (h2 % 10) != 0 as quality_flag,
    round(cast(h3 % 100000 as double) / 100.0 + cast(h1 % 7 as double), 2) as reading_value
from numbered
