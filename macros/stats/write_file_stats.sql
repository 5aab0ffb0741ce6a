{#- (Re)build the file-statistics sidecar of a parquet/orc table: per data file its row count and,
    per column, min / max / NULL count, computed from the rows (exact, unlike footers: INT96
    timestamps and long strings included), kept in `<table location>/_sc_file_stats/` keyed by
    file path + size + modification time. The Spark extension's data skipping reads it at query
    planning (docs/data_skipping.md); files it does not know fall back to their footers.
    `clustered_table` and `recluster()` call it after they write; run it on any other table with
        dbt run-operation write_file_stats --args '{relation: my_schema.my_table}'
    Only files the sidecar does not cover yet are read, unless rebuild=true. Returns
    {relation, files, files_scanned, sidecar, elapsed_ms}; under run-operation also printed as one
    JSON line `write_file_stats: {...}`. -#}
{% macro write_file_stats(relation=none, rebuild=false) %}
    {{ return(adapter.dispatch('write_file_stats', 'spark_clustering')(relation, rebuild)) }}
{% endmacro %}


{% macro spark__write_file_stats(relation, rebuild) %}
    {%- if not execute -%}{{ return(none) }}{%- endif -%}
    {%- if rebuild is not boolean -%}
        {{ spark_clustering.config_error('rebuild', rebuild, 'use true or false (a boolean, not ' ~ spark_clustering._type_name(rebuild) ~ ')',
                                         subject='write_file_stats', kind='argument') }}
    {%- endif -%}
    {%- set relation = spark_clustering._resolve_relation(relation, 'write_file_stats') -%}
    {%- if not spark_clustering._has_file_stats_function() -%}
        {{ exceptions.raise_compiler_error(
            "write_file_stats: " ~ relation ~ ": the Spark session has no function write_file_stats; it comes with "
            ~ "the package's Spark extension: start Spark with spark.jars=<path to spark-clustering-udfs.jar> and "
            ~ "spark.sql.extensions=org.apache.spark.sql.sparkclustering.SparkClusteringExtensions (docs/deployment.md)") }}
    {%- endif -%}
    {%- set row = run_query("select * from write_file_stats("
        ~ spark_clustering._sql_literal(relation.schema ~ '.' ~ relation.identifier, 'write_file_stats') ~ ", '"
        ~ (rebuild | string | lower) ~ "')").rows[0] -%}
    {%- set result = {'relation': relation | string, 'files': row[1] | int, 'files_scanned': row[2] | int,
                      'sidecar': row[3], 'elapsed_ms': row[4] | int} -%}
    {%- do spark_clustering._print_if_run_operation('write_file_stats', result) -%}
    {{ return(result) }}
{% endmacro %}


{% macro default__write_file_stats(relation, rebuild) %}
    {{ exceptions.raise_compiler_error(
        "write_file_stats: adapter '" ~ adapter.type() ~ "' is not supported. It writes the statistics sidecar "
        ~ "that the spark_clustering Spark extension reads to skip files of plain parquet/orc tables.") }}
{% endmacro %}


{#- After a write of the package (clustered_table, recluster): the sidecar, when the extension is
    loaded and the model has not switched it off (config cluster_file_stats: false, read by
    clustering_config as `file_stats`). -#}
{% macro _write_file_stats_after_write(relation, cfg) %}
    {%- if cfg.file_stats and spark_clustering._has_file_stats_function() -%}
        {%- do spark_clustering.write_file_stats(relation) -%}
    {%- endif -%}
{% endmacro %}


{% macro _has_file_stats_function() %}
    {%- if target.type not in ['spark', 'databricks'] -%}{{ return(false) }}{%- endif -%}
    {{ return(run_query("show functions like 'write_file_stats'").rows | length > 0) }}
{% endmacro %}
