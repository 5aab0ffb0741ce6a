{#- (Re)build the file-statistics sidecar of a parquet/orc table: per data file its row count and,
    per column, min / max / NULL count, exact: taken from the file's footer when it proves every
    column exactly (no read of the rows), else computed from the rows (INT96 timestamps, float
    maxima and long strings included), kept in `<table location>/_sc_file_stats/` keyed by
    file path + size + modification time. The Spark extension's data skipping reads it at query
    planning (docs/data_skipping.md); files it does not know fall back to their footers.
    `clustered_table` and `recluster()` call it after they write; run it on any other table with
        dbt run-operation write_file_stats --args '{relation: my_schema.my_table}'
    Only files the sidecar does not cover yet are read, unless rebuild=true, and of their rows only
    the columns some footer does not prove. Returns {relation, files, files_scanned, sidecar,
    elapsed_ms, rows, bytes, columns_scanned} (rows and bytes: totals over the files the sidecar now
    covers; columns_scanned: the columns the job read, [] when footers proved everything); under
    run-operation also printed as one JSON line `write_file_stats: {...}`. -#}
{% macro write_file_stats(relation=none, rebuild=false) %}
    {{ return(adapter.dispatch('write_file_stats', 'spark_clustering')(relation, rebuild)) }}
{% endmacro %}


{% macro spark__write_file_stats(relation, rebuild) %}
    {%- if not execute -%}{{ return(none) }}{%- endif -%}
    {%- do spark_clustering._require_bool('rebuild', rebuild, 'write_file_stats', 'argument') -%}
    {%- set relation = spark_clustering._resolve_relation(relation, 'write_file_stats') -%}
    {%- if not spark_clustering._has_extension_function('write_file_stats') -%}
        {%- do spark_clustering._missing_extension('write_file_stats: ' ~ relation, ['write_file_stats']) -%}
    {%- endif -%}
    {%- set result = spark_clustering._run_write_file_stats(relation, rebuild) -%}
    {%- do spark_clustering._print_if_run_operation('write_file_stats', result) -%}
    {{ return(result) }}
{% endmacro %}


{% macro default__write_file_stats(relation, rebuild) %}
    {{ spark_clustering._unsupported_adapter('write_file_stats', 'writes the statistics sidecar that the Spark extension reads to skip files of plain parquet/orc tables') }}
{% endmacro %}


{#- The write_file_stats table function on `relation` (the extension must be loaded), as a dict.
    `own_write`: this session wrote every file the sidecar does not cover yet, just before (the jar
    then takes parquet string bounds from footers its writer's settings keep whole). -#}
{% macro _run_write_file_stats(relation, rebuild=false, own_write=false) %}
    {%- set row = spark_clustering._call_extension('write_file_stats', {'table': relation, 'rebuild': rebuild,
                                                                         'own_write': own_write})[0] -%}
    {%- set columns_scanned = fromjson(row.columns_scanned) if row.columns_scanned is string else row.columns_scanned | list -%}
    {{ return({'relation': relation | string, 'files': row.files | int, 'files_scanned': row.files_scanned | int,
               'sidecar': row.sidecar, 'elapsed_ms': row.elapsed_ms | int, 'rows': row.rows | int, 'bytes': row.bytes | int,
               'columns_scanned': columns_scanned}) }}
{% endmacro %}
