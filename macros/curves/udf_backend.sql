{#- Which implementation of range_id / zorder_key / hilbert_key the generated SQL uses:
    'native' (the Scala functions of the jar + extension), 'python' (the Arrow UDFs registered by
    spark_clustering_udfs.register) or 'sql' (pure Spark SQL fallback, BIGINT keys only).
    var('spark_clustering_udf_backend', 'auto'): 'auto' picks 'native' when the session knows a
    function named hilbert_key, else 'sql'. No caching: pass the result on to range_id / zorder_key /
    hilbert_key (their `backend` argument) to look it up once per model. -#}
{% macro udf_backend() %}
    {{ return(adapter.dispatch('udf_backend', 'spark_clustering')()) }}
{% endmacro %}

{% macro spark__udf_backend() %}
    {%- set allowed = ['auto', 'native', 'python', 'sql'] -%}
    {%- set choice = var('spark_clustering_udf_backend', 'auto') -%}
    {%- if choice is not string or (choice | trim | lower) not in allowed -%}
        {{ exceptions.raise_compiler_error(
            "spark_clustering: var 'spark_clustering_udf_backend' is " ~ (choice | tojson)
            ~ ", but it must be one of " ~ allowed | join(', ')
            ~ " (e.g. --vars '{spark_clustering_udf_backend: sql}')") }}
    {%- endif -%}
    {%- set choice = choice | trim | lower -%}
    {%- if choice != 'auto' -%}
        {{ return(choice) }}
    {%- endif -%}
    {#- At parse time nothing runs; 'native' accepts every argument the others accept. -#}
    {%- if not execute -%}
        {{ return('native') }}
    {%- endif -%}
    {{ return('native' if spark_clustering._has_extension_function('hilbert_key') else 'sql') }}
{% endmacro %}

{% macro default__udf_backend() %}
    {{ spark_clustering._unsupported_adapter('udf_backend', "looks up the session's functions (SHOW FUNCTIONS)") }}
{% endmacro %}
