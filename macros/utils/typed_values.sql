{#- A SELECT of literal rows with named, typed columns: `rows` is a list of lists of Python values
    (none, booleans, numbers, strings, dates), `columns` a list of [name, Spark type]. No rows gives
    the same columns and no rows, so a model or a generic test has one shape whether or not it
    measured anything. The audit model and the generic tests return their measurements through it. -#}
{% macro typed_values(rows, columns) %}
    {%- set names = [] -%}
    {%- set casts = [] -%}
    {%- for name, type in columns -%}
        {%- do names.append(spark_clustering._quoted_columns([name])) -%}
        {%- do casts.append('cast(' ~ spark_clustering._quoted_columns([name]) ~ ' as ' ~ type ~ ') as ' ~ spark_clustering._quoted_columns([name])) -%}
    {%- endfor -%}
    {%- set tuples = [] -%}
    {%- for row in rows -%}
        {%- set literals = [] -%}
        {%- for value in row -%}{%- do literals.append(spark_clustering._sql_literal(value, 'typed_values')) -%}{%- endfor -%}
        {%- do tuples.append('(' ~ literals | join(', ') ~ ')') -%}
    {%- endfor -%}
    {%- if not tuples -%}
        {#- one all-NULL row, filtered out: typed by the casts -#}
        {%- set nulls = [] -%}
        {%- for _ in columns -%}{%- do nulls.append('null') -%}{%- endfor -%}
        {%- do tuples.append('(' ~ nulls | join(', ') ~ ')') -%}
    {%- endif -%}
    {%- set sql -%}
select {{ casts | join(', ') }}
from values {{ tuples | join(', ') }} as typed_values ({{ names | join(', ') }})
{%- if not rows %}
where false
{%- endif %}
    {%- endset -%}
    {{ return(sql) }}
{% endmacro %}
