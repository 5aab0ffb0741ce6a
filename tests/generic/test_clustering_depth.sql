{#- Fails with one row per column whose average depth or p95 depth is over its limit (give at
    least one limit). Columns default to the model's `cluster_by`. Metrics are measured when the
    test runs, so the failing rows (and the log line) carry the measured numbers. -#}
{% test clustering_depth(model, columns=none, max_average_depth=none, max_p95_depth=none) %}
    {%- if max_average_depth is none and max_p95_depth is none -%}
        {%- set msg -%}
            clustering_depth test on {{ model }}: give max_average_depth and/or max_p95_depth, e.g. data_tests: [{spark_clustering.clustering_depth: {max_average_depth: 4, max_p95_depth: 8}}].
        {%- endset -%}
        {{ exceptions.raise_compiler_error(msg | trim) }}
    {%- endif -%}
    {#- {} while dbt compiles: the test then has the same columns and no rows -#}
    {%- set info = spark_clustering.clustering_information(model, columns) -%}
    {%- set measured = [] -%}
    {%- for column_name, metrics in info.get('columns', {}).items() -%}
        {%- if (max_average_depth is not none and metrics.average_depth > max_average_depth)
              or (max_p95_depth is not none and metrics.p95_depth > max_p95_depth) -%}
            {{ log("clustering_depth: " ~ model ~ " column " ~ column_name ~ ": average_depth "
                ~ metrics.average_depth ~ " (max_average_depth " ~ max_average_depth ~ "), p95_depth "
                ~ metrics.p95_depth ~ " (max_p95_depth " ~ max_p95_depth ~ ")", info=true) }}
        {%- endif -%}
        {%- do measured.append([column_name, metrics.average_depth, metrics.p95_depth, max_average_depth, max_p95_depth]) -%}
    {%- endfor -%}
select *
from (
    {{ spark_clustering.typed_values(measured, [
        ['column_name', 'string'], ['average_depth', 'double'], ['p95_depth', 'bigint'],
        ['max_average_depth', 'double'], ['max_p95_depth', 'double']]) }}
) as measured
where (max_average_depth is not null and average_depth > max_average_depth)
    or (max_p95_depth is not null and p95_depth > max_p95_depth)
{% endtest %}
