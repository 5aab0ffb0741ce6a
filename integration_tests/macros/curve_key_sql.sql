{#- Test-only: render the package's curve macros for many cases in ONE dbt call.
    cases: list of {"name", "source": a SELECT, "columns": {alias: spec}} where spec is
    {"function": range_id | zorder_key | hilbert_key | roundest_key, "backend" (optional), and
    "value" + "boundaries" (range_id), "bits" + "ids" (keys) or "lo" + "hi" (roundest_key, the
    file-cut helper of macros/write/_write_plan.sql)}. Each case becomes the temporary view
    `<name>` = select *, <expression> as <alias>, ... from (source) on the session dbt shares with
    the tests. -#}
{% macro curve_key_sql(cases) %}
    {%- for case in cases -%}
        {%- set selects = [] -%}
        {%- for alias, spec in case['columns'].items() -%}
            {%- set expr = curve_key_expression(spec) -%}
            {%- do selects.append(expr ~ ' as ' ~ alias) -%}
        {%- endfor -%}
        {%- if case.get('source') -%}
            {%- do run_query('create or replace temporary view ' ~ case['name'] ~ ' as select *, '
                             ~ selects | join(', ') ~ ' from (' ~ case['source'] ~ ')') -%}
        {%- endif -%}
    {%- endfor -%}
{% endmacro %}

{% macro curve_key_expression(spec) %}
    {%- if spec['function'] == 'range_id' -%}
        {{ return(spark_clustering.range_id(spec['value'], spec['boundaries'], spec.get('backend'))) }}
    {%- elif spec['function'] == 'zorder_key' -%}
        {{ return(spark_clustering.zorder_key(spec['bits'], spec['ids'], spec.get('backend'))) }}
    {%- elif spec['function'] == 'hilbert_key' -%}
        {{ return(spark_clustering.hilbert_key(spec['bits'], spec['ids'], spec.get('backend'))) }}
    {%- elif spec['function'] == 'roundest_key' -%}
        {{ return(spark_clustering._roundest_key(spec['lo'], spec['hi'])) }}
    {%- endif -%}
    {{ exceptions.raise_compiler_error('curve_key_sql: unknown function ' ~ spec['function']) }}
{% endmacro %}

{#- The expression of one spec as a JSON string on stdout (`curve_key_expression: "..."`), for the
    benchmark's SQL-fallback rows. -#}
{% macro print_curve_key_expression(spec) %}
    {{ print('curve_key_expression: ' ~ tojson(curve_key_expression(spec))) }}
{% endmacro %}
