{#- clustered_table on Delta Lake and Iceberg tables: the clustered files are written by the format's
    own writer in ONE transaction (CREATE OR REPLACE TABLE ... AS SELECT), so readers see the previous
    snapshot or the new one, never both; time travel to the previous one keeps working; and the
    format's log (Delta add.stats) / manifests (Iceberg bounds) hold every file's statistics, exact
    for the clustering columns. No package lease and no staging table: the format's optimistic
    concurrency decides between writers, and its commit is the swap. -#}

{% macro _replace_format_table(target, existing, plan, cfg) %}
    {%- set fmt = cfg.file_format -%}
    {{ spark_clustering._refuse_unbounded_columns(plan, cfg) }}
    {%- set previous = none -%}
    {%- if existing is not none and not existing.is_view -%}
        {%- set detail = spark_clustering._table_detail(existing) -%}
        {%- if detail.provider != fmt -%}
            {{ spark_clustering._config_error('file_format', fmt, "the table " ~ target ~ " exists as a '" ~ detail.provider
                ~ "' table, and a change of format would drop its data outside any " ~ fmt ~ " transaction; "
                ~ "drop or rename the table yourself, then run the model again", none) }}
        {%- endif -%}
        {{ spark_clustering._refuse_format_layout(target, fmt, detail, cfg.cluster_by) }}
        {%- set previous = spark_clustering._format_table_version(target, fmt) -%}
    {%- elif existing is not none -%}
        {#- a view holds no data: nothing to keep -#}
        {% do adapter.drop_relation(existing) %}
    {%- endif -%}

    {#- The build's version goes into the table's properties (spark_clustering.build_version), so
        recluster() knows the files it added for one clustered run. Delta: in the CTAS itself, as
        the version it will commit (the next one: a commit in between conflicts with the replace,
        which then fails); Iceberg: after it, as ALTER of a property makes no snapshot there. -#}
    {%- set build_version = (0 if previous is none else previous + 1) if fmt == 'delta' else none -%}
    {% call statement('main') -%}
        {{ spark_clustering._create_or_replace_format_table_as(target, plan, cfg, build_version) }}
    {%- endcall %}
    {%- set committed = spark_clustering._format_table_version(target, fmt) -%}
    {{ spark_clustering._validate_format_commit(target, plan, cfg, previous, committed) }}
    {%- if committed is not none and committed != build_version -%}
        {%- do run_query('alter table ' ~ target ~ ' set tblproperties '
                         ~ spark_clustering._tblproperties_list({'spark_clustering.build_version': committed})) -%}
    {%- endif -%}
{% endmacro %}


{#- A layout the format itself keeps for the table (Delta liquid clustering, an Iceberg sort order)
    is never replaced silently: the format's own writers and OPTIMIZE would lay files out by it, and
    CREATE OR REPLACE would drop it. A config error says how to hand the layout to the package. -#}
{% macro _refuse_format_layout(target, fmt, detail, cluster_by) %}
    {%- if fmt == 'delta' -%}
        {#- Delta keeps a liquid table's clustering columns in its properties ('[["a"]]', '[]' after
            CLUSTER BY NONE): no DESCRIBE DETAIL, which costs seconds on a table it has not read yet -#}
        {%- set declared = detail.properties.get('clusteringColumns', '') | string -%}
        {%- if declared | replace('[', '') | replace(']', '') | replace('(', '') | replace(')', '') | trim not in ['', 'None'] -%}
            {{ spark_clustering._config_error('cluster_by', cluster_by, "the Delta table " ~ target
                ~ " declares liquid clustering on " ~ declared ~ " (CLUSTER BY): Delta's OPTIMIZE would lay its files "
                ~ "out again by that, and a rebuild would drop it. Run ALTER TABLE " ~ target ~ " CLUSTER BY NONE to hand "
                ~ "its layout to spark_clustering, or materialize the model as a table to keep liquid clustering", none) }}
        {%- endif -%}
    {%- elif detail.properties.get('sort-order') -%}
        {{ spark_clustering._config_error('cluster_by', cluster_by, "the Iceberg table " ~ target
            ~ " declares the sort order " ~ detail.properties['sort-order'] ~ ": Iceberg's writers and rewrite_data_files "
            ~ "would sort its files by that, and a rebuild would drop it. Run ALTER TABLE " ~ target ~ " WRITE UNORDERED "
            ~ "to hand its layout to spark_clustering, or materialize the model as a table to keep the sort order", none) }}
    {%- endif -%}
{% endmacro %}


{#- Clustering columns the format would keep no min/max for: its files could not be skipped on them
    and the package could not measure them, so the build stops before it writes. Delta collects no
    bounds for boolean and binary columns (and refuses them in delta.dataSkippingStatsColumns), and
    none for a column its statistics properties, set by the model, leave out. Iceberg bounds every
    primitive type; the package sets metrics mode `full` for each clustering column. -#}
{% macro _refuse_unbounded_columns(plan, cfg) %}
    {%- if cfg.file_format != 'delta' -%}{{ return('') }}{%- endif -%}
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


{#- The longest string bound the formats are asked to keep exact for the clustering columns: longer
    values still get a bound, a truncated one, which the package treats as unknown. -#}
{% macro _format_string_bound_length() %}
    {{ return(1024) }}
{% endmacro %}


{#- CREATE OR REPLACE TABLE ... AS with the model's dbt-spark options (options, partition_by,
    location_root, comment), its tblproperties, the properties that make the clustering columns'
    statistics exact, and the package's record of the clustering (spark_clustering.*). -#}
{% macro _create_or_replace_format_table_as(target, plan, cfg, build_version=none) %}
    {%- set location_root = config.get('location_root') -%}
    {%- set properties = {} -%}
    {%- do properties.update(config.get('tblproperties') or {}) -%}
    {%- do properties.update(spark_clustering._exact_stats_properties(cfg.file_format, plan.column_names, plan.cluster_by)) -%}
    {%- do properties.update({
        'spark_clustering.cluster_by': plan.cluster_by,
        'spark_clustering.method': cfg.method,
        'spark_clustering.bits': plan.layout.bits if plan.layout else '',
        'spark_clustering.row_count': plan.row_count,
        'spark_clustering.num_files': plan.num_files,
        'spark_clustering.layout': plan.layout_choice.spec if plan.layout_choice else '',
        'spark_clustering.layout_name': plan.layout_choice.name if plan.layout_choice else '',
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


{#- Table properties under which the format records exact (untruncated) min/max for the clustering
    columns, for this write and every later writer of the table. Delta: string bounds keep a prefix
    of delta.dataSkippingStringPrefixLength characters (default 32); statistics are kept for the
    first 32 columns (delta.dataSkippingNumIndexedCols), so a wider table lists the clustering
    columns first in delta.dataSkippingStatsColumns. Iceberg: write.metadata.metrics.column.<col> =
    full (its default truncates bounds to 16 bytes). -#}
{% macro _exact_stats_properties(file_format, column_names, cluster_by) %}
    {%- set properties = {} -%}
    {%- if file_format == 'delta' -%}
        {%- do properties.update({'delta.dataSkippingStringPrefixLength': spark_clustering._format_string_bound_length()}) -%}
    {%- endif -%}
    {%- if file_format == 'delta' and column_names | length > 32 -%}
        {%- set lowered = cluster_by | map('lower') | list -%}
        {%- set others = [] -%}
        {%- for name in column_names if name | lower not in lowered -%}{%- do others.append(name) -%}{%- endfor -%}
        {%- set indexed = [] -%}
        {%- for name in cluster_by + others[:32 - cluster_by | length] -%}
            {%- do indexed.append(adapter.quote(name)) -%}
        {%- endfor -%}
        {%- do properties.update({'delta.dataSkippingStatsColumns': indexed | join(',')}) -%}
    {%- elif file_format == 'iceberg' -%}
        {%- for name in cluster_by -%}
            {%- do properties.update({'write.metadata.metrics.column.' ~ name: 'full'}) -%}
        {%- endfor -%}
        {#- Iceberg's writer keeps the package's distribution and order (it would otherwise ask
            Spark to shuffle a partitioned table's rows by partition again) -#}
        {%- do properties.update({'write.distribution-mode': 'none', 'write.spark.fanout.enabled': 'true'}) -%}
    {%- endif -%}
    {{ return(properties) }}
{% endmacro %}


{#- The table's current version: Delta's log version (DESCRIBE HISTORY), Iceberg's current snapshot
    id (a reserved table property); what time travel (VERSION AS OF) and a rollback name. -#}
{% macro _format_table_version(relation, file_format) %}
    {%- if file_format == 'delta' -%}
        {{ return(run_query('describe history ' ~ relation ~ ' limit 1').rows[0][0] | int) }}
    {%- endif -%}
    {%- set snapshot = spark_clustering._table_properties(relation).get('current-snapshot-id') -%}
    {{ return(none if snapshot in [none, 'none', ''] else snapshot | int) }}
{% endmacro %}


{#- The committed version must hold the model's rows (count, or count and checksum): with a
    transactional writer a lost or doubled file cannot happen, but a nondeterministic model gives
    other rows to the write than to the count. A mismatch puts the previous version back (Delta
    RESTORE, Iceberg set_current_snapshot; a first build is dropped) while the table is still at the
    version this run committed, and fails the model. Readers may have seen the rejected version
    between the two commits: the check can only read what was committed. -#}
{% macro _validate_format_commit(target, plan, cfg, previous, committed) %}
    {%- if not cfg.validate -%}{{ return(none) }}{%- endif -%}
    {%- set at_version = target ~ ' version as of ' ~ committed -%}
    {%- if cfg.validate == 'checksum' -%}
        {%- set written = spark_clustering.row_checksum(at_version, plan.column_names) -%}
    {%- else -%}
        {%- set counted = spark_clustering._format_committed_rows(target, cfg.file_format, committed) -%}
        {%- if counted is none -%}
            {%- set counted = run_query('select count(*) from ' ~ at_version).rows[0][0] -%}
        {%- endif -%}
        {%- set written = {'row_count': counted | int} -%}
    {%- endif -%}
    {%- if spark_clustering._checks_match(written, plan.source_check) -%}{{ return(none) }}{%- endif -%}
    {%- do run_query('drop view if exists ' ~ plan.source_view) -%}
    {%- set now = spark_clustering._format_table_version(target, cfg.file_format) -%}
    {%- if now != committed -%}
        {%- set outcome = "another writer committed version " ~ now ~ " since, so the table was left as it is; "
                          ~ "restore version " ~ previous ~ " yourself if that is what you want" -%}
    {%- elif previous is none -%}
        {%- do adapter.drop_relation(target) -%}
        {%- set outcome = "the table was new and has been dropped again" -%}
    {%- else -%}
        {%- do run_query(spark_clustering._restore_format_table_sql(target, cfg.file_format, previous)) -%}
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
    while writing (format_committed_rows of the extension: Delta's numRecords of the commit's adds,
    Iceberg's total-records), or none (no extension, a count missing, rows deleted by deletion
    vectors / delete files): then a query counts them. A query at a version builds a time-travel
    snapshot first, which on Delta cost more than the write's own commit (3-5 s for 16 files). -#}
{% macro _format_committed_rows(relation, file_format, version) %}
    {%- if version is none or not spark_clustering._has_extension_function('format_committed_rows') -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set row = spark_clustering._call_extension('format_committed_rows', {'table': relation, 'format': file_format, 'version': version},
                                                   ['row_count'])[0] -%}
    {{ return(none if row.row_count is none else row.row_count | int) }}
{% endmacro %}


{% macro _restore_format_table_sql(relation, file_format, version) %}
    {%- if file_format == 'delta' -%}
        {{ return('restore table ' ~ relation ~ ' to version as of ' ~ version) }}
    {%- endif -%}
    {#- not rollback_to_snapshot: a REPLACE starts a new lineage, so the old snapshot is no ancestor -#}
    {{ return("call spark_catalog.system.set_current_snapshot(table => "
              ~ spark_clustering._sql_literal(relation.schema ~ '.' ~ relation.identifier, 'rollback') ~ ", snapshot_id => " ~ version ~ ")") }}
{% endmacro %}
