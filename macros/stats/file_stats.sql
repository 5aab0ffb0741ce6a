{#- One row per live data file of `relation`: file_path, row_count and, per column c,
    c__min, c__max, c__null_count. Returns the SELECT as a string (for models, tests, run_query). -#}
{% macro file_stats(relation, columns) %}
    {{ return(adapter.dispatch('file_stats', 'spark_clustering')(relation, columns)) }}
{% endmacro %}


{% macro spark__file_stats(relation, columns) %}
    {%- set column_list = spark_clustering._as_column_list(columns, 'file_stats', relation) -%}
    {#- _metadata is the file-source metadata column (parquet, orc, csv, json; partitioned or not):
        reading the table reads exactly its live files; files with zero rows produce no row. Spark
        renames it when a column of the table is called _metadata: _metadata_column_of. -#}
    {%- set meta = spark_clustering._metadata_column_of(relation) -%}
    {%- set sql -%}
select
    {{ meta }}.file_path as file_path,
    count(*) as row_count
    {%- for column_name in column_list %}
    {%- set quoted = '`' ~ column_name | replace('`', '``') ~ '`' %}
    {%- set prefix = '`' ~ column_name | replace('`', '``') %},
    min({{ quoted }}) as {{ prefix }}__min`,
    max({{ quoted }}) as {{ prefix }}__max`,
    count(*) - count({{ quoted }}) as {{ prefix }}__null_count`
    {%- endfor %}
from {{ relation }}
group by {{ meta }}.file_path
    {%- endset -%}
    {{ return(sql) }}
{% endmacro %}


{% macro default__file_stats(relation, columns) %}
    {{ exceptions.raise_compiler_error(
        "file_stats: adapter '" ~ adapter.type() ~ "' is not supported (relation " ~ relation ~ "). "
        ~ "Per-file statistics need a per-file metadata column such as Spark's _metadata.file_path; "
        ~ "implement " ~ adapter.type() ~ "__file_stats(relation, columns) in your project and list it "
        ~ "in the dispatch config for spark_clustering."
    ) }}
{% endmacro %}

