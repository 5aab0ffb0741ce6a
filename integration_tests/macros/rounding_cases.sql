{#- Test-only: spark_clustering._rounded_average(total, count) of every [total, count] in `cases`,
    printed as `rounding_cases: <json list>`. -#}
{% macro rounding_cases(cases) %}
    {%- set results = [] -%}
    {%- for case in cases -%}
        {%- do results.append(spark_clustering._rounded_average(case[0], case[1])) -%}
    {%- endfor -%}
    {{ print("rounding_cases: " ~ tojson(results)) }}
{% endmacro %}
