{{ config(materialized='table', file_format='parquet', cluster_by=['a', 'b']) }}

-- The same rows as metrics_points_clustered, dealt round-robin into 16 files: every file spans
-- (nearly) the whole range of every column, as an append-only table does.
select /*+ repartition(16) */
    id,
    a,
    b
from {{ ref('metrics_points_clustered') }}
