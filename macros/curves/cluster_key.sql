{#- The clustering key expression over the range ids of `columns` (None for `linear`).

    Bits per column follow from the largest number of ranges. Each column's ids are stretched over
    the full [0, 2^bits - 1] so a column with few distinct values still splits the data at the top
    levels of the curve; NULL keeps id 0 and the values start above the sampled share of NULLs,
    so a NULL-heavy column separates its NULL rows at the top of the curve instead of mixing them
    into the smallest values. -#}
{% macro cluster_key(method, columns, boundaries, backend=none) %}
    {%- if method == 'linear' -%}{{ return(none) }}{%- endif -%}
    {%- set backend = backend or spark_clustering.udf_backend() -%}
    {%- set layout = spark_clustering._key_layout(columns, boundaries, backend) -%}
    {%- set ids = [] -%}
    {%- for col in columns -%}
        {%- set b = boundaries['columns'][col] -%}
        {%- set arr = ('array(' ~ b['literals'] | join(', ') ~ ')') if b['literals'] else ('cast(array() as array<' ~ b['type'] ~ '>)') -%}
        {%- set rid = spark_clustering.range_id(spark_clustering._quoted_columns([col]), arr, backend) -%}
        {#- range ids: 0 for NULL, 1 .. k + 1 for values (k boundaries) -> 0, then offset .. max_value. -#}
        {%- set k = [b['literals'] | length, 1] | max -%}
        {%- set offset = [[(b['null_fraction'] * (layout.max_value + 1)) | round | int, 1] | max, layout.max_value] | min -%}
        {%- do ids.append('cast(case when ' ~ spark_clustering._quoted_columns([col]) ~ ' is null then 0 else ' ~ offset ~ ' + (cast(' ~ rid ~ ' as bigint) - 1) * '
                          ~ (layout.max_value - offset) ~ ' div ' ~ k ~ ' end as int)') -%}
    {%- endfor -%}
    {%- if method == 'zorder' -%}
        {{ return(spark_clustering.zorder_key(layout.bits, ids, backend)) }}
    {%- else -%}
        {{ return(spark_clustering.hilbert_key(layout.bits, ids, backend)) }}
    {%- endif -%}
{% endmacro %}
