{{ config(materialized='view') }}

-- 2,000 rows of several orderable types for the file_stats tests; `sparse` has values only for
-- id < 250, so range-split files beyond that are NULL-only in it.
select
    id,
    cast(pmod(id * 7, 101) - 50 as int) as n,
    case when id % 5 = 0 then null else concat(if(id % 2 = 0, 'K', 'k'), cast(id % 37 as string)) end as s,
    date_add(date '2024-01-01', cast(id % 400 as int)) as d,
    case when id % 11 = 0 then null else cast(id / 7.0 as double) end as x,
    case when id < 250 then id end as sparse,
    cast(id % 3 as int) as part
from range(0, 2000)
