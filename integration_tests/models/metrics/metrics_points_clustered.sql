{{ config(materialized='table', file_format='parquet', cluster_by=['a', 'b']) }}

-- 50k points in 16 files laid out as a 4 x 4 grid: 4 bands of `a`, each range-split on `b`.
with points as (
    select
        id,
        pmod(hash(id, 11), 1000) as a,
        pmod(hash(id, 23), 1000) as b
    from range(0, 50000)
),

banded as (
    select /*+ repartition_by_range(16, a_band, b) */
        id,
        a,
        b,
        floor(a / 250) as a_band
    from points
)

select
    id,
    a,
    b
from banded
sort by a, b
