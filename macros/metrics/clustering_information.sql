{#- Clustering metrics of a table from its per-file min/max (docs/metrics.md "Metric definitions"):
    per column total/constant/NULL-only file counts, average overlaps, average/p95/p99 depth and
    the depth histogram; the box metric over all columns; optionally the files-scanned ratio of a
    workload; `method`, how the package last clustered the table. raise_errors=false returns a
    mistake found before the scan (no such column, a view, a bad workload) as {"relation", "error":
    text} instead of failing: the audit model measures every table and must not stop at a broken
    one. Returns a dict ({} while dbt compiles or generates docs); under `dbt run-operation
    clustering_information` also prints it as one JSON line `clustering_information: {...}`. -#}
{% macro clustering_information(relation, columns=none, workload=none, raise_errors=true) %}
    {#- measured when dbt runs, tests, builds or runs an operation; {} while it compiles or generates docs -#}
    {%- if not spark_clustering._measure_now() -%}
        {{ return({}) }}
    {%- endif -%}
    {%- set relation = spark_clustering._resolve_relation(relation, 'clustering_information') -%}
    {%- do spark_clustering._require_bool('raise_errors', raise_errors, 'clustering_information', 'argument') -%}
    {%- if columns is none -%}
        {%- set columns = spark_clustering._cluster_by_of(relation) -%}
        {%- if columns is none -%}
            {{ exceptions.raise_compiler_error(
                "clustering_information: no `columns` given and " ~ relation ~ " is not a model with a "
                ~ "`cluster_by` config; pass the columns to measure, e.g. columns=['event_time', 'device_id']."
            ) }}
        {%- endif -%}
    {%- endif -%}
    {%- set problem = spark_clustering._file_source_problem(relation, 'clustering_information')
                      or spark_clustering._column_list_problem(columns, 'clustering_information', relation) -%}
    {%- if not problem -%}
        {%- set column_list = [columns] if columns is string else columns | list -%}
        {%- set problem = spark_clustering._missing_columns_problem(
            column_list, spark_clustering._column_types(relation), 'clustering_information', 'columns', relation) -%}
    {%- endif -%}
    {%- if problem -%}
        {%- if raise_errors -%}{{ exceptions.raise_compiler_error(problem) }}{%- endif -%}
        {{ return({"relation": relation | string, "error": problem}) }}
    {%- endif -%}
    {#- the workload is checked before the scan too: a bad box costs no table scan -#}
    {%- if workload is not none -%}
        {%- set workload_result = spark_clustering.files_scanned_ratio(relation, workload, raise_errors) -%}
        {%- if 'error' in workload_result -%}{{ return(workload_result) }}{%- endif -%}
    {%- endif -%}

    {%- set detail = spark_clustering._existing_table_detail(relation) -%}
    {%- set stats = spark_clustering._file_stats_rows(relation, column_list, detail) -%}
    {%- set file_ranges = spark_clustering._file_ranges_from_stats(stats, column_list | length) -%}
    {%- set metrics = spark_clustering._clustering_metrics(file_ranges, column_list) -%}
    {#- how the table was last clustered (none for a table the package did not write) -#}
    {%- set properties = detail.properties if detail is not none else spark_clustering._table_properties(relation) -%}
    {%- set result = {"relation": relation | string, "method": properties.get('spark_clustering.method'),
                      "layout": properties.get('spark_clustering.layout_name') or none} -%}
    {%- do result.update(metrics) -%}
    {%- if workload is not none -%}
        {%- do result.update({"workload": workload_result}) -%}
    {%- endif -%}
    {%- do spark_clustering._print_if_run_operation('clustering_information', result) -%}
    {{ return(result) }}
{% endmacro %}
