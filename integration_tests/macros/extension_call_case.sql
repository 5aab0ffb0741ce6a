{#- test_settings: the typed boundary to the jar. Calls the extension's table function `name` through
    spark_clustering._call_extension and prints its rows (dicts by column name), plus the declared
    functions, as `extension_call_case: {...}`. -#}
{% macro extension_call_case(name, arguments) %}
    {%- set rows = spark_clustering._call_extension(name, arguments) -%}
    {{ print('extension_call_case: ' ~ tojson({'rows': rows, 'declared': spark_clustering._extension_table_functions()})) }}
{% endmacro %}
