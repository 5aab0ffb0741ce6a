{#- bench_recluster_measure.py: the SQL file_stats runs for each table (what a recluster's measure
    step and clustering_information run), printed as one JSON line. -#}
{% macro measure_file_stats_sql(schema, tables, columns) %}
    {%- set sql_by_table = {} -%}
    {%- for table in tables -%}
        {%- do sql_by_table.update({table: spark_clustering.file_stats(api.Relation.create(schema=schema, identifier=table), columns)}) -%}
    {%- endfor -%}
    {{ print("measure_file_stats_sql: " ~ tojson(sql_by_table)) }}
{% endmacro %}
