{#- Config and argument validation from a small spec: each _require_* returns the value (defaulted,
    normalized) or raises _config_error naming subject, key, value and the fix. `subject` none means
    the current model; `kind` is 'config' or 'argument'. -#}

{#- A real boolean: a string 'false' is truthy, so only true/false may switch anything. -#}
{% macro _require_bool(key, value, subject=none, kind='config') %}
    {%- if value is not boolean -%}
        {%- set fix -%}use true or false (a boolean, not {{ spark_clustering._type_name(value) }}){%- endset -%}
        {{ spark_clustering._config_error(key, value, fix, subject, kind) }}
    {%- endif -%}
    {{ return(value) }}
{% endmacro %}


{#- A number (booleans refused) in [min, max]; integer=true also refuses fractions and returns an
    int. `fix` is the error's advice; `shown` the value to print (default: value). -#}
{% macro _require_number(key, value, fix, min=none, max=none, integer=false, subject=none, kind='config', shown=none) %}
    {%- set ok = value is number and value is not boolean
                 and (not integer or value == (value | int))
                 and (min is none or value >= min) and (max is none or value <= max) -%}
    {%- if not ok -%}
        {{ spark_clustering._config_error(key, value if shown is none else shown, fix, subject, kind) }}
    {%- endif -%}
    {{ return((value | int) if integer else value) }}
{% endmacro %}


{#- One of `choices` (strings). -#}
{% macro _require_choice(key, value, choices, fix=none, subject=none, kind='config') %}
    {%- if value is not string or value not in choices -%}
        {{ spark_clustering._config_error(key, value, fix or ('use one of: ' ~ choices | join(', ')), subject, kind) }}
    {%- endif -%}
    {{ return(value) }}
{% endmacro %}


{#- A column name or a list of column names (non-empty strings) as a list; `example` completes the
    fix, e.g. "cluster_by=['mission_id', 'ts']". An empty list passes (callers decide). -#}
{% macro _require_name_list(key, value, example, subject=none) %}
    {%- if value is string -%}{{ return([value]) }}{%- endif -%}
    {#- a dict iterates its keys and a number not at all: both must be refused here, by type -#}
    {%- if value is mapping or value is not iterable -%}
        {%- set fix -%}it is {{ spark_clustering._type_name(value) }}; set it to a column name or a list of column names, e.g. {{ example }}{%- endset -%}
        {{ spark_clustering._config_error(key, value, fix, subject) }}
    {%- endif -%}
    {%- set names = value | list -%}
    {%- for name in names if name is not string or name | trim == '' -%}
        {%- set fix -%}every entry must be a column name (a non-empty string); {{ name | string }} is {{ spark_clustering._type_name(name) }}{%- endset -%}
        {{ spark_clustering._config_error(key, names, fix, subject) }}
    {%- endfor -%}
    {{ return(names) }}
{% endmacro %}
