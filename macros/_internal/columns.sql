{#- Checking the `columns` / `relation` arguments of the measuring macros. Each check has a
    `_problem` form returning the error text or none, for callers that report instead of failing
    (the audit model goes on with the next table). -#}

{#- `columns` as a non-empty list of names (one name is accepted), or a compiler error naming
    the macro that got it. -#}
{% macro _as_column_list(columns, macro_name, relation) %}
    {%- set problem = spark_clustering._column_list_problem(columns, macro_name, relation) -%}
    {%- if problem -%}{{ exceptions.raise_compiler_error(problem) }}{%- endif -%}
    {{ return([columns] if columns is string else columns | list) }}
{% endmacro %}


{% macro _column_list_problem(columns, macro_name, relation) %}
    {%- if columns is string -%}
        {%- set column_list = [columns] -%}
    {%- elif columns is iterable and columns is not mapping -%}
        {%- set column_list = columns | list -%}
    {%- else -%}
        {%- set column_list = [] -%}
    {%- endif -%}
    {%- if column_list | length == 0 or (column_list | reject('string') | list | length) > 0 -%}
        {%- set msg -%}
            {{ macro_name }}: argument `columns` must be a column name or a non-empty list of column names (relation {{ relation }}, got {{ columns }}); pass e.g. columns=['event_time', 'device_id'].
        {%- endset -%}
        {{ return(msg | trim) }}
    {%- endif -%}
    {{ return(none) }}
{% endmacro %}


{#- Every name in column_list must be a column of the relation (Spark names are case-insensitive). -#}
{% macro _missing_columns_problem(column_list, column_types, macro_name, argument_name, relation) %}
    {%- for column_name in column_list if column_name | lower not in column_types -%}
        {%- set msg -%}
            {{ macro_name }}: column '{{ column_name }}' in argument `{{ argument_name }}` is not a column of {{ relation }} (its columns: {{ column_types.keys() | list | join(', ') }}); fix the name.
        {%- endset -%}
        {{ return(msg | trim) }}
    {%- endfor -%}
    {{ return(none) }}
{% endmacro %}


{#- Per-file statistics read the hidden file-metadata column of a table's files: a view has none
    (Spark would answer UNRESOLVED_COLUMN). The error text, or none. -#}
{% macro _file_source_problem(relation, macro_name) %}
    {%- if relation.is_view -%}
        {%- set msg -%}
            {{ macro_name }}: {{ relation }} is a view; per-file statistics need the data files of a table (Spark's _metadata column, which a view does not expose): measure the parquet/orc table the view reads, or materialize the model as a table.
        {%- endset -%}
        {{ return(msg | trim) }}
    {%- endif -%}
    {{ return(none) }}
{% endmacro %}
