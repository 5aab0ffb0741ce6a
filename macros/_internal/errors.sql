{#- The package's two error shapes: a config or argument mistake, and an adapter it does not support. -#}

{#- One error format for every config mistake: subject (default: the current model), key, value, fix.
    `kind` names where the value came from: a `config` key, or a macro's `argument`. -#}
{% macro _config_error(key, value, fix, subject=none, kind='config') %}
    {%- if subject is none -%}
        {%- set subject = "model '" ~ (model.name if model is defined and model is not none else 'unknown') ~ "'" -%}
    {%- endif -%}
    {%- set msg -%}
        spark_clustering: {{ subject }}: {{ kind }} '{{ key }}' = {{ value | string }} is not valid: {{ fix }}
    {%- endset -%}
    {{ exceptions.raise_compiler_error(msg | trim) }}
{% endmacro %}


{#- The default__ of every dispatched macro: what the macro needs from Spark, and how to add an
    implementation for another adapter. -#}
{% macro _unsupported_adapter(macro_name, needs) %}
    {%- set msg -%}
        spark_clustering.{{ macro_name }}: adapter '{{ adapter.type() }}' is not supported: it {{ needs }}. The package
        runs on spark and databricks (dbt-databricks inherits the spark__ implementations); for another adapter,
        implement {{ adapter.type() }}__{{ macro_name }} in your project and list it in the dispatch config for spark_clustering.
    {%- endset -%}
    {{ exceptions.raise_compiler_error(msg | trim | replace('\n        ', ' ')) }}
{% endmacro %}


{#- "a string 'x'", "a number 5", ...: what the user wrote, for the error text. -#}
{% macro _type_name(value) %}
    {%- if value is none -%}{{ return('none') }}
    {%- elif value is boolean -%}{{ return('a boolean ' ~ (value | string | lower)) }}
    {%- elif value is number -%}{{ return('a number ' ~ value) }}
    {%- elif value is string -%}{{ return("a string '" ~ value ~ "'") }}
    {%- elif value is mapping -%}{{ return('a dict ' ~ value) }}
    {%- elif value is iterable -%}{{ return('a list ' ~ (value | list)) }}
    {%- else -%}{{ return('the value ' ~ value) }}
    {%- endif -%}
{% endmacro %}
