{#- The rows bench_recluster.py grows its tables by: ids [start, end) and three clustering columns
    hashed from the id (a: 100,000 values, b: 1,000, c: 50,000 doubles), plus a payload string.
    Both of its models select them, so the incremental table and the full rebuild hold the same rows. -#}
{% macro recluster_rows(start, end) %}
select
    id,
    pmod(xxhash64(id, 1), 100000) as a,
    cast(pmod(xxhash64(id, 2), 1000) as int) as b,
    cast(pmod(xxhash64(id, 3), 50000) as double) / 7 as c,
    concat('payload-', id) as payload
from range({{ start }}, {{ end }})
{% endmacro %}
