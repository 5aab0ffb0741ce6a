{#- recluster(): recover what an interrupted run left, and rewrite + commit one selection. -#}

{#- Before reading anything (under the lease, so no live writer owns what is found): what an
    interrupted run left is finished or rolled back (table_rewrite_recover, whatever the kind: a
    plain table's journaled commit rolled forward when its journal was written, back otherwise,
    including staging under a previous location of the table; a format table's staging table and
    staging metadata removed, its staged files the table's if it committed, otherwise orphans for
    VACUUM / remove_orphan_files), and the leftover staging table dropped. -#}
{% macro _recluster_recover(relation, settings, lease) %}
    {%- for row in spark_clustering._call_extension('table_rewrite_recover', {'table': settings.table_name, 'lease_token': lease,
            'staging_table': settings.table_name ~ '__sc_recluster'}, ['run_id', 'action']) -%}
        {{ log('spark_clustering: recluster ' ~ settings.label ~ ': interrupted run ' ~ row.run_id ~ ': ' ~ row.action, info=true) }}
    {%- endfor -%}
{% endmacro %}


{#- Rewrite the selected files (read at the version the listing came from, on tables that have
    versions) clustered into the kind's staging (stage), check rows + checksum against the rows
    read, and commit them in place of the files they replace (table_rewrite_commit: a plain table's
    journaled file swap under the lease, the format's own rewrite transaction on Delta and Iceberg;
    an append committed meanwhile goes through alongside, a change to a replaced file aborts). -#}
{% macro _recluster_rewrite(relation, state, selection, settings, round_number, lease) %}
    {%- set kind = settings.kind -%}
    {%- set run_id = modules.datetime.datetime.utcnow().strftime('%Y%m%d%H%M%S') ~ '_'
                     ~ invocation_id.replace('-', '')[:8] ~ '_' ~ round_number -%}
    {%- set prefix = 'sc-l' ~ selection.level ~ '-' ~ run_id -%}
    {%- set staging = spark_clustering._sidecar_relation(relation, 'recluster') -%}
    {%- set source_view = spark_clustering._source_view_name(relation, 'recluster_source') -%}
    {%- set replaced = [] -%}
    {%- for file in selection.files -%}
        {#- the commit replaces a file only while it is exactly what was read -#}
        {%- do replaced.append(file.size ~ ':' ~ file.mtime ~ ':' ~ file.path) -%}
    {%- endfor -%}
    {%- do spark_clustering._rows_of_files_view(settings, state.table_version,
            selection.files | map(attribute='path') | list, source_view) -%}
    {%- if spark_clustering._recluster_caches_selection(selection.files, settings) -%}
        {#- lazy: the write plan's first pass fills it; the drop of the view below uncaches it -#}
        {% call statement('spark_clustering_recluster_cache_source') -%}
            cache lazy table {{ source_view }}
        {%- endcall %}
    {%- endif -%}
    {%- set plan = spark_clustering._recluster_rewrite_plan(relation, state, selection, settings, source_view) -%}
    {%- set staging_dir = kind.staging_dir(settings.detail.location, selection.level, run_id) -%}
    {%- set staged = kind.stage(staging, settings, plan, staging_dir, prefix, lease) -%}
    {%- if not spark_clustering._checks_match(staged, plan.source_check) -%}
        {#- nothing committed yet: recovery rolls back what was staged -#}
        {{ spark_clustering._recluster_rewrite_mismatch(relation, settings, lease, source_view, staged, plan) }}
    {%- endif -%}
    {{ spark_clustering._test_hook('recluster.after_validate') }}
    {#- proof of what is committed: the lease, the validated rows and bytes, each replaced file as it was read -#}
    {%- set committed = spark_clustering._call_extension('table_rewrite_commit', {'table': settings.table_name, 'lease_token': lease,
            'staging_table': staging, 'staging_dir': staging_dir, 'file_prefix': prefix,
            'read_version': state.table_version if state.table_version is not none else '',
            'validated_rows': staged.row_count, 'validated_bytes': staged.file_bytes, 'cluster_by': plan.cluster_by | join(','),
            'replaced_files': replaced})[0] -%}
    {%- do adapter.cache_dropped(staging) -%}
    {% call statement('spark_clustering_recluster_drop_source') -%}
        drop view if exists {{ source_view }}
    {%- endcall %}
    {{ return({'run_id': run_id, 'level': selection.level, 'status': committed.status,
               'files_replaced': committed.files_removed | int, 'files_written': committed.files_added | int, 'rows': staged.row_count,
               'bytes_removed': committed.bytes_removed | int, 'bytes_written': committed.bytes_added | int}) }}
{% endmacro %}


{#- Whether a rewrite reads its selection into Spark's cache (MEMORY_AND_DISK), so that its first
    pass (the sample, or the quantiles) and its write read the files once between them: the pass
    reads them whole into the cache, the write reads the cache. Uncached, the pass reads the
    clustering columns (on Delta's store_sales benchmark 0.2 x the files, measured) and the write
    the files again; and where the table's reader reads some files whole whatever columns a scan
    asks for (the kind's read_whole_bytes: Iceberg's files of at most 1 MiB) the pass reads those
    whole. Cached up to `recluster.cache_bytes` of files (64 MiB by default; 0: never), and up to 4 x
    that (256 MiB) where some are read whole anyway: the cache holds the rows decoded, a few times
    their bytes, and spills what does not fit to the executors' disks. The cost policy charges a
    cached selection 2 x its bytes (_recluster_cost_scope). -#}
{% macro _recluster_caches_selection(files, settings) %}
    {%- set bytes = files | sum(attribute='size') -%}
    {%- set limit = settings.cache_bytes -%}
    {{ return(bytes <= limit or (bytes <= 4 * limit and spark_clustering._recluster_cost_sample_reads(files, settings) > 0)) }}
{% endmacro %}


{#- The clustered write of a selection (read through source_view): files for the rewritten rows by
    the rows target, and the bytes target at the selection's own bytes per row (a fixed
    cluster_num_files taken as the table's share); a checksum of every row, whatever
    cluster_validate says (a selection is small), taken by the write itself where it can
    (observe_source); the rows known from the files' statistics, so no
    count(*) scan. An `auto` table's first recluster chooses its layout. A later one keeps it, so
    the rewritten files fit the files left alone, unless it rewrites every file of an unpartitioned
    table: then nothing is left to fit, and the layout is chosen again on the rows and the workload
    as they are now (a k-d tree re-cut where the rows have grown or moved since the build). -#}
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
    {%- set refit = cfg.method == 'auto' and cfg.layout is not none and state.scopes | length == 1
                    and selection.files | length == state.files | length
                    and spark_clustering._workload_columns(cfg.workload, cfg.cluster_by) | length > 0 -%}
    {%- if refit -%}
        {{ log('spark_clustering: recluster ' ~ settings.label ~ ': every file is rewritten: the layout is chosen again '
               ~ '(was ' ~ spark_clustering._layout_name(cfg.layout) ~ ')', info=true) }}
        {%- do plan_cfg.update({'layout': none}) -%}
    {%- endif -%}
    {%- set plan = spark_clustering._plan_clustered_write(source_view, plan_cfg, relation, 'recluster ' ~ settings.label,
                                                         row_count=selection.rows, observe_source=true) -%}
    {%- if plan.layout_choice and (cfg.layout is none or refit) -%}{%- do cfg.update({'layout': plan.layout_choice.spec}) -%}{%- endif -%}
    {{ spark_clustering._test_hook('recluster.after_plan') }}
    {{ return(plan) }}
{% endmacro %}


{#- The staged rows are not the rows of the files they replace: nothing is committed; what was
    staged goes (recovery: no journal yet, so it rolls back), the lease is given up, and the run
    fails. -#}
{% macro _recluster_rewrite_mismatch(relation, settings, lease, source_view, staged, plan) %}
    {%- do spark_clustering._recluster_recover(relation, settings, lease) -%}
    {%- do spark_clustering._table_lease_release(lease) -%}
    {%- do run_query('drop view if exists ' ~ source_view) -%}
    {{ exceptions.raise_compiler_error(
        "recluster: " ~ settings.label ~ ": the rewritten files do not match the files they replace (rows "
        ~ staged.row_count ~ " vs " ~ plan.source_check.row_count ~ ", checksum " ~ staged.hash_sum ~ "/" ~ staged.hash_xor
        ~ " vs " ~ plan.source_check.hash_sum ~ "/" ~ plan.source_check.hash_xor ~ "); nothing was committed and the "
        ~ "table is unchanged. Please report this with the dbt log.") }}
{% endmacro %}
