{#- Clustering metrics of a table from its per-file min/max (DESIGN.md "Metric definitions"):
    per column total/constant/NULL-only file counts, average overlaps, average/p95/p99 depth and
    the depth histogram; the box metric over all columns; optionally the files-scanned ratio of a
    workload. Returns a dict; under `dbt run-operation clustering_information` also prints it as
    one JSON line `clustering_information: {...}`. -#}
{% macro clustering_information(relation, columns=none, workload=none) %}
    {{ return(adapter.dispatch('clustering_information', 'spark_clustering')(relation, columns, workload)) }}
{% endmacro %}


{#- Generic: everything adapter-specific is in file_stats. -#}
{% macro default__clustering_information(relation, columns=none, workload=none) %}
    {%- if not execute -%}
        {{ return({}) }}
    {%- endif -%}
    {%- set relation = spark_clustering._resolve_relation(relation, 'clustering_information') -%}
    {%- if columns is none -%}
        {%- set columns = spark_clustering._cluster_by_of(relation) -%}
        {%- if columns is none -%}
            {{ exceptions.raise_compiler_error(
                "clustering_information: no `columns` given and " ~ relation ~ " is not a model with a "
                ~ "`cluster_by` config; pass the columns to measure, e.g. columns=['event_time', 'device_id']."
            ) }}
        {%- endif -%}
    {%- endif -%}
    {%- set column_list = spark_clustering._as_column_list(columns, 'clustering_information', relation) -%}
    {%- do spark_clustering._check_columns_exist(
        column_list, spark_clustering._column_types(relation), 'clustering_information', 'columns', relation) -%}

    {%- set stats = run_query(spark_clustering.file_stats(relation, column_list)) -%}
    {%- set file_ranges = spark_clustering._file_ranges_from_stats(stats, column_list | length) -%}
    {%- set metrics = spark_clustering._clustering_metrics(file_ranges, column_list) -%}
    {%- set result = {"relation": relation | string} -%}
    {%- do result.update(metrics) -%}
    {%- if workload is not none -%}
        {%- do result.update({"workload": spark_clustering.files_scanned_ratio(relation, workload)}) -%}
    {%- endif -%}
    {%- do spark_clustering._print_if_run_operation('clustering_information', result) -%}
    {{ return(result) }}
{% endmacro %}
