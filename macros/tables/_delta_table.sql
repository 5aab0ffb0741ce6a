{#- Delta Lake tables: what differs from Iceberg (_format_table.sql holds what they share). -#}

{% macro _delta_table_kind() %}
    {%- set kind = spark_clustering._format_table_kind() -%}
    {%- do kind.update({
        'name': 'delta',
        'version': spark_clustering._delta_table_version,
        'replace_version': spark_clustering._delta_replace_version,
        'version_known_before_commit': true,
        'staging_dir': spark_clustering._delta_staging_dir,
        'metadata_file_stats': spark_clustering._delta_metadata_file_stats,
        'exact_stats_properties': spark_clustering._delta_exact_stats_properties,
        'refuse_layout': spark_clustering._delta_refuse_layout,
        'refuse_unbounded_columns': spark_clustering._delta_refuse_unbounded_columns,
        'restore_sql': spark_clustering._delta_restore_sql,
    }) -%}
    {{ return(kind) }}
{% endmacro %}


{#- The log version (DESCRIBE HISTORY): what time travel (VERSION AS OF) and RESTORE name. -#}
{% macro _delta_table_version(relation) %}
    {{ return(run_query('describe history ' ~ relation ~ ' limit 1').rows[0][0] | int) }}
{% endmacro %}


{#- The version the whole-table write after `previous` committed: the earliest CREATE / REPLACE
    TABLE AS SELECT in the log after it (the last 50 commits), or the current version. Not the
    current version itself: another writer's append may have committed right after it, and a
    blind append racing the replace may even commit between `previous` and it. -#}
{% macro _delta_replace_version(relation, previous) %}
    {%- set history = run_query('describe history ' ~ relation ~ ' limit 50') -%}
    {%- set versions = [] -%}
    {%- for row in history.rows
            if (previous is none or row['version'] | int > previous)
            and row['operation'] in ['CREATE TABLE AS SELECT', 'REPLACE TABLE AS SELECT', 'CREATE OR REPLACE TABLE AS SELECT'] -%}
        {%- do versions.append(row['version'] | int) -%}
    {%- endfor -%}
    {{ return(versions | min if versions else history.rows[0]['version'] | int) }}
{% endmacro %}


{#- A directory of the table, named for the run's level and run (the log keeps its files' paths). -#}
{% macro _delta_staging_dir(location, level, run_id) %}
    {{ return(location ~ '/sc-l' ~ level ~ '-' ~ run_id) }}
{% endmacro %}


{% macro _delta_restore_sql(relation, version) %}
    {{ return('restore table ' ~ relation ~ ' to version as of ' ~ version) }}
{% endmacro %}


{#- Whether the session's Delta knows delta.dataSkippingStringPrefixLength: Delta 4 (Spark 4) does;
    Delta 3 (the releases for Spark 3.5) refuses a table that sets it (DELTA_UNKNOWN_CONFIGURATION)
    and keeps 32 characters of a string bound, which _delta_metadata_file_stats then takes. -#}
{% macro _delta_knows_string_prefix_length() %}
    {%- set version = run_query('select version()').rows[0][0] -%}
    {{ return((version.split('.')[0] | int) >= 4) }}
{% endmacro %}


{#- Table properties under which Delta records exact (untruncated) min/max for the clustering
    columns, for this write and every later writer of the table: string bounds keep a prefix of
    delta.dataSkippingStringPrefixLength characters (default 32); statistics are kept for the first
    32 columns (delta.dataSkippingNumIndexedCols), so a wider table lists the clustering columns
    first in delta.dataSkippingStatsColumns. -#}
{% macro _delta_exact_stats_properties(column_names, cluster_by) %}
    {%- set properties = {} -%}
    {%- if spark_clustering._delta_knows_string_prefix_length() -%}
        {%- do properties.update({'delta.dataSkippingStringPrefixLength': spark_clustering._format_string_bound_length()}) -%}
    {%- endif -%}
    {%- if column_names | length > 32 -%}
        {%- set lowered = cluster_by | map('lower') | list -%}
        {%- set others = [] -%}
        {%- for name in column_names if name | lower not in lowered -%}{%- do others.append(name) -%}{%- endfor -%}
        {%- set indexed = [] -%}
        {%- for name in cluster_by + others[:32 - cluster_by | length] -%}
            {%- do indexed.append(adapter.quote(name)) -%}
        {%- endfor -%}
        {%- do properties.update({'delta.dataSkippingStatsColumns': indexed | join(',')}) -%}
    {%- endif -%}
    {{ return(properties) }}
{% endmacro %}


{#- Liquid clustering the table declares is never replaced silently: Delta's OPTIMIZE would lay the
    files out by it again, and CREATE OR REPLACE would drop it. Delta keeps a liquid table's
    clustering columns in its properties ('[["a"]]', '[]' after CLUSTER BY NONE): no DESCRIBE
    DETAIL, which costs seconds on a table it has not read yet. -#}
{% macro _delta_refuse_layout(target, detail, cluster_by) %}
    {%- set declared = detail.properties.get('clusteringColumns', '') | string -%}
    {%- if declared | replace('[', '') | replace(']', '') | replace('(', '') | replace(')', '') | trim not in ['', 'None'] -%}
        {{ spark_clustering._config_error('cluster_by', cluster_by, "the Delta table " ~ target
            ~ " declares liquid clustering on " ~ declared ~ " (CLUSTER BY): Delta's OPTIMIZE would lay its files "
            ~ "out again by that, and a rebuild would drop it. Run ALTER TABLE " ~ target ~ " CLUSTER BY NONE to hand "
            ~ "its layout to spark_clustering, or materialize the model as a table to keep liquid clustering", none) }}
    {%- endif -%}
{% endmacro %}


{#- Clustering columns Delta would keep no min/max for: its files could not be skipped on them and
    the package could not measure them, so the build stops before it writes. Delta collects no
    bounds for boolean and binary columns (and refuses them in delta.dataSkippingStatsColumns), and
    none for a column its statistics properties, set by the model, leave out. -#}
{% macro _delta_refuse_unbounded_columns(plan, cfg) %}
    {%- set types = {} -%}
    {%- for c in plan.columns -%}{%- do types.update({c.name | lower: c.type}) -%}{%- endfor -%}
    {%- set lowered_names = plan.column_names | map('lower') | list -%}
    {%- set user = config.get('tblproperties') or {} -%}
    {%- set stats_columns = user.get('delta.dataSkippingStatsColumns') -%}
    {%- set indexed = user.get('delta.dataSkippingNumIndexedCols') -%}
    {%- for name in plan.cluster_by -%}
        {%- set type = types.get(name | lower, '') -%}
        {%- if type in ['boolean', 'binary'] -%}
            {{ spark_clustering._config_error('cluster_by', plan.cluster_by, "Delta keeps no min/max statistics for the "
                ~ type ~ " column " ~ name ~ ", so its files could never be skipped on it and its clustering could not be "
                ~ "measured: take " ~ name ~ " out of cluster_by (a column of few values belongs in partition_by), or "
                ~ "cluster on an expression of it computed in the model, e.g. a cast to int", none) }}
        {%- endif -%}
        {%- if stats_columns is not none and name | lower not in (stats_columns | string).split(',') | map('trim') | map('replace', '`', '') | map('lower') | list -%}
            {{ spark_clustering._config_error('tblproperties', "{'delta.dataSkippingStatsColumns': '" ~ stats_columns ~ "'}",
                "it leaves out the clustering column " ~ name ~ ", so Delta would keep no statistics for it: add every "
                ~ "column of cluster_by to it, or drop the property (the package has Delta keep statistics for the "
                ~ "clustering columns)", none) }}
        {%- endif -%}
        {%- if stats_columns is none and indexed is not none and (indexed | int) >= 0 and lowered_names.index(name | lower) >= (indexed | int) -%}
            {{ spark_clustering._config_error('tblproperties', "{'delta.dataSkippingNumIndexedCols': '" ~ indexed ~ "'}",
                "Delta keeps statistics for the first " ~ indexed ~ " columns only, and the clustering column " ~ name
                ~ " is column " ~ (lowered_names.index(name | lower) + 1) ~ ": select the clustering columns first in the "
                ~ "model, raise the property, or drop it", none) }}
        {%- endif -%}
    {%- endfor -%}
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
    the rows; so too without the Spark extension, whose table_data_files reads the log.
    `inexact_column` (_file_stats_sql): the files whose statistics are not exact are counted in
    the same statement (its inexact_files), not by one of their own. -#}
{% macro _delta_metadata_file_stats(relation, column_list, detail, inexact_column=false) %}
    {%- if not spark_clustering._has_extension_function('table_data_files') -%}{{ return('') }}{%- endif -%}
    {%- set properties = detail.properties -%}
    {%- set columns_by_name = spark_clustering._columns_by_name(relation) -%}
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
    from table_data_files({{ spark_clustering._sql_literal(relation.schema ~ '.' ~ relation.identifier, 'file_stats') }})
)
    {%- endset -%}
    {%- if not inexact_column
          and run_query('select count_if(not coalesce(exact, false)) from (' ~ log_files ~ ')').rows[0][0] | int > 0 -%}
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
    {%- if inexact_column %},
    inexact_files
from (select *, count_if(not coalesce(exact, false)) over () as inexact_files from ({{ log_files }}))
where s.numRecords > 0 or inexact_files > 0
    {%- else %}
from ({{ log_files }})
where s.numRecords > 0
    {%- endif %}
    {%- endset -%}
    {{ return(sql) }}
{% endmacro %}
