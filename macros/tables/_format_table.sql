{#- Delta Lake and Iceberg tables: the clustered files are written by the format's own writer in ONE
    transaction (CREATE OR REPLACE TABLE ... AS SELECT), so readers see the previous snapshot or the
    new one, never both; time travel to the previous one keeps working; and the format's log (Delta
    add.stats) / manifests (Iceberg bounds) hold every file's statistics, exact for the clustering
    columns. No package lease and no staging table for a build: the format's optimistic concurrency
    decides between writers, and its commit is the swap. A recluster writes its files with the
    format's writer into a staging table of the same format whose location is a directory of the
    table (sc-l<level>-<run>), validates them (rows + checksum against the rows read) and commits
    them by the format's own rewrite transaction (table_rewrite_commit), which takes the staged files
    over in place: Delta one OPTIMIZE commit of removes + adds with dataChange = false, Iceberg
    RewriteFiles validated from the snapshot the rows were read at. An append committed meanwhile
    goes through alongside; a delete/update of a rewritten file makes the commit stop with the
    format's conflict. What differs between the two formats: _delta_table.sql, _iceberg_table.sql. -#}

{#- What Delta and Iceberg tables do alike; each format's kind adds its own steps to these.
    rewrite_metadata_bytes: a recluster that rewrites read 0.9-1.5 MB more than one that rewrites
    nothing, beyond its files (and on Delta ~0.3 x them: the clustering columns' sample), in the
    store_sales benchmark at 16-33 files on both formats: its staging table, its commit and the
    measure after it each read the table's log or manifests again. -#}
{% macro _format_table_kind() %}
    {{ return({
        'build_begin': spark_clustering._format_build_begin,
        'build_write': spark_clustering._format_build_write,
        'file_column': spark_clustering._plain_file_column,
        'file_place': spark_clustering._format_file_place,
        'stage': spark_clustering._format_stage,
        'after_rewrite': spark_clustering._table_kind_skips,
        'read_whole_bytes': 0,
        'rewrite_metadata_bytes': 1000000,
    }) }}
{% endmacro %}


{#- The format's transaction is the swap and its concurrency control the lease: nothing to hold. -#}
{% macro _format_build_begin(target, cfg) %}
    {{ return({'existing': adapter.get_relation(database=target.database, schema=target.schema, identifier=target.identifier),
               'lease': none}) }}
{% endmacro %}


{% macro _format_build_write(target, existing, plan, cfg, lease) %}
    {%- set fmt = cfg.file_format -%}
    {%- set kind = spark_clustering._table_kind(fmt) -%}
    {%- do kind.refuse_unbounded_columns(plan, cfg) -%}
    {%- set previous = none -%}
    {%- if existing is not none and not existing.is_view -%}
        {%- set detail = spark_clustering._table_detail(existing) -%}
        {%- if detail.provider != fmt -%}
            {{ spark_clustering._config_error('file_format', fmt, "the table " ~ target ~ " exists as a '" ~ detail.provider
                ~ "' table, and a change of format would drop its data outside any " ~ fmt ~ " transaction; "
                ~ "drop or rename the table yourself, then run the model again", none) }}
        {%- endif -%}
        {%- do kind.refuse_layout(target, detail, cfg.cluster_by) -%}
        {%- set previous = kind.version(target) -%}
    {%- elif existing is not none -%}
        {#- a view holds no data: nothing to keep -#}
        {% do adapter.drop_relation(existing) %}
    {%- endif -%}

    {#- The build's version goes into the table's properties (spark_clustering.build_version), so
        recluster() knows the files it added for one clustered run: in the CTAS itself where the
        format knows the version it will commit (Delta: the next one, unless another writer's
        append commits in between, which Delta lets a replace race), otherwise or then after it
        (Iceberg, where ALTER of a property makes no snapshot). The version validated is the one
        the replace committed (kind.replace_version), not the table's latest, which may be
        another writer's. -#}
    {%- set build_version = (0 if previous is none else previous + 1) if kind.version_known_before_commit else none -%}
    {% call statement('main') -%}
        {{ spark_clustering._create_or_replace_format_table_as(target, plan, cfg, kind, build_version) }}
    {%- endcall %}
    {%- do spark_clustering._test_hook('clustered_table.after_format_write') -%}
    {%- set committed = kind.replace_version(target, previous) -%}
    {{ spark_clustering._validate_format_commit(target, plan, cfg, kind, previous, committed) }}
    {%- if committed is not none and committed != build_version -%}
        {%- do run_query('alter table ' ~ target ~ ' set tblproperties '
                         ~ spark_clustering._tblproperties_list({'spark_clustering.build_version': committed})) -%}
    {%- endif -%}
{% endmacro %}


{#- A format rewrite's files lie in its staging directory sc-l<level>-<run>/ (Delta:
    <table>/sc-l1-<run>/[<partition>/]part-*, Iceberg: <table>/data/sc-l1-<run>/data/[<partition>/]*),
    which names their level and run; the scope is the partition, from the path's key=value
    segments. The format's listing says which files the table's last build wrote. -#}
{% macro _format_file_place(path, row, settings) %}
    {%- set location = settings.detail.location -%}
    {%- set relative = path[location | length:] if path.startswith(location) else path -%}
    {%- set staged = [] -%}
    {%- set partition = [] -%}
    {%- for segment in relative.split('/')[:-1] -%}
        {%- if modules.re.match('^sc-l[0-9]+-', segment) -%}{%- do staged.append(segment) -%}{%- endif -%}
        {%- if '=' in segment -%}{%- do partition.append(segment) -%}{%- endif -%}
    {%- endfor -%}
    {{ return({'name': staged[0] if staged else '', 'scope': location ~ '/' ~ partition | join('/'),
               'from_build': row.from_build}) }}
{% endmacro %}


{#- The rewritten rows, written by the format's writer into a staging table of the same format in
    the staging directory (its statistics exact for the clustering columns, as the table's), and
    checked by their checksum: the checksum of the rows the writer received and the row count the
    format's metadata holds (count(*), which Delta and Iceberg answer from their log and manifests)
    where the write observed them, otherwise the checksum of the staged rows read back. -#}
{% macro _format_stage(staging, settings, plan, staging_dir, prefix, lease) %}
    {% call statement('spark_clustering_recluster_stage') -%}
        {{ spark_clustering._create_staging_table_as(staging, settings.cfg, staging_dir,
                                                     plan.written_check.select_sql if plan.written_check else plan.select_sql,
                                                     settings.kind.exact_stats_properties(plan.column_names, plan.cluster_by)) }}
    {%- endcall %}
    {%- do spark_clustering._test_hook('recluster.after_staging_write') -%}
    {%- if plan.written_check -%}
        {%- set counted = {'row_count': run_query('select count(*) from ' ~ staging).rows[0][0] | int, 'file_bytes': 0} -%}
        {{ return(spark_clustering._written_check(counted, plan.written_check)) }}
    {%- endif -%}
    {%- set staged = spark_clustering.row_checksum(staging, plan.column_names) -%}
    {{ return({'row_count': staged.row_count, 'hash_sum': staged.hash_sum, 'hash_xor': staged.hash_xor, 'file_bytes': 0}) }}
{% endmacro %}


{#- The longest string bound the formats are asked to keep exact for the clustering columns: longer
    values still get a bound, a truncated one, which the package treats as unknown. -#}
{% macro _format_string_bound_length() %}
    {{ return(1024) }}
{% endmacro %}


{#- CREATE OR REPLACE TABLE ... AS with the model's dbt-spark options (options, partition_by,
    location_root, comment), its tblproperties, the properties that make the clustering columns'
    statistics exact, and the package's record of the clustering (spark_clustering.*). -#}
{% macro _create_or_replace_format_table_as(target, plan, cfg, kind, build_version=none) %}
    {%- set location_root = config.get('location_root') -%}
    {%- set properties = {} -%}
    {%- do properties.update(config.get('tblproperties') or {}) -%}
    {%- do properties.update(kind.exact_stats_properties(plan.column_names, plan.cluster_by)) -%}
    {%- do properties.update({
        'spark_clustering.cluster_by': plan.cluster_by,
        'spark_clustering.method': cfg.method,
        'spark_clustering.bits': plan.layout.bits if plan.layout else '',
        'spark_clustering.row_count': plan.row_count,
        'spark_clustering.num_files': plan.num_files,
        'spark_clustering.layout': plan.layout_choice.spec if plan.layout_choice else '',
        'spark_clustering.layout_name': plan.layout_choice.name if plan.layout_choice else '',
        'spark_clustering.layout_simulated_ratio': plan.layout_choice.ratio if plan.layout_choice else '',
        'spark_clustering.layout_seconds': plan.layout_choice.seconds if plan.layout_choice else '',
    }) -%}
    {%- if build_version is not none -%}
        {%- do properties.update({'spark_clustering.build_version': build_version}) -%}
    {%- endif -%}
    create or replace table {{ target }}
    using {{ cfg.file_format }}
    {{ options_clause() }}
    {{ partition_cols(label="partitioned by") }}
    {%- if location_root %}
    location {{ spark_clustering._sql_literal(location_root ~ '/' ~ model['alias'], 'location_root') }}
    {%- endif %}
    {{ comment_clause() }}
    tblproperties {{ spark_clustering._tblproperties_list(properties) }}
    as
    {{ plan.select_sql }}
{% endmacro %}


{#- The committed version must hold the model's rows (count, or count and checksum): with a
    transactional writer a lost or doubled file cannot happen, but a nondeterministic model gives
    other rows to the write than to the count. A mismatch puts the previous version back (Delta
    RESTORE, Iceberg set_current_snapshot; a first build is dropped) while the table is still at the
    version this run committed, and fails the model. Readers may have seen the rejected version
    between the two commits: the check can only read what was committed. -#}
{% macro _validate_format_commit(target, plan, cfg, kind, previous, committed) %}
    {%- if not cfg.validate -%}{{ return(none) }}{%- endif -%}
    {%- set at_version = target ~ ' version as of ' ~ committed -%}
    {%- if cfg.validate == 'checksum' -%}
        {%- set written = spark_clustering.row_checksum(at_version, plan.column_names) -%}
    {%- else -%}
        {%- set counted = spark_clustering._table_committed_rows(target, committed) -%}
        {%- if counted is none -%}
            {%- set counted = run_query('select count(*) from ' ~ at_version).rows[0][0] -%}
        {%- endif -%}
        {%- set written = {'row_count': counted | int} -%}
    {%- endif -%}
    {%- if spark_clustering._checks_match(written, plan.source_check) -%}{{ return(none) }}{%- endif -%}
    {%- do run_query('drop view if exists ' ~ plan.source_view) -%}
    {%- set now = kind.version(target) -%}
    {%- if now != committed -%}
        {%- set outcome = "another writer committed version " ~ now ~ " since, so the table was left as it is; "
                          ~ "restore version " ~ previous ~ " yourself if that is what you want" -%}
    {%- elif previous is none -%}
        {%- do adapter.drop_relation(target) -%}
        {%- set outcome = "the table was new and has been dropped again" -%}
    {%- else -%}
        {%- do run_query(kind.restore_sql(target, previous)) -%}
        {%- set outcome = "the table was put back to its previous version " ~ previous -%}
    {%- endif -%}
    {{ exceptions.raise_compiler_error(
        "spark_clustering: model '" ~ model.name ~ "': the " ~ cfg.file_format ~ " version " ~ committed
        ~ " written by this run does not hold the model query's rows (rows " ~ written.row_count ~ " vs "
        ~ plan.source_check.row_count ~ ((", checksum " ~ written.hash_sum ~ "/" ~ written.hash_xor ~ " vs "
            ~ plan.source_check.hash_sum ~ "/" ~ plan.source_check.hash_xor) if cfg.validate == 'checksum' else '')
        ~ "); " ~ outcome ~ ". If the model is nondeterministic (rand(), current_timestamp(), unordered limit), "
        ~ "make it deterministic or set cluster_validate=false.") }}
{% endmacro %}


{#- The rows the table holds at `version` by the format's own per-file counts, which its writer took
    while writing (table_committed_rows of the extension: Delta's numRecords of the commit's adds,
    Iceberg's total-records), or none (no extension, a count missing, rows deleted by deletion
    vectors / delete files): then a query counts them. A query at a version builds a time-travel
    snapshot first, which on Delta cost more than the write's own commit (3-5 s for 16 files). -#}
{% macro _table_committed_rows(relation, version) %}
    {%- if version is none or not spark_clustering._has_extension_function('table_committed_rows') -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set row = spark_clustering._call_extension('table_committed_rows', {'table': relation, 'version': version}, ['row_count'])[0] -%}
    {{ return(none if row.row_count is none else row.row_count | int) }}
{% endmacro %}


{#- The table's columns by lower-cased name, with their types (one DESCRIBE): the types decide where
    the format's bounds are exact. -#}
{% macro _columns_by_name(relation) %}
    {%- set columns_by_name = {} -%}
    {%- for c in spark_clustering.describe_columns('select * from ' ~ relation) -%}
        {%- do columns_by_name.update({c.name | lower: c}) -%}
    {%- endfor -%}
    {{ return(columns_by_name) }}
{% endmacro %}
