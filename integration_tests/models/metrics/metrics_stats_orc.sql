{{ config(materialized='table', file_format='orc') }}

-- Range-split on id into 4 writer tasks.
select /*+ repartition_by_range(4, id) */
    id,
    n,
    s,
    d,
    x,
    sparse,
    part
from {{ ref('metrics_typed_rows') }}
