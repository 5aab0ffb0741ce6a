{#- Name and Spark type of every column a query returns, in order: [{'name': .., 'type': ..}]. -#}
{% macro describe_columns(sql) %}
    {{ return(adapter.dispatch('describe_columns', 'spark_clustering')(sql)) }}
{% endmacro %}

{% macro spark__describe_columns(sql) %}
    {%- set columns = [] -%}
    {%- if execute -%}
        {#- DESCRIBE QUERY types the output without running the query. -#}
        {%- set described = run_query('describe query ' ~ sql) -%}
        {%- for row in described.rows -%}
            {%- if row[0] and not row[0].startswith('#') -%}
                {%- do columns.append({'name': row[0], 'type': row[1] | lower}) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return(columns) }}
{% endmacro %}

{% macro default__describe_columns(sql) %}
    {{ spark_clustering._unsupported_adapter('describe_columns', 'types a query with Spark SQL DESCRIBE QUERY') }}
{% endmacro %}
