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
    {%- set ids = spark_clustering._column_ids(columns, boundaries, layout, backend) -%}
    {%- if method == 'zorder' -%}
        {{ return(spark_clustering.zorder_key(layout.bits, ids, backend)) }}
    {%- else -%}
        {{ return(spark_clustering.hilbert_key(layout.bits, ids, backend)) }}
    {%- endif -%}
{% endmacro %}
