{#- The clustering key expression over the range ids of `columns` (None for `linear`).

    Bits per column follow from the largest number of ranges. Each column's ids are stretched over
    the full [0, 2^bits - 1] so a column with few distinct values still splits the data at the top
    levels of the curve; NULL keeps id 0 and the values start above the sampled share of NULLs,
    so a NULL-heavy column separates its NULL rows at the top of the curve instead of mixing them
    into the smallest values. -#}
{% macro cluster_key(method, columns, boundaries, backend=none) %}
    {{ return(adapter.dispatch('cluster_key', 'spark_clustering')(method, columns, boundaries, backend)) }}
{% endmacro %}

{% macro default__cluster_key(method, columns, boundaries, backend) %}
    {%- if method == 'linear' -%}{{ return(none) }}{%- endif -%}
    {%- set backend = backend or spark_clustering.udf_backend() -%}
    {%- set layout = spark_clustering.key_layout(columns, boundaries, backend) -%}
    {%- set ids = [] -%}
    {%- for col in columns -%}
        {%- set b = boundaries['columns'][col] -%}
        {%- set arr = ('array(' ~ b['literals'] | join(', ') ~ ')') if b['literals'] else ('cast(array() as array<' ~ b['type'] ~ '>)') -%}
        {%- set rid = spark_clustering.range_id(spark_clustering.quoted_columns([col]), arr, backend) -%}
        {#- range ids: 0 for NULL, 1 .. k + 1 for values (k boundaries) -> 0, then offset .. max_value. -#}
        {%- set k = [b['literals'] | length, 1] | max -%}
        {%- set offset = [[(b['null_fraction'] * (layout.max_value + 1)) | round | int, 1] | max, layout.max_value] | min -%}
        {%- do ids.append('cast(case when ' ~ spark_clustering.quoted_columns([col]) ~ ' is null then 0 else ' ~ offset ~ ' + (cast(' ~ rid ~ ' as bigint) - 1) * '
                          ~ (layout.max_value - offset) ~ ' div ' ~ k ~ ' end as int)') -%}
    {%- endfor -%}
    {%- if method == 'zorder' -%}
        {{ return(spark_clustering.zorder_key(layout.bits, ids, backend)) }}
    {%- else -%}
        {{ return(spark_clustering.hilbert_key(layout.bits, ids, backend)) }}
    {%- endif -%}
{% endmacro %}

{#- Bits per column: enough for the column with the most ranges, at most 31 (ids are ints); the SQL
    backend produces bigint keys only, so there d * bits <= 63 (coarser cells, the raw column
    tie-break still orders rows inside them). -#}
{% macro key_layout(columns, boundaries, backend) %}
    {%- set ns = namespace(max_id=1) -%}
    {%- for col in columns -%}
        {%- set ns.max_id = [ns.max_id, boundaries['columns'][col]['literals'] | length + 1] | max -%}
    {%- endfor -%}
    {%- set ns2 = namespace(bits=1) -%}
    {%- for _ in range(31) -%}
        {%- if 2 ** ns2.bits - 1 < ns.max_id -%}{%- set ns2.bits = ns2.bits + 1 -%}{%- endif -%}
    {%- endfor -%}
    {%- set bits = [ns2.bits, 31] | min -%}
    {%- if backend == 'sql' -%}
        {%- set bits = [bits, (63 // (columns | length))] | min -%}
    {%- endif -%}
    {{ return({'bits': bits, 'max_value': 2 ** bits - 1}) }}
{% endmacro %}
