{#- Plain tables (parquet, orc): no log of their own, so the package makes every write safe itself.
    A build is written aside as a staging table, validated (row count, or an order-independent
    checksum, against the model query) and swapped into place under the table's lease; the
    previous table stays readable until the new one is complete (dbt-spark's `table` drops a
    parquet table before rebuilding it). A recluster stages its files in a hidden directory of the
    table (on S3A as pending uploads to their final names) and commits them with the jar's
    journaled file swap (docs/concurrency.md). rewrite_metadata_bytes: not measured on plain tables,
    so no fixed part is priced. -#}

{% macro _plain_table_kind() %}
    {{ return({
        'name': 'plain',
        'build_begin': spark_clustering._plain_build_begin,
        'build_write': spark_clustering._plain_build_write,
        'version': spark_clustering._plain_table_version,
        'file_column': spark_clustering._plain_file_column,
        'file_place': spark_clustering._plain_file_place,
        'staging_dir': spark_clustering._plain_staging_dir,
        'stage': spark_clustering._plain_stage,
        'metadata_file_stats': spark_clustering._plain_metadata_file_stats,
        'after_rewrite': spark_clustering._write_file_stats_after_write,
        'read_whole_bytes': 0,
        'rewrite_metadata_bytes': 0,
    }) }}
{% endmacro %}


{#- One writer of the package per table (a recluster of it waits, or it waits for one); then
    finish or roll back whatever an interrupted run left, before reading the current state. -#}
{% macro _plain_build_begin(target, cfg) %}
    {%- set lease = spark_clustering._table_lease_acquire(target, 'name', 'clustered_table ' ~ model.name, cfg.lease_wait_seconds) -%}
    {%- do spark_clustering.recover_swap(target) -%}
    {{ return({'existing': adapter.get_relation(database=target.database, schema=target.schema, identifier=target.identifier),
               'lease': lease}) }}
{% endmacro %}


{% macro _plain_build_write(target, existing, plan, cfg, lease) %}
    {%- do spark_clustering._plain_int96_note(plan, cfg) -%}
    {%- set staging = spark_clustering._sidecar_relation(target, 'staging') -%}
    {%- set build_location = spark_clustering._build_location(target, cfg) -%}
    {% call statement('main') -%}
        {{ spark_clustering._create_clustered_table_as(staging, plan.select_sql, cfg, build_location) }}
    {%- endcall %}
    {%- do spark_clustering._test_hook('clustered_table.after_staging_write') -%}
    {#- statistics for data skipping, keyed by paths relative to the table directory: they stay
        valid through the swap (the files do not move, or move with their directory); their
        per-file row counts are what the copy's row count is checked with -#}
    {%- set file_stats = spark_clustering._write_file_stats_after_write(staging, cfg, own_write=true) -%}
    {%- do spark_clustering._validate_staging(staging, plan, cfg, file_stats) -%}
    {%- set released = spark_clustering.swap_relation(staging, target, existing, lease, 'clustered_table ' ~ model.name) -%}
    {%- if not released -%}{%- do spark_clustering._table_lease_release(lease) -%}{%- endif -%}
{% endmacro %}


{#- A parquet table clustered on a timestamp, written as INT96 (Spark's default
    spark.sql.parquet.outputTimestampType): INT96 has no usable footer statistics, so no reader
    that skips by footers (Spark without the extension, DuckDB, pyarrow, Trino) can skip files on
    that column, and each build's statistics read its rows. The setting is the session's, shared
    by every model of the run (and by a Thrift server's other statements), so the package says so
    and leaves it; one statement, only on a parquet model with a timestamp clustering column. -#}
{% macro _plain_int96_note(plan, cfg) %}
    {%- if cfg.file_format != 'parquet' -%}{{ return(none) }}{%- endif -%}
    {%- set names = [] -%}
    {%- for col in plan.columns if col.name in plan.cluster_by and col.type == 'timestamp' -%}
        {%- do names.append(col.name) -%}
    {%- endfor -%}
    {%- if not names -%}{{ return(none) }}{%- endif -%}
    {%- set row = run_query('set spark.sql.parquet.outputTimestampType').rows[0] -%}
    {%- if (row[1] | string | upper) == 'INT96' -%}
        {{ log('spark_clustering: ' ~ model.name ~ ': clustering column' ~ ('s ' if names | length > 1 else ' ') ~ names | join(', ')
               ~ ' (timestamp) written as INT96 (spark.sql.parquet.outputTimestampType, the Spark default), which has no'
               ~ ' footer statistics: readers that skip by footers (Spark without the extension of the package, DuckDB,'
               ~ ' pyarrow) cannot skip files on it, and each build reads its rows for the statistics sidecar. Set'
               ~ ' spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS in the session (the profile'
               ~ ' server_side_parameters, or spark-defaults.conf of the server) unless a reader of the table needs'
               ~ ' INT96 (an older Hive or Impala)', info=true) }}
    {%- endif -%}
{% endmacro %}


{% macro _plain_table_version(relation) %}
    {{ return(none) }}
{% endmacro %}


{#- Spark's file metadata column (renamed when the table has a column called _metadata). -#}
{% macro _plain_file_column(column_names) %}
    {{ return(spark_clustering._metadata_column(column_names) ~ '.file_path') }}
{% endmacro %}


{#- file_stats from the metadata, through the jar's table_file_stats: per file the statistics sidecar
    or the footer where it holds every column's min, max and NULL count exactly; only the other files
    (a truncated or missing bound, no statistics, an unreadable footer) are read, so a measure costs
    the files, not the rows (exact whole: no inexact_files column). Without the jar '': file_stats
    reads every row's clustering columns, which the log says once per invocation. -#}
{% macro _plain_metadata_file_stats(relation, column_list, detail, inexact_column=false) %}
    {%- if not spark_clustering._has_extension_function('table_file_stats') -%}
        {%- set logged = graph.setdefault('_spark_clustering_file_stats_logged', []) if graph is mapping else [] -%}
        {%- if invocation_id not in logged -%}
            {%- do logged.append(invocation_id) -%}
            {{ log('spark_clustering: file_stats of a parquet/orc table reads the clustering columns of every row'
                   ~ ' (the Spark extension is not loaded; with its jar it reads the file footers and the statistics'
                   ~ ' sidecar instead, and the rows of only the files whose footers are not exact)', info=true) }}
        {%- endif -%}
        {{ return('') }}
    {%- endif -%}
    {%- set sql -%}
select * from table_file_stats({{ spark_clustering._sql_literal(relation.schema ~ '.' ~ relation.identifier, 'file_stats') }}, array(
    {%- for name in column_list %}{{ spark_clustering._sql_literal(name, 'file_stats') }}{{ ', ' if not loop.last }}{% endfor -%}
))
    {%- endset -%}
    {{ return(sql) }}
{% endmacro %}


{#- A file's level and run are in its own name (sc-l<level>-<run>-...); its scope is its directory.
    The files of the table's last clustered_table build carry the id of the job that wrote them
    (spark_clustering.build_write_id): they are one clustered run. -#}
{% macro _plain_file_place(path, row, settings) %}
    {%- set name = path.split('/')[-1] -%}
    {%- set build_write_id = (settings.detail.properties or {}).get('spark_clustering.build_write_id') -%}
    {{ return({'name': name, 'scope': path[:path.rfind('/')],
               'from_build': true if build_write_id and name.startswith('part-') and ('-' ~ build_write_id ~ '-') in name else false}) }}
{% endmacro %}


{#- Hidden from readers (a leading underscore); the run's files are named sc-l<level>-<run>-... -#}
{% macro _plain_staging_dir(location, level, run_id) %}
    {{ return(location ~ '/_sc_recluster_' ~ run_id) }}
{% endmacro %}


{#- The rewritten files, written aside and checked (rows, checksum, bytes): on S3A as pending uploads
    to their final names (a move would copy each object), otherwise as a staging table in the
    staging directory whose files the commit moves in. -#}
{% macro _plain_stage(staging, settings, plan, staging_dir, prefix, lease) %}
    {%- set staged = spark_clustering._plain_stage_pending(settings, lease, staging_dir, prefix, plan)
                     if settings.detail.location.startswith('s3a://') else none -%}
    {%- if staged is not none -%}
        {%- do spark_clustering._test_hook('recluster.after_staging_write') -%}
        {{ return(staged) }}
    {%- endif -%}
    {% call statement('spark_clustering_recluster_stage') -%}
        {{ spark_clustering._create_staging_table_as(staging, settings.cfg, staging_dir,
                                                     plan.written_check.select_sql if plan.written_check else plan.select_sql) }}
    {%- endcall %}
    {%- do spark_clustering._test_hook('recluster.after_staging_write') -%}
    {%- if plan.written_check -%}
        {#- the rows from the files' footers (a file lost, truncated or doubled changes them), the
            checksum of the rows the writer received -#}
        {{ return(spark_clustering._written_check(spark_clustering._staged_count(staging, plan.column_names), plan.written_check)) }}
    {%- endif -%}
    {{ return(spark_clustering._staged_check(staging, plan.column_names)) }}
{% endmacro %}


{#- A recluster's files on S3A, written as pending uploads to their final names in the table
    (recluster_stage_pending): nothing can read them before the commit completes them, so the
    checksum comes from the rows the writer received, observed in the same job. None when the jar
    says the store cannot (not S3A, magic paths disabled, a partition outside the table's
    location): the caller stages files to be moved in. -#}
{% macro _plain_stage_pending(settings, lease, staging_dir, prefix, plan) %}
    {%- set row = spark_clustering._call_extension('recluster_stage_pending', {'table': settings.table_name, 'lease_token': lease,
            'staging_dir': staging_dir, 'file_prefix': prefix, 'select_sql': plan.select_sql, 'columns': plan.column_names,
            'partition_columns': settings.cfg.partition_by, 'format': settings.cfg.file_format})[0] -%}
    {%- if row.status == 'pending' -%}
        {{ return({'row_count': row.row_count | int, 'hash_sum': row.hash_sum | int, 'hash_xor': row.hash_xor | int,
                   'file_bytes': row.file_bytes | int}) }}
    {%- endif -%}
    {{ log('spark_clustering: recluster ' ~ settings.label ~ ': staging files to move in, which copies them ('
           ~ row.status ~ ')', info=true) }}
    {{ return(none) }}
{% endmacro %}
