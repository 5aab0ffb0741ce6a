-- Every setting of the package from vars: in config() (settings_config) or under meta
-- (settings_meta). test_settings resolves them through the build's path (the comment below carries
-- what clustering_config() resolved, as the materialization calls it) and recluster()'s
-- (run-operation clustering_settings on the built table); 4000 rows, so 3 files hold over 1000
-- each and the build logs no warning. Without the tests' vars (the linter
-- compiling it) it resolves nothing.
{{ config(
    materialized='clustered_table',
    alias=var('settings_alias', 'settings_case'),
    meta=var('settings_meta', {}),
    **var('settings_config', {})
) }}
{%- set resolved = spark_clustering.clustering_config() if execute and var('settings_alias', none) else '' %}
-- clustering_config: {{ tojson(resolved) if resolved else '' }}
select
    id,
    cast(pmod(id * 7, 100) as int) as a,
    cast(pmod(id * 13, 50) as int) as b,
    cast(pmod(id, 2) as int) as p
from range(4000)
