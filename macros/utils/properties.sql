{#- Table properties the package writes and reads back (spark_clustering.cluster_by, ...). -#}

{#- `alter table <relation> set tblproperties ('key' = 'value', ...)` for a dict of properties.
    Lists and dicts are stored as JSON, so a column `x,y` stays one name; booleans as true/false;
    every key and value goes through _sql_literal, so a quote, backslash or non-ASCII character in a
    column name cannot break the statement. -#}
{% macro _set_tblproperties_sql(relation, properties) %}
    {%- set pairs = [] -%}
    {%- for key, value in properties.items() -%}
        {%- if value is none -%}
            {%- set text = '' -%}
        {%- elif value is boolean -%}
            {%- set text = 'true' if value else 'false' -%}
        {%- elif value is mapping -%}
            {%- set text = tojson(value) -%}
        {%- elif value is iterable and value is not string -%}
            {%- set text = tojson(value | list) -%}
        {%- else -%}
            {%- set text = value | string -%}
        {%- endif -%}
        {%- do pairs.append(spark_clustering._sql_literal(key | string, 'tblproperties') ~ ' = '
                            ~ spark_clustering._sql_literal(text, 'tblproperties')) -%}
    {%- endfor -%}
    {{ return('alter table ' ~ relation ~ ' set tblproperties (' ~ pairs | join(', ') ~ ')') }}
{% endmacro %}


{#- A list property written by _set_tblproperties_sql (JSON), or by earlier versions of the package
    (comma-separated, when the text does not start with '['); none when empty or unset. -#}
{% macro _list_property(text) %}
    {%- if text is none or text | trim == '' -%}{{ return(none) }}{%- endif -%}
    {%- if (text | trim).startswith('[') -%}
        {{ return(fromjson(text | trim)) }}
    {%- endif -%}
    {{ return(text.split(',')) }}
{% endmacro %}
