{#- Test-only: evaluate the package's metric core on synthetic per-file ranges in ONE dbt call.
    cases: list of {"columns": [...], "files": [[[lo, hi] or null per column], ...]}.
    Prints `metrics_core_cases: <json list of results>`; each result carries its Jinja seconds. -#}
{% macro metrics_core_cases(cases) %}
    {%- set results = [] -%}
    {%- for case in cases -%}
        {%- set started = modules.datetime.datetime.now() -%}
        {%- set result = spark_clustering._clustering_metrics(case['files'], case['columns']) -%}
        {%- do result.update({"seconds": (modules.datetime.datetime.now() - started).total_seconds()}) -%}
        {%- do results.append(result) -%}
    {%- endfor -%}
    {{ print("metrics_core_cases: " ~ tojson(results)) }}
{% endmacro %}
