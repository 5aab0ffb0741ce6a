{#- One row per live data file of `relation`: file_path, row_count and, per column c,
    c__min, c__max, c__null_count. Returns the SELECT as a string (for models, tests, run_query). -#}
{% macro file_stats(relation, columns) %}
    {{ return(adapter.dispatch('file_stats', 'spark_clustering')(relation, columns)) }}
{% endmacro %}


{% macro spark__file_stats(relation, columns) %}
    {{ return(spark_clustering._file_stats_sql(relation, columns, spark_clustering._existing_table_detail(relation))) }}
{% endmacro %}


{#- file_stats' SELECT for a caller that already has the table's DESCRIBE (`detail`: _table_detail;
    none for a query or a missing table), so it is not read twice. `inexact_column`: a Delta or
    Iceberg table's SELECT from its metadata does not first ask whether the metadata is exact (a
    statement of its own); it adds a last column, inexact_files (on every row: the table's files
    whose metadata is not exact), and keeps the rows of those files, for _file_stats_rows. `rows`:
    the SELECT over the rows, whatever the metadata holds. -#}
{% macro _file_stats_sql(relation, columns, detail, inexact_column=false, rows=false) %}
    {%- set column_list = spark_clustering._as_column_list(columns, 'file_stats', relation) -%}
    {#- Delta and Iceberg keep every file's bounds in their metadata: taken from there when exact
        for every column asked (the table's kind: metadata_file_stats), no data file read. Otherwise
        the rows, grouped by the column that names a row's data file (Spark's _metadata.file_path,
        renamed when a column of the table is called _metadata; Iceberg's _file): reading the table
        reads exactly its live files; files with zero rows produce no row. -#}
    {%- set kind = spark_clustering._table_kind(detail.provider) if detail is not none else none -%}
    {#- a view cannot keep a call of the jar's table functions (session functions): a view model
        reads the rows -#}
    {%- set in_view = model is defined and model is mapping
                      and (model.get('config') or {}).get('materialized') in ['view', 'materialized_view'] -%}
    {%- if kind is not none -%}
        {%- set from_metadata = kind.metadata_file_stats(relation, column_list, detail, inexact_column)
                                if not in_view and not rows else '' -%}
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


{#- file_stats' rows (an agate table) for a caller that has the table's DESCRIBE: on Delta and Iceberg
    one statement reads the bounds from the metadata and says in the same result whether they are
    exact (_file_stats_sql's inexact_column); only when they are not, a second reads the rows. -#}
{% macro _file_stats_rows(relation, columns, detail) %}
    {%- set stats = run_query(spark_clustering._file_stats_sql(relation, columns, detail, inexact_column=true)) -%}
    {%- if 'inexact_files' in stats.column_names and stats.rows | length > 0 and stats.rows[0]['inexact_files'] | int > 0 -%}
        {%- set stats = run_query(spark_clustering._file_stats_sql(relation, columns, detail, rows=true)) -%}
    {%- endif -%}
    {{ return(stats) }}
{% endmacro %}


{% macro default__file_stats(relation, columns) %}
    {{ spark_clustering._unsupported_adapter('file_stats', "reads a per-file metadata column such as Spark's _metadata.file_path") }}
{% endmacro %}
