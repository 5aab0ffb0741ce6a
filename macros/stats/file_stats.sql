{#- One row per live data file of `relation`: file_path, row_count and, per column c,
    c__min, c__max, c__null_count. Returns the SELECT as a string (for models, tests, run_query). -#}
{% macro file_stats(relation, columns) %}
    {{ return(adapter.dispatch('file_stats', 'spark_clustering')(relation, columns)) }}
{% endmacro %}


{% macro spark__file_stats(relation, columns) %}
    {%- set column_list = spark_clustering._as_column_list(columns, 'file_stats', relation) -%}
    {#- Delta and Iceberg keep every file's bounds in their metadata: taken from there when exact
        for every column asked (the table's kind: metadata_file_stats), no data file read. Otherwise
        the rows, grouped by the column that names a row's data file (Spark's _metadata.file_path,
        renamed when a column of the table is called _metadata; Iceberg's _file): reading the table
        reads exactly its live files; files with zero rows produce no row. -#}
    {%- set detail = spark_clustering._existing_table_detail(relation) -%}
    {%- set kind = spark_clustering._table_kind(detail.provider) if detail is not none else none -%}
    {#- a view cannot keep a call of the jar's table functions (session functions): a view model
        reads the rows -#}
    {%- set in_view = model is defined and model is mapping
                      and (model.get('config') or {}).get('materialized') in ['view', 'materialized_view'] -%}
    {%- if kind is not none -%}
        {%- set from_metadata = kind.metadata_file_stats(relation, column_list, detail) if not in_view else '' -%}
        {%- if from_metadata -%}{{ return(from_metadata) }}{%- endif -%}
        {%- set file_path = kind.file_column(detail.columns) -%}
    {%- else -%}
        {%- set file_path = spark_clustering._metadata_column_of(relation) ~ '.file_path' -%}
    {%- endif -%}
    {%- set sql -%}
select
    {{ file_path }} as file_path,
    count(*) as row_count
    {%- for column_name in column_list %}
    {%- set quoted = spark_clustering._quoted_columns([column_name]) %},
    min({{ quoted }}) as {{ spark_clustering._quoted_suffixed(column_name, '__min') }},
    max({{ quoted }}) as {{ spark_clustering._quoted_suffixed(column_name, '__max') }},
    count(*) - count({{ quoted }}) as {{ spark_clustering._quoted_suffixed(column_name, '__null_count') }}
    {%- endfor %}
from {{ relation }}
group by {{ file_path }}
    {%- endset -%}
    {{ return(sql) }}
{% endmacro %}


{% macro default__file_stats(relation, columns) %}
    {{ spark_clustering._unsupported_adapter('file_stats', "reads a per-file metadata column such as Spark's _metadata.file_path") }}
{% endmacro %}
