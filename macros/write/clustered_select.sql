{#- The SELECT that writes clustered files: range-partition on (partition columns, key, raw
    clustering columns) into `num_files` tasks, one file each, sorted within the task by the same
    columns, helper column projected away. The raw columns break key ties, which tightens the
    per-file ranges further (Delta adds random noise there instead). -#}
{% macro clustered_select(from_sql, column_names, cluster_by, key_sql, num_files, partition_by=[]) %}
    {{ return(adapter.dispatch('clustered_select', 'spark_clustering')(from_sql, column_names, cluster_by, key_sql, num_files, partition_by)) }}
{% endmacro %}

{% macro spark__clustered_select(from_sql, column_names, cluster_by, key_sql, num_files, partition_by) %}
    {%- set order = [] -%}
    {#- the key's alias must not be (or shadow) a column of the model -#}
    {%- set key_name = spark_clustering._unused_column_name('__sc_key', column_names) -%}
    {#- Partition columns lead, so the writer's required ordering is already met and no extra sort
        (which need not be stable) reorders the rows inside a file. -#}
    {%- for col in partition_by -%}{%- do order.append(spark_clustering._quoted_columns([col])) -%}{%- endfor -%}
    {%- if key_sql is not none -%}{%- do order.append(key_name) -%}{%- endif -%}
    {%- for col in cluster_by -%}{%- do order.append(spark_clustering._quoted_columns([col])) -%}{%- endfor -%}
    {%- set sql -%}
select /*+ REPARTITION_BY_RANGE({{ num_files }}, {{ order | join(', ') }}) */
    {{ spark_clustering._quoted_columns(column_names) }}
from (
    select *{% if key_sql is not none %}, {{ key_sql }} as {{ key_name }}{% endif %}
    from {{ from_sql }}
)
sort by {{ order | join(', ') }}
    {%- endset -%}
    {{ return(sql) }}
{% endmacro %}


{% macro default__clustered_select(from_sql, column_names, cluster_by, key_sql, num_files, partition_by) %}
    {{ spark_clustering._unsupported_adapter('clustered_select', 'range-partitions with the Spark hint REPARTITION_BY_RANGE and SORT BY') }}
{% endmacro %}
