{#- recluster() on Delta Lake and Iceberg tables: the same measure, gate and selection as on plain
    tables; the rewrite is written by the format's writer into a staging table of the same format
    whose location is a directory of the table (sc-l<level>-<run>), validated (rows + checksum
    against the rows read), and committed by the format's own rewrite transaction, which takes the
    staged files over in place (format_rewrite_commit, commit/formats/FormatTableRewrite.scala):
    Delta one OPTIMIZE commit of removes + adds with dataChange = false, Iceberg RewriteFiles
    validated from the snapshot the rows were read at. An append committed meanwhile goes through
    alongside; a delete/update of a rewritten file makes the commit stop with the format's conflict. -#}

{#- Under the lease, before reading anything: the staging table and staging metadata an
    interrupted run left go (its staged data files are orphans for VACUUM / remove_orphan_files,
    or the table's own files when it had committed). -#}
{% macro _recluster_recover_format(relation, settings, lease) %}
    {%- for row in spark_clustering._call_extension('format_rewrite_recover', {'table': settings.table_name,
            'format': settings.cfg.file_format, 'lease_token': lease, 'staging_table': settings.table_name ~ '__sc_recluster'},
            ['run_id', 'action']) -%}
        {{ log('spark_clustering: recluster ' ~ settings.label ~ ': interrupted run ' ~ row.run_id ~ ': ' ~ row.action, info=true) }}
    {%- endfor -%}
{% endmacro %}


{#- Rewrite the selected files (read at the version the listing came from) clustered into the
    staging table, validate, and commit them in one format transaction. -#}
{% macro _recluster_rewrite_format(relation, state, selection, settings, round_number, lease) %}
    {%- set fmt = settings.cfg.file_format -%}
    {%- set run_id = modules.datetime.datetime.utcnow().strftime('%Y%m%d%H%M%S') ~ '_'
                     ~ invocation_id.replace('-', '')[:8] ~ '_' ~ round_number -%}
    {%- set staging = spark_clustering._sidecar_relation(relation, 'recluster') -%}
    {%- set source_view = spark_clustering._source_view_name(relation, 'recluster_source') -%}
    {%- set paths = [] -%}
    {%- for file in selection.files -%}
        {%- do paths.append(spark_clustering._sql_literal(file.path, 'recluster')) -%}
    {%- endfor -%}
    {#- Iceberg names the file column _file; Delta has Spark's _metadata -#}
    {%- set file_column = '_file' if fmt == 'iceberg' else spark_clustering._metadata_column(settings.detail.columns) ~ '.file_path' -%}
    {% call statement('spark_clustering_recluster_source') -%}
        create or replace temporary view {{ source_view }} as
        select * from {{ relation }} version as of {{ state.table_version }}
        where {{ file_column }} in ({{ paths | join(', ') }})
    {%- endcall %}
    {%- set cfg = settings.cfg -%}
    {%- set plan = spark_clustering._recluster_rewrite_plan(relation, state, selection, settings, source_view) -%}

    {%- set staging_dir = settings.detail.location ~ ('/data' if fmt == 'iceberg' else '') ~ '/sc-l' ~ selection.level ~ '-' ~ run_id -%}
    {% call statement('spark_clustering_recluster_stage') -%}
        create table {{ staging }}
        using {{ fmt }}
        {%- if cfg.partition_by %}
        partitioned by ({{ spark_clustering._quoted_columns(cfg.partition_by) }})
        {%- endif %}
        location {{ spark_clustering._sql_literal(staging_dir, 'recluster') }}
        tblproperties {{ spark_clustering._tblproperties_list(spark_clustering._exact_stats_properties(fmt, plan.column_names, plan.cluster_by)) }}
        as
        {{ plan.select_sql }}
    {%- endcall %}
    {{ spark_clustering._test_hook('recluster.after_staging_write') }}

    {%- set staged = spark_clustering.row_checksum(staging, plan.column_names) -%}
    {%- if not spark_clustering._checks_match(staged, plan.source_check) -%}
        {{ spark_clustering._recluster_rewrite_mismatch(relation, settings, lease, source_view, staged, plan) }}
    {%- endif -%}
    {{ spark_clustering._test_hook('recluster.after_validate') }}
    {%- set committed = spark_clustering._call_extension('format_rewrite_commit', {'table': settings.table_name, 'format': fmt,
            'lease_token': lease, 'staging_table': staging, 'staging_dir': staging_dir, 'read_version': state.table_version,
            'validated_rows': staged.row_count, 'cluster_by': plan.cluster_by | join(','),
            'replaced_files': selection.files | map(attribute='path') | list})[0] -%}
    {% call statement('spark_clustering_recluster_drop_source') -%}
        drop view if exists {{ source_view }}
    {%- endcall %}
    {{ return({'run_id': run_id, 'level': selection.level, 'status': committed.status,
               'files_replaced': committed.files_removed | int, 'files_written': committed.files_added | int, 'rows': staged.row_count,
               'bytes_removed': committed.bytes_removed | int, 'bytes_written': committed.bytes_added | int}) }}
{% endmacro %}
