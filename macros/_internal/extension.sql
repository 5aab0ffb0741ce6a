{#- The package's Spark extension (the jar): its functions are how a session says it is loaded. -#}

{#- Whether the session knows the function `name` (a native curve function, a table function of the
    extension). False on other adapters. A build asks this five times or more (lease, key, stats,
    swap), each a Spark round trip: the first question looks up every function of the jar in one
    `show functions` and keeps the answer in the model's context for the rest of its run (a
    session's functions do not change during a build). -#}
{% macro _has_extension_function(name) %}
    {%- if target.type not in ['spark', 'databricks'] -%}{{ return(false) }}{%- endif -%}
    {%- set names = spark_clustering._extension_function_names() -%}
    {%- set memo = model if (model is defined and model is mapping) else {} -%}
    {%- if name not in names -%}
        {{ return(run_query("show functions like '" ~ name ~ "'").rows | length > 0) }}
    {%- endif -%}
    {%- if '_spark_clustering_functions' not in memo -%}
        {%- set found = [] -%}
        {%- for row in run_query("show functions like '" ~ names | join('|') ~ "'").rows -%}
            {%- do found.append((row[0] | string).split('.') | last | lower) -%}
        {%- endfor -%}
        {%- do memo.update({'_spark_clustering_functions': found}) -%}
    {%- endif -%}
    {{ return(name in memo['_spark_clustering_functions']) }}
{% endmacro %}


{#- The extension's functions the package asks about (udfs/scala/.../SparkClusteringInjections.scala). -#}
{% macro _extension_function_names() %}
    {{ return(['drop_sidecar_table', 'format_committed_rows', 'hilbert_key', 'kdtree_fit', 'observed_workload', 'recluster_commit', 'swap_staging_table', 'table_lease_acquire', 'write_file_stats']) }}
{% endmacro %}


{#- The error of a step that needs a table function of the extension, naming how to load it. -#}
{% macro _missing_extension(what, functions, alternative=none) %}
    {%- set msg -%}
        {{ what }}: the spark_clustering Spark extension is not loaded, and this needs its table functions ({{ functions | join(', ') }}). Start Spark with spark.jars=<path>/spark-clustering-udfs_<spark line>_<scala>.jar (the jar for its Spark line) and spark.sql.extensions=org.apache.spark.sql.sparkclustering.SparkClusteringExtensions (scripts/setup builds the jar; see docs/deployment.md){{ (', or ' ~ alternative) if alternative else '' }}.
    {%- endset -%}
    {{ exceptions.raise_compiler_error(msg | trim) }}
{% endmacro %}
