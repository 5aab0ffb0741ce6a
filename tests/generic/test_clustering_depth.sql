{#- Fails with one row per column whose average depth or p95 depth is over its limit (give at
    least one limit). Columns default to the model's `cluster_by`. Metrics are measured when the
    test runs, so the failing rows (and the log line) carry the measured numbers. -#}
{% test clustering_depth(model, columns=none, max_average_depth=none, max_p95_depth=none) %}
    {%- if max_average_depth is none and max_p95_depth is none -%}
        {{ exceptions.raise_compiler_error(
            "clustering_depth test on " ~ model ~ ": give max_average_depth and/or max_p95_depth, e.g. "
            ~ "data_tests: [{spark_clustering.clustering_depth: {max_average_depth: 4, max_p95_depth: 8}}]."
        ) }}
    {%- endif -%}
    {%- set measured_rows = [] -%}
    {#- measured when the test runs, not when it compiles (the table may not exist yet) -#}
    {%- if spark_clustering._measure_now() -%}
        {%- set info = spark_clustering.clustering_information(model, columns) -%}
        {%- for column_name, metrics in info['columns'].items() -%}
            {%- set average_over = max_average_depth is not none and metrics.average_depth > max_average_depth -%}
            {%- set p95_over = max_p95_depth is not none and metrics.p95_depth > max_p95_depth -%}
            {%- if average_over or p95_over -%}
                {{ log("clustering_depth: " ~ model ~ " column " ~ column_name ~ ": average_depth "
                    ~ metrics.average_depth ~ " (max_average_depth " ~ max_average_depth ~ "), p95_depth "
                    ~ metrics.p95_depth ~ " (max_p95_depth " ~ max_p95_depth ~ ")", info=true) }}
            {%- endif -%}
            {%- do measured_rows.append(
                "(" ~ spark_clustering._sql_literal(column_name, 'clustering_depth')
                ~ ", cast(" ~ metrics.average_depth ~ " as double)"
                ~ ", cast(" ~ metrics.p95_depth ~ " as bigint)"
                ~ ", cast(" ~ spark_clustering._sql_literal(max_average_depth, 'clustering_depth') ~ " as double)"
                ~ ", cast(" ~ spark_clustering._sql_literal(max_p95_depth, 'clustering_depth') ~ " as double))"
            ) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- if measured_rows -%}
select column_name, average_depth, p95_depth, max_average_depth, max_p95_depth
from values
    {{ measured_rows | join(',\n    ') }}
    as measured (column_name, average_depth, p95_depth, max_average_depth, max_p95_depth)
where (max_average_depth is not null and average_depth > max_average_depth)
    or (max_p95_depth is not null and p95_depth > max_p95_depth)
    {%- else -%}
{#- not measured (parsing, compiling): same columns, no rows -#}
select
    cast(null as string) as column_name,
    cast(null as double) as average_depth,
    cast(null as bigint) as p95_depth,
    cast(null as double) as max_average_depth,
    cast(null as double) as max_p95_depth
where false
    {%- endif -%}
{% endtest %}
