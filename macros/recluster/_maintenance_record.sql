{#- TEMPORARY stand-in until the jar keeps the record (wip/noop): a table property. -#}
{% macro _maintenance_record(relation) %}
    {%- set detail = spark_clustering._table_detail(relation) -%}
    {%- set text = detail.properties.get('spark_clustering.maintenance_record') -%}
    {{ return(fromjson(text) if text else {}) }}
{% endmacro %}

{% macro _save_maintenance_record(relation, fields) %}
    {%- set record = spark_clustering._maintenance_record(relation) -%}
    {%- do record.update(fields) -%}
    {% call statement('spark_clustering_maintenance_record') -%}
        {{ spark_clustering._set_tblproperties_sql(relation, {'spark_clustering.maintenance_record': tojson(record)}) }}
    {%- endcall %}
{% endmacro %}
