{#- History of clustering quality: one row per (run, model with `cluster_by`, column), appended on
    every run, so drift between rebuilds and reclusters is visible. Run it after the models it
    measures (`dbt run -s spark_clustering_audit`, or last in a job); switch it off with
    `--vars '{spark_clustering_audit: false}'`. A model's `cluster_workload` config or meta key (a
    list of {column: [lo, hi]} boxes) adds the workload's files-scanned ratio. A table that cannot be
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
{#- measured when the model runs, not when it compiles (dbt compile / docs generate) -#}
{%- if spark_clustering._measure_now() -%}
    {%- for node in graph.nodes.values()
            if node.resource_type == 'model' and node.config.get('cluster_by') and node.unique_id != model.unique_id -%}
        {%- set relation = adapter.get_relation(node.database, node.schema, node.alias) -%}
        {%- if relation is not none -%}
            {%- set workload = spark_clustering._node_config(node, 'cluster_workload') -%}
            {#- one broken table (a renamed column, a view, a bad workload) is reported in its own row
                and the log; the others are still measured -#}
            {%- set info = spark_clustering._clustering_information(relation, node.config.get('cluster_by'), workload, false) -%}
            {%- set props = {} -%}
            {%- for row in run_query('show tblproperties ' ~ relation).rows -%}
                {%- do props.update({row[0]: row[1]}) -%}
            {%- endfor -%}
            {%- set method = props.get('spark_clustering.method', node.config.get('materialized')) -%}
            {%- if 'error' in info -%}
                {{ log('spark_clustering_audit: ' ~ node.unique_id ~ ' not measured: ' ~ info['error'], info=true) }}
                {%- do rows.append([
                    invocation_id, run_started_at.isoformat(), node.unique_id, relation | string, method,
                    none, none, none, none, none, none, none, none, none, none, none, info['error'],
                ]) -%}
            {%- endif -%}
            {%- for column_name, m in info.get('columns', {}).items() -%}
                {%- do rows.append([
                    invocation_id, run_started_at.isoformat(), node.unique_id, relation | string,
                    method, column_name,
                    m['total_file_count'], m['constant_file_count'], m['null_only_file_count'],
                    m['average_overlaps'], m['average_depth'], m['p95_depth'], m['p99_depth'],
                    tojson(m['depth_histogram']), info['box']['average_overlaps'],
                    info['workload']['mean_ratio'] if workload else none, none,
                ]) -%}
            {%- endfor -%}
        {%- endif -%}
    {%- endfor -%}
{%- endif -%}

with measured as (
    select *
    from
        values
        {%- for r in rows %}
            ({% for v in r %}{{ spark_clustering._sql_literal(v, 'spark_clustering_audit') }}{% if not loop.last %}, {% endif %}{% endfor %}){% if not loop.last %},{% endif %}
        {%- else %}
            -- nothing measured yet: an empty, typed result
            (null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null)
        {%- endfor %}
            as audit_rows (
                run_id, run_started_at, model_id, relation_name, clustering_method, column_name,
                total_file_count, constant_file_count, null_only_file_count, average_overlaps,
                average_depth, p95_depth, p99_depth, depth_histogram, box_average_overlaps,
                workload_mean_ratio, error
            )
)

select
    cast(run_id as string) as run_id,
    cast(run_started_at as timestamp) as run_started_at,
    cast(model_id as string) as model_id,
    cast(relation_name as string) as relation_name,
    cast(clustering_method as string) as clustering_method,
    cast(column_name as string) as column_name,
    cast(total_file_count as bigint) as total_file_count,
    cast(constant_file_count as bigint) as constant_file_count,
    cast(null_only_file_count as bigint) as null_only_file_count,
    cast(average_overlaps as double) as average_overlaps,
    cast(average_depth as double) as average_depth,
    cast(p95_depth as double) as p95_depth,
    cast(p99_depth as double) as p99_depth,
    cast(depth_histogram as string) as depth_histogram,
    cast(box_average_overlaps as double) as box_average_overlaps,
    cast(workload_mean_ratio as double) as workload_mean_ratio,
    cast(error as string) as error
from measured
{%- if rows | length == 0 %}
    where false
{%- endif %}
