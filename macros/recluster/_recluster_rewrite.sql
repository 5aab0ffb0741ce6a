{#- recluster(): recover what an interrupted run left, and rewrite + commit one selection. -#}

{#- Before reading anything (under the lease, so no live writer owns what is found): finish
    (journal written) or roll back (not written) every commit an interrupted run left, including
    staging under a previous location of the table (the leftover staging table points there), then
    drop the leftover staging table. -#}
{% macro _recluster_recover(relation, settings, lease) %}
    {%- for row in spark_clustering._call_extension('recluster_recover', {'table': settings.table_name, 'lease_token': lease,
            'staging_table': settings.table_name ~ '__sc_recluster'}, ['run_id', 'action']) -%}
        {{ log('spark_clustering: recluster ' ~ settings.label ~ ': interrupted run ' ~ row.run_id ~ ' ' ~ row.action, info=true) }}
    {%- endfor -%}
    {%- do spark_clustering._call_extension('drop_sidecar_table', {'table': settings.table_name ~ '__sc_recluster'}) -%}
{% endmacro %}


{#- Rewrite the selected files clustered into <location>/_sc_recluster_<run> (hidden from readers;
    on S3A as pending uploads to their final names instead), check rows + checksum against the
    selected files, and commit (recluster_commit). -#}
{% macro _recluster_rewrite(relation, state, selection, settings, round_number, lease) %}
    {%- set run_id = modules.datetime.datetime.utcnow().strftime('%Y%m%d%H%M%S') ~ '_'
                     ~ invocation_id.replace('-', '')[:8] ~ '_' ~ round_number -%}
    {%- set prefix = 'sc-l' ~ selection.level ~ '-' ~ run_id -%}
    {%- set staging = spark_clustering._sidecar_relation(relation, 'recluster') -%}
    {%- set source_view = spark_clustering._source_view_name(relation, 'recluster_source') -%}
    {%- set paths = [] -%}
    {%- set replaced = [] -%}
    {%- for file in selection.files -%}
        {%- do paths.append(spark_clustering._sql_literal(file.path, 'recluster')) -%}
        {#- the commit replaces a file only while it is exactly what was read -#}
        {%- do replaced.append(file.size ~ ':' ~ file.mtime ~ ':' ~ file.path) -%}
    {%- endfor -%}

    {% call statement('spark_clustering_recluster_source') -%}
        create or replace temporary view {{ source_view }} as
        select * from {{ relation }}
        where {{ spark_clustering._metadata_column(settings.detail.columns) }}.file_path in ({{ paths | join(', ') }})
    {%- endcall %}
    {%- set cfg = settings.cfg -%}
    {%- set plan = spark_clustering._recluster_rewrite_plan(relation, state, selection, settings, source_view) -%}

    {%- set staging_location = settings.detail.location ~ '/_sc_recluster_' ~ run_id -%}
    {#- on S3A, pending uploads to the files' final names (a move would copy each object) -#}
    {%- set staged = spark_clustering._recluster_stage_pending(settings, lease, staging_location, prefix, plan)
                     if settings.detail.location.startswith('s3a://') else none -%}
    {%- if staged is none %}
    {% call statement('spark_clustering_recluster_stage') -%}
        create table {{ staging }}
        using {{ cfg.file_format }}
        {%- if cfg.partition_by %}
        partitioned by ({{ spark_clustering._quoted_columns(cfg.partition_by) }})
        {%- endif %}
        location {{ spark_clustering._sql_literal(staging_location, 'recluster') }}
        as
        {{ plan.select_sql }}
    {%- endcall %}
    {%- endif %}
    {{ spark_clustering._test_hook('recluster.after_staging_write') }}

    {%- if staged is none -%}
        {%- set staged = spark_clustering._staged_check(staging, plan.column_names) -%}
    {%- endif -%}
    {%- if not spark_clustering._checks_match(staged, plan.source_check) -%}
        {#- no journal yet: recovery drops the staging table and deletes the staged files -#}
        {{ spark_clustering._recluster_rewrite_mismatch(relation, settings, lease, source_view, staged, plan) }}
    {%- endif -%}
    {{ spark_clustering._test_hook('recluster.after_validate') }}
    {#- proof of what is committed: the lease, the validated bytes, each replaced file as it was read -#}
    {%- set committed = spark_clustering._call_extension('recluster_commit', {'table': settings.table_name, 'lease_token': lease,
            'staging_dir': staging_location, 'file_prefix': prefix, 'validated_bytes': staged.file_bytes, 'replaced_files': replaced})[0] -%}
    {% do adapter.drop_relation(staging) %}
    {% call statement('spark_clustering_recluster_drop_source') -%}
        drop view if exists {{ source_view }}
    {%- endcall %}
    {{ return({'run_id': run_id, 'level': selection.level, 'status': committed.status,
               'files_replaced': committed.files_removed | int, 'files_written': committed.files_added | int, 'rows': staged.row_count,
               'bytes_removed': committed.bytes_removed | int, 'bytes_written': committed.bytes_added | int}) }}
{% endmacro %}


{#- A recluster's files on S3A, written as pending uploads to their final names in the table
    (recluster_stage_pending): nothing can read them before the commit completes them, so the
    checksum comes from the rows the writer received, observed in the same job. None when the jar
    says the store cannot (not S3A, magic paths disabled, a partition outside the table's
    location): the caller stages files to be moved in. -#}
{% macro _recluster_stage_pending(settings, lease, staging_location, prefix, plan) %}
    {%- set row = spark_clustering._call_extension('recluster_stage_pending', {'table': settings.table_name, 'lease_token': lease,
            'staging_dir': staging_location, 'file_prefix': prefix, 'select_sql': plan.select_sql, 'columns': plan.column_names,
            'partition_columns': settings.cfg.partition_by, 'format': settings.cfg.file_format})[0] -%}
    {%- if row.status == 'pending' -%}
        {{ return({'row_count': row.row_count | int, 'hash_sum': row.hash_sum | int, 'hash_xor': row.hash_xor | int,
                   'file_bytes': row.file_bytes | int}) }}
    {%- endif -%}
    {{ log('spark_clustering: recluster ' ~ settings.label ~ ': staging files to move in, which copies them ('
           ~ row.status ~ ')', info=true) }}
    {{ return(none) }}
{% endmacro %}


{#- The clustered write of a selection (read through source_view): files for the rewritten rows by
    the rows target, and the bytes target at the selection's own bytes per row (a fixed
    cluster_num_files taken as the table's share); a checksum of every row, whatever
    cluster_validate says (a selection is small); the rows known from the files' statistics, so no
    count(*) scan. An `auto` table's first recluster chooses its layout; every later one keeps it. -#}
{% macro _recluster_rewrite_plan(relation, state, selection, settings, source_view) %}
    {%- set cfg = settings.cfg -%}
    {%- if cfg.num_files -%}
        {%- set files = [1, ((cfg.num_files * selection.rows / ([state.summary.rows, 1] | max)) | round(0, 'ceil')) | int] | max -%}
    {%- else -%}
        {%- set files = spark_clustering._files_for_target(selection.rows, cfg,
                bytes_per_row=(selection.bytes / selection.rows) if selection.rows else none) -%}
    {%- endif -%}
    {%- set plan_cfg = {} -%}
    {%- do plan_cfg.update(cfg) -%}
    {%- do plan_cfg.update({'num_files': files, 'validate': 'checksum'}) -%}
    {%- set plan = spark_clustering._plan_clustered_write(source_view, plan_cfg, relation, 'recluster ' ~ settings.label,
                                                         row_count=selection.rows) -%}
    {%- if plan.layout_choice and cfg.layout is none -%}{%- do cfg.update({'layout': plan.layout_choice.spec}) -%}{%- endif -%}
    {{ spark_clustering._test_hook('recluster.after_plan') }}
    {{ return(plan) }}
{% endmacro %}


{#- The staged rows are not the rows of the files they replace: nothing is committed; what was
    staged goes (the recovery of the table's kind: no journal yet, so it rolls back), the lease is
    given up, and the run fails. -#}
{% macro _recluster_rewrite_mismatch(relation, settings, lease, source_view, staged, plan) %}
    {%- if settings.cfg.file_format in ['delta', 'iceberg'] -%}
        {%- do spark_clustering._recluster_recover_format(relation, settings, lease) -%}
    {%- else -%}
        {%- do spark_clustering._recluster_recover(relation, settings, lease) -%}
    {%- endif -%}
    {%- do spark_clustering._table_lease_release(lease) -%}
    {%- do run_query('drop view if exists ' ~ source_view) -%}
    {{ exceptions.raise_compiler_error(
        "recluster: " ~ settings.label ~ ": the rewritten files do not match the files they replace (rows "
        ~ staged.row_count ~ " vs " ~ plan.source_check.row_count ~ ", checksum " ~ staged.hash_sum ~ "/" ~ staged.hash_xor
        ~ " vs " ~ plan.source_check.hash_sum ~ "/" ~ plan.source_check.hash_xor ~ "); nothing was committed and the "
        ~ "table is unchanged. Please report this with the dbt log.") }}
{% endmacro %}
