{{ config(materialized='table', file_format='parquet', partition_by=['part']) }}

-- Range-split on id into 4 writer tasks; each writes one file per partition.
select /*+ repartition_by_range(4, id) */
    id,
    n,
    s,
    d,
    x,
    sparse,
    part
from {{ ref('metrics_typed_rows') }}
