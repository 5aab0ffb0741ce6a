{#- The package's Spark extension (the jar): its functions are how a session says it is loaded. -#}

{#- Whether the session knows the function `name` (a native curve function, a table function of the
    extension). False on other adapters. -#}
{% macro _has_extension_function(name) %}
    {%- if target.type not in ['spark', 'databricks'] -%}{{ return(false) }}{%- endif -%}
    {{ return(run_query("show functions like '" ~ name ~ "'").rows | length > 0) }}
{% endmacro %}


{#- The error of a step that needs a table function of the extension, naming how to load it. -#}
{% macro _missing_extension(what, functions, alternative=none) %}
    {%- set msg -%}
        {{ what }}: the spark_clustering Spark extension is not loaded, and this needs its table functions ({{ functions | join(', ') }}). Start Spark with spark.jars=<path>/spark-clustering-udfs.jar and spark.sql.extensions=org.apache.spark.sql.sparkclustering.SparkClusteringExtensions (scripts/setup builds the jar; see docs/deployment.md){{ (', or ' ~ alternative) if alternative else '' }}.
    {%- endset -%}
    {{ exceptions.raise_compiler_error(msg | trim) }}
{% endmacro %}
