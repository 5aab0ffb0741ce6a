{#- One row per live data file of `relation`: file_path, row_count and, per column c,
    c__min, c__max, c__null_count. Returns the SELECT as a string (for models, tests, run_query). -#}
{% macro file_stats(relation, columns) %}
    {{ return(adapter.dispatch('file_stats', 'spark_clustering')(relation, columns)) }}
{% endmacro %}


{% macro spark__file_stats(relation, columns) %}
    {%- set column_list = spark_clustering._as_column_list(columns, 'file_stats', relation) -%}
    {#- Delta and Iceberg keep every file's bounds in their metadata: taken from there when exact
        for every column asked, no data file read. Otherwise the rows: _metadata is the file-source
        metadata column (parquet, orc, csv, json, Delta; partitioned or not): reading the table
        reads exactly its live files; files with zero rows produce no row. Spark renames it when a
        column of the table is called _metadata: _metadata_column_of. Iceberg names a row's data
        file by its own hidden column _file. -#}
    {%- set detail = spark_clustering._existing_table_detail(relation) -%}
    {%- set provider = detail.provider if detail is not none else none -%}
    {%- set columns_by_name = {} -%}
    {%- if provider in ['delta', 'iceberg'] -%}
        {#- the columns' types decide where the metadata's bounds are exact (one DESCRIBE for both formats) -#}
        {%- for c in spark_clustering.describe_columns('select * from ' ~ relation) -%}
            {%- do columns_by_name.update({c.name | lower: c}) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- if provider == 'delta' -%}
        {%- set from_log = spark_clustering._delta_file_stats(relation, column_list, detail.properties, columns_by_name) -%}
        {%- if from_log -%}{{ return(from_log) }}{%- endif -%}
    {%- endif -%}
    {%- if provider == 'iceberg' -%}
        {%- set from_metadata = spark_clustering._iceberg_file_stats(relation, column_list, detail.properties, columns_by_name) -%}
        {%- if from_metadata -%}{{ return(from_metadata) }}{%- endif -%}
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


{#- An Iceberg table's file statistics from its `files` metadata table (its manifests: no data file
    is read), when they are exact for every column asked: the column's metrics mode is `full`
    (what clustered_table and recluster set for the clustering columns), or `truncate(n)` on a
    column that is neither string nor binary (only those are truncated); never for float/double
    (Iceberg's bounds leave NaN out, Spark's max counts it as the largest value) and never while
    the table has row-level delete files (the bounds and record counts would include deleted rows).
    Otherwise '' and file_stats reads the rows. -#}
{% macro _iceberg_file_stats(relation, column_list, properties, columns_by_name) %}
    {%- set default_mode = properties.get('write.metadata.metrics.default', 'truncate(16)') | lower -%}
    {%- for name in column_list -%}
        {%- set mode = properties.get('write.metadata.metrics.column.' ~ name, default_mode) | lower -%}
        {%- set type = (columns_by_name.get(name | lower) or {}).get('type', '') -%}
        {%- if type in ['float', 'double'] or not (mode == 'full' or (mode.startswith('truncate') and type not in ['string', 'binary'])) -%}
            {{ return('') }}
        {%- endif -%}
    {%- endfor -%}
    {%- if run_query('select count(*) from ' ~ relation ~ '.delete_files').rows[0][0] | int > 0 -%}
        {{ return('') }}
    {%- endif -%}
    {%- set sql -%}
select
    file_path,
    record_count as row_count
    {%- for column_name in column_list %}
    {%- set metrics = 'readable_metrics.' ~ spark_clustering._quoted_columns([column_name]) %},
    {{ metrics }}.lower_bound as {{ spark_clustering._quoted_suffixed(column_name, '__min') }},
    {{ metrics }}.upper_bound as {{ spark_clustering._quoted_suffixed(column_name, '__max') }},
    {{ metrics }}.null_value_count as {{ spark_clustering._quoted_suffixed(column_name, '__null_count') }}
    {%- endfor %}
from {{ relation }}.files
where content = 0 and record_count > 0
    {%- endset -%}
    {{ return(sql) }}
{% endmacro %}


{#- A Delta table's file statistics from its log (each live file's `add.stats`: no data file is
    read), when they are exact for every column asked and every file. Delta's bounds are exact for
    integral, decimal and date columns and for strings shorter than the table's
    delta.dataSkippingStringPrefixLength (clustered_table sets 1024; a longer string is cut to the
    prefix, the max with a tie-breaker appended); never for timestamps (kept in milliseconds),
    float/double (as on Iceberg), a column Delta collects no statistics for (the log has no
    nullCount for it), a file with a deletion vector (its statistics count deleted rows and its
    bounds may be wide), or a table with column mapping (the log names columns by physical names).
    The string rule is taken in bytes (octet_length), never shorter than Delta's UTF-16 length, so
    a bound that might have been cut is never taken as exact. Otherwise '' and file_stats reads
    the rows. -#}
{% macro _delta_file_stats(relation, column_list, properties, columns_by_name) %}
    {%- if (properties.get('delta.columnMapping.mode', 'none') | lower) != 'none' -%}{{ return('') }}{%- endif -%}
    {%- set prefix_length = properties.get('delta.dataSkippingStringPrefixLength', '32') | int -%}
    {%- set bounded = [] -%}
    {%- set exact = ['not has_row_deletes', 's.numRecords is not null'] -%}
    {%- for name in column_list -%}
        {%- set column = columns_by_name.get(name | lower) -%}
        {%- if column is none or column.type.split('(')[0] not in ['tinyint', 'smallint', 'int', 'bigint', 'decimal', 'date', 'string'] -%}
            {{ return('') }}
        {%- endif -%}
        {%- do bounded.append(column) -%}
        {%- set quoted = spark_clustering._quoted_columns([column.name]) -%}
        {%- set bounds_exact = 's.minValues.' ~ quoted ~ ' is not null and s.maxValues.' ~ quoted ~ ' is not null' -%}
        {%- if column.type == 'string' -%}
            {%- set bounds_exact = bounds_exact ~ ' and octet_length(s.minValues.' ~ quoted ~ ') < ' ~ prefix_length
                                   ~ ' and octet_length(s.maxValues.' ~ quoted ~ ') < ' ~ prefix_length -%}
        {%- endif -%}
        {%- do exact.append('s.nullCount.' ~ quoted ~ ' is not null and (s.nullCount.' ~ quoted
                            ~ ' = s.numRecords or (' ~ bounds_exact ~ '))') -%}
    {%- endfor -%}
    {%- set value_schema = [] -%}
    {%- set count_schema = [] -%}
    {%- for column in bounded -%}
        {%- do value_schema.append(spark_clustering._quoted_columns([column.name]) ~ ': ' ~ column.type) -%}
        {%- do count_schema.append(spark_clustering._quoted_columns([column.name]) ~ ': bigint') -%}
    {%- endfor -%}
    {%- set schema = 'struct<numRecords: bigint, minValues: struct<' ~ value_schema | join(', ') ~ '>, maxValues: struct<'
                     ~ value_schema | join(', ') ~ '>, nullCount: struct<' ~ count_schema | join(', ') ~ '>>' -%}
    {%- set log_files -%}
select file_path, s, {{ exact | join(' and ') }} as exact
from (
    select file_path, has_row_deletes, from_json(log_stats, {{ spark_clustering._sql_literal(schema, 'file_stats') }}) as s
    from format_data_files({{ spark_clustering._sql_literal(relation.schema ~ '.' ~ relation.identifier, 'file_stats') }}, 'delta')
)
    {%- endset -%}
    {%- if run_query('select count_if(not coalesce(exact, false)) from (' ~ log_files ~ ')').rows[0][0] | int > 0 -%}
        {{ return('') }}
    {%- endif -%}
    {%- set sql -%}
select
    file_path,
    s.numRecords as row_count
    {%- for column in bounded %}
    {%- set quoted = spark_clustering._quoted_columns([column.name]) %},
    s.minValues.{{ quoted }} as {{ spark_clustering._quoted_suffixed(column.name, '__min') }},
    s.maxValues.{{ quoted }} as {{ spark_clustering._quoted_suffixed(column.name, '__max') }},
    s.nullCount.{{ quoted }} as {{ spark_clustering._quoted_suffixed(column.name, '__null_count') }}
    {%- endfor %}
from ({{ log_files }})
where s.numRecords > 0
    {%- endset -%}
    {{ return(sql) }}
{% endmacro %}


{% macro default__file_stats(relation, columns) %}
    {{ spark_clustering._unsupported_adapter('file_stats', "reads a per-file metadata column such as Spark's _metadata.file_path") }}
{% endmacro %}
