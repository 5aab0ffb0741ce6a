{#- One row per live data file of `relation`: file_path, row_count and, per column c,
    c__min, c__max, c__null_count. Returns the SELECT as a string (for models, tests, run_query). -#}
{% macro file_stats(relation, columns) %}
    {{ return(adapter.dispatch('file_stats', 'spark_clustering')(relation, columns)) }}
{% endmacro %}


{% macro spark__file_stats(relation, columns) %}
    {%- set column_list = spark_clustering._as_column_list(columns, 'file_stats', relation) -%}
    {#- _metadata is the file-source metadata column (parquet, orc, csv, json, Delta; partitioned or
        not): reading the table reads exactly its live files; files with zero rows produce no row.
        Spark renames it when a column of the table is called _metadata: _metadata_column_of.
        Iceberg names a row's data file by its own hidden column _file. -#}
    {%- if spark_clustering._is_iceberg(relation) -%}
        {%- set file_path = '_file' -%}
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
