{#- History of clustering quality: one row per (run, model with `cluster_by`, column), appended on
    every run, so drift between rebuilds and reclusters is visible. Run it after the models it
    measures (`dbt run -s spark_clustering_audit`, or last in a job); switch it off with
    `--vars '{spark_clustering_audit: false}'`. A model's `cluster_workload` config or meta key (a
    list of {column: [lo, hi]} boxes) adds the workload's files-scanned ratio; `clustering_layout` is the
    layout `cluster_method: auto` chose (null for the fixed methods); `last_recluster_*` the table's last
    recluster decision, from its maintenance record. A table that cannot be
    measured (a clustering column it lacks, a view, a bad workload) gets one row with `error` set and
    a log line; the other tables are still measured. -#}
{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='append_new_columns',
    file_format='parquet',
    enabled=var('spark_clustering_audit', true),
) }}

{%- set rows = [] -%}
{#- clustering_information measures when the model runs and returns {} while dbt compiles -#}
{%- if execute -%}
    {%- for node in graph.nodes.values() if node.resource_type == 'model' and node.unique_id != model.unique_id -%}
        {#- the settings chain: cluster_by and cluster_workload in config() or under meta -#}
        {%- set settings = spark_clustering._resolve_settings(node.config) -%}
        {%- set relation = adapter.get_relation(node.database, node.schema, node.alias) if settings.cluster_by.value else none -%}
        {%- if relation is not none -%}
            {%- set workload = settings.cluster_workload.value -%}
            {#- cluster_workload: observed -> the boxes Spark recorded (none yet: no workload ratio) -#}
            {%- set workload = spark_clustering._resolve_workload(workload, relation) -%}
            {#- one broken table (a renamed column, a view, a bad workload) is reported in its own row
                and the log; the others are still measured -#}
            {#- cluster_by 'auto': clustering_information reads the columns the build recorded -#}
            {%- set columns = none if settings.cluster_by.value == 'auto' else settings.cluster_by.value -%}
            {%- set info = spark_clustering.clustering_information(relation, columns, workload, raise_errors=false) -%}
            {%- set method = info.get('method') or node.config.get('materialized') -%}
            {#- the table's last recluster decision, from its maintenance record (the jar's; none without it) -#}
            {%- set history = spark_clustering._maintenance_record(relation).get('history') or [] -%}
            {%- set last = history[-1] if history else {} -%}
            {%- set last_recluster = [last.get('at'), last.get('decision'), last.get('reason'), last.get('bytes_rewritten'),
                                      last.get('expected_saving_bytes')] -%}
            {%- if 'error' in info -%}
                {{ log('spark_clustering_audit: ' ~ node.unique_id ~ ' not measured: ' ~ info['error'], info=true) }}
                {%- do rows.append([
                    invocation_id, run_started_at.isoformat(), node.unique_id, relation | string, method,
                    none, none, none, none, none, none, none, none, none, none, none, info['error'], none,
                ] + last_recluster) -%}
            {%- endif -%}
            {%- for column_name, m in info.get('columns', {}).items() -%}
                {%- do rows.append([
                    invocation_id, run_started_at.isoformat(), node.unique_id, relation | string,
                    method, column_name,
                    m['total_file_count'], m['constant_file_count'], m['null_only_file_count'],
                    m['average_overlaps'], m['average_depth'], m['p95_depth'], m['p99_depth'],
                    tojson(m['depth_histogram']), info['box']['average_overlaps'],
                    info['workload']['mean_ratio'] if workload else none, none, info.get('layout'),
                ] + last_recluster) -%}
            {%- endfor -%}
        {%- endif -%}
    {%- endfor -%}
{%- endif -%}

{{ spark_clustering.typed_values(rows, [
    ['run_id', 'string'], ['run_started_at', 'timestamp'], ['model_id', 'string'], ['relation_name', 'string'],
    ['clustering_method', 'string'], ['column_name', 'string'], ['total_file_count', 'bigint'],
    ['constant_file_count', 'bigint'], ['null_only_file_count', 'bigint'], ['average_overlaps', 'double'],
    ['average_depth', 'double'], ['p95_depth', 'double'], ['p99_depth', 'double'], ['depth_histogram', 'string'],
    ['box_average_overlaps', 'double'], ['workload_mean_ratio', 'double'], ['error', 'string'],
    ['clustering_layout', 'string'], ['last_recluster_at', 'string'], ['last_recluster_decision', 'string'],
    ['last_recluster_reason', 'string'], ['last_recluster_bytes_rewritten', 'bigint'],
    ['last_recluster_expected_saving_bytes', 'double']]) }}
