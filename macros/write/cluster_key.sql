{#- The clustering key expression over the range ids of `columns` (None for `linear`).

    Bits per column follow from the largest number of ranges; each column's ids are stretched over
    the full [0, 2^bits - 1] so a column with few distinct values still splits the data at the top
    levels of the curve instead of only in its lowest bits. -#}
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
        {%- set rid = spark_clustering.range_id(spark_clustering.quoted_columns([col]), arr) -%}
        {#- range ids span 0 (NULL) .. len(literals) + 1 -#}
        {%- set max_id = b['literals'] | length + 1 -%}
        {%- do ids.append('cast(cast(' ~ rid ~ ' as bigint) * ' ~ layout.max_value ~ ' div ' ~ max_id ~ ' as int)') -%}
    {%- endfor -%}
    {%- if method == 'zorder' -%}
        {{ return(spark_clustering.zorder_key(layout.bits, ids)) }}
    {%- else -%}
        {{ return(spark_clustering.hilbert_key(layout.bits, ids)) }}
    {%- endif -%}
{% endmacro %}

{#- Bits per column: enough for the column with the most ranges, at most 31 (ids are ints); the SQL
    and Python backends produce bigint keys only, so there d * bits <= 63 (coarser cells, the raw
    column tie-break still orders rows inside them). -#}
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
    {%- if backend in ['sql', 'python'] -%}
        {%- set bits = [bits, (63 // (columns | length))] | min -%}
    {%- endif -%}
    {{ return({'bits': bits, 'max_value': 2 ** bits - 1}) }}
{% endmacro %}
