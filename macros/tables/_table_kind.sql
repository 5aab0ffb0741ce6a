{#- The one switch on the kind of table. A table is plain (parquet / orc files the package swaps
    and commits itself, under its lease), Delta Lake or Iceberg (their own writer and transaction);
    the provider decides, here and nowhere else. Every step that differs between kinds asks the
    kind for it, so build, measure and recluster read the same whatever the table:

      name                   'plain', 'delta' or 'iceberg'
      build_begin(target, cfg)          before the model's query is read: {existing, lease}
      build_write(target, existing, plan, cfg, lease)   write, validate and commit the build
      version(relation)                 the table's current version (none: plain tables have none)
      file_column(column_names)         SQL naming the data file of a row
      file_place(path, row, settings)   a listed file's {name, scope, from_build}: its level and
                                        run are read from `name`, its scope is where rewrites of it
                                        stay (the table or one partition)
      staging_dir(location, level, run_id)   where a recluster stages the files of one run
      stage(staging, settings, plan, staging_dir, prefix, lease)   write a recluster's files
                                        aside and check them: {row_count, hash_sum, hash_xor,
                                        file_bytes}
      metadata_file_stats(relation, column_list, detail, inexact_column)   file_stats from the
                                        table's metadata, '' where it is not exact (then the rows
                                        are read); with inexact_column, Delta's and Iceberg's say
                                        it in a last column instead (_file_stats_rows)
      after_rewrite(relation, cfg)      what a committed recluster still owes (plain: the
                                        statistics sidecar)
      read_whole_bytes       the size up to which the kind's reader reads a data file whole,
                             whatever columns are asked for (0: never): what a pass over a few
                             columns costs, which the cost policy charges a rewrite's sampling pass
      rewrite_metadata_bytes the bytes of the table's metadata a recluster that rewrites reads
                             beyond one that rewrites nothing (its staging table, its commit, the
                             measure after it), which the cost policy adds to every rewrite's cost

    Listing, reading listed files, committing and recovering are one family of the jar's functions
    for every kind (table_data_files, table_file_rows, table_rewrite_commit, table_rewrite_recover,
    table_committed_rows: the jar decides the kind the same way, TableRewrite.forTable). Implementations: _plain_table.sql,
    _format_table.sql (what Delta and Iceberg share), _delta_table.sql, _iceberg_table.sql. -#}

{#- The kind of a table by its provider (DESCRIBE's, or a model's file_format); none for any other. -#}
{% macro _table_kind(provider) %}
    {%- set name = (provider or '') | string | lower -%}
    {%- if name in ['parquet', 'orc'] -%}
        {{ return(spark_clustering._plain_table_kind()) }}
    {%- elif name == 'delta' -%}
        {{ return(spark_clustering._delta_table_kind()) }}
    {%- elif name == 'iceberg' -%}
        {{ return(spark_clustering._iceberg_table_kind()) }}
    {%- endif -%}
    {{ return(none) }}
{% endmacro %}


{#- The providers a table of the package may have (file_format's choices). -#}
{% macro _table_providers() %}
    {{ return(['parquet', 'orc', 'delta', 'iceberg']) }}
{% endmacro %}


{#- Make the session's temporary view `view` the rows of the listed data files of the table, as of
    `version` (none: as it is now): what a recluster reads to rewrite them. The jar reads them the
    kind's own way (table_file_rows: Delta's and Iceberg's reads of a list of files, the file
    metadata column's filter on a plain table), so no other file of the table is opened; a filter
    on Delta's `_metadata.file_path` or Iceberg's `_file` would open every file. -#}
{% macro _rows_of_files_view(settings, version, paths, view) %}
    {%- do spark_clustering._call_extension('table_file_rows', {'table': settings.table_name,
            'version': version if version is not none else '', 'files': paths, 'view': view}) -%}
{% endmacro %}


{#- A recluster's staging table: the table's format and partitioning, at `staging_dir`. -#}
{% macro _create_staging_table_as(staging, cfg, staging_dir, select_sql, properties={}) %}
    create table {{ staging }}
    using {{ cfg.file_format }}
    {%- if cfg.partition_by %}
    partitioned by ({{ spark_clustering._quoted_columns(cfg.partition_by) }})
    {%- endif %}
    location {{ spark_clustering._sql_literal(staging_dir, 'recluster') }}
    {%- if properties %}
    tblproperties {{ spark_clustering._tblproperties_list(properties) }}
    {%- endif %}
    as
    {{ select_sql }}
{% endmacro %}


{#- A step a kind of table does not need. -#}
{% macro _table_kind_skips(a=none, b=none, c=none, d=none) %}
    {{ return('') }}
{% endmacro %}
