-- An incremental model kept clustered by the recluster() post-hook; every knob from vars so the
-- tests can append batches (rc_start..rc_end) and vary the gate.
{{ config(
    materialized=var('rc_materialized', 'incremental'),
    incremental_strategy='append',
    file_format=var('rc_format', 'parquet'),
    partition_by=var('rc_partition_by', none),
    alias=var('rc_alias', 'recluster_case'),
    cluster_by=['a', 'b', 'c'],
    cluster_method=var('rc_method', 'hilbert'),
    cluster_target_file_rows=var('rc_file_rows', 2000),
    recluster=var('rc_recluster', {}),
    skip_recluster=var('rc_skip', false),
    cluster_file_stats=var('rc_file_stats', none),
    cluster_workload=var('rc_workload', none),
    post_hook="{{ spark_clustering.recluster() }}",
    tags=var('rc_tags', []),
) }}

{#- With rc_partition_by: a `day` partition column, every row in day rc_day when that is set. -#}
{%- set day_sql = var('rc_day') if var('rc_day', none) is not none else 'cast(pmod(xxhash64(id, 4), 3) as int)' %}
{%- set day_column = [day_sql ~ ' as day'] if var('rc_partition_by', none) else [] %}

select
    id,
    pmod(xxhash64(id, 1), 100000) as a,
    cast(pmod(xxhash64(id, 2), 1000) as int) as b,
    cast(pmod(xxhash64(id, 3), 50000) as double) / 7 as c,
    concat('payload-', id) as payload{% for column in day_column %}, {{ column }}{% endfor %}
from range({{ var('rc_start', 0) }}, {{ var('rc_end', 1000) }})
