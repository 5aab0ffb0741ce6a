{% macro tmp_profile_metrics(cases) %}
    {%- for case in cases -%}
        {%- set t0 = modules.datetime.datetime.now() -%}
        {%- set results = [] -%}
        {%- for c in case['columns'] -%}
            {%- do results.append(spark_clustering._column_metrics(case['files'] | map(attribute=loop.index0) | list)) -%}
        {%- endfor -%}
        {%- set t1 = modules.datetime.datetime.now() -%}
        {%- set box = spark_clustering._box_metrics(results) -%}
        {%- set t2 = modules.datetime.datetime.now() -%}
        {{ print("profile: columns " ~ (t1 - t0).total_seconds() ~ " box " ~ (t2 - t1).total_seconds()) }}
    {%- endfor -%}
{% endmacro %}
