{#- SQL expression of the Z-order key of `id_sqls` (a list of 1..32 SQL expressions giving ids in
    [0, 2^bits)): bit L of id_i lands at position L*n + (n - i). BIGINT when n * bits <= 63, else
    (native / python backends only) BINARY of ceil(n*bits/8) big-endian bytes. NULL if any id is
    NULL; an id outside [0, 2^bits) fails the query. `backend` defaults to udf_backend(). -#}
{% macro zorder_key(bits, id_sqls, backend=none) %}
    {{ return(adapter.dispatch('zorder_key', 'spark_clustering')(bits, id_sqls, backend)) }}
{% endmacro %}

{% macro spark__zorder_key(bits, id_sqls, backend) %}
    {%- set backend = spark_clustering._curve_backend('zorder_key', backend) -%}
    {%- set args = spark_clustering._curve_key_args('zorder_key', bits, id_sqls, backend) -%}
    {%- if backend in ['native', 'python'] -%}
        {{ return('zorder_key(' ~ args.bits ~ ', ' ~ args.ids | join(', ') ~ ')') }}
    {%- endif -%}
    {%- set bound = spark_clustering._curve_bind_ids(args.ids) -%}
    {%- set key = spark_clustering._curve_interleave(args.bits, bound.xs) -%}
    {{ return(bound.open ~ spark_clustering._curve_checked('zorder_key', args.bits, bound.xs, key) ~ bound.close) }}
{% endmacro %}

{% macro default__zorder_key(bits, id_sqls, backend) %}
    {{ spark_clustering._unsupported_adapter('zorder_key', 'emits Spark SQL bit functions or the native zorder_key') }}
{% endmacro %}
