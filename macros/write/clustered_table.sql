{#- `materialized='clustered_table'`: a parquet/orc table whose files are range-partitioned on a
    Hilbert / Z-order / linear key of `cluster_by` and sorted within, built aside, validated
    (row count + order-independent checksum against the model query) and swapped into place.
    The previous table stays readable until the new one is complete (dbt-spark's `table` drops a
    parquet table before rebuilding it). -#}
{% materialization clustered_table, adapter='spark' %}
    {%- set cfg = spark_clustering.clustering_config() -%}
    {%- set target_relation = api.Relation.create(identifier=model['alias'], schema=schema,
                                                  database=database, type='table') -%}
    {%- set staging = spark_clustering.sidecar_relation(target_relation, 'staging') -%}
    {%- set grant_config = config.get('grants') -%}

    {{ run_hooks(pre_hooks) }}

    {#- One writer of the package per table (a recluster of it waits, or it waits for one); then
        finish or roll back whatever an interrupted run left, before reading the current state. -#}
    {%- set lease_wait = config.get('cluster_lease_wait_seconds') -%}
    {%- if lease_wait is none -%}{%- set lease_wait = (config.get('meta') or {}).get('cluster_lease_wait_seconds') -%}{%- endif -%}
    {%- set lease = spark_clustering._table_lease_acquire(target_relation, 'name', 'clustered_table ' ~ model.name, lease_wait) -%}
    {{ spark_clustering.recover_swap(target_relation) }}
    {%- set existing = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}

    {%- if config.get('contract').enforced -%}
        {{ get_assert_columns_equivalent(compiled_code) }}
    {%- endif -%}

    {%- set source_view = spark_clustering.source_view_name(target_relation) -%}
    {% call statement('spark_clustering_source_view') -%}
        create or replace temporary view {{ source_view }} as {{ compiled_code }}
    {%- endcall %}

    {%- set plan = spark_clustering.plan_clustered_write(source_view, cfg, existing) -%}

    {% call statement('main') -%}
        {{ spark_clustering.create_clustered_table_as(staging, plan.select_sql, cfg) }}
    {%- endcall %}
    {{ spark_clustering.fault_point('after_staging_write') }}

    {{ spark_clustering.validate_staging(staging, plan, cfg) }}
    {#- statistics for data skipping, keyed by paths relative to the table directory: they stay
        valid through the rename swap (file sizes and modification times do not change) -#}
    {%- do spark_clustering._write_file_stats_after_write(staging, cfg) -%}
    {%- do spark_clustering._table_lease_check(lease, 'clustered_table ' ~ model.name) -%}
    {{ spark_clustering.swap_relation(staging, target_relation, existing) }}
    {%- do spark_clustering._table_lease_release(lease) -%}

    {% call statement('spark_clustering_drop_source_view') -%}
        drop view if exists {{ source_view }}
    {%- endcall %}

    {% set should_revoke = should_revoke(existing, full_refresh_mode=True) %}
    {% do apply_grants(target_relation, grant_config, should_revoke) %}
    {% do persist_docs(target_relation, model) %}

    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{% macro source_view_name(target) %}
    {{ return(target.identifier ~ '__sc_source') }}
{% endmacro %}


{#- Everything decided before the write: columns, file count, boundaries, key, the SELECT, and the
    source fingerprint the staging table must match. -#}
{% macro plan_clustered_write(source_view, cfg, existing=none, label=none, row_count=none) %}
    {%- set columns = spark_clustering.describe_columns('select * from ' ~ source_view) -%}
    {%- set by_lower = {} -%}
    {%- for col in columns -%}{%- do by_lower.update({col.name | lower: col}) -%}{%- endfor -%}
    {%- set cluster_cols = [] -%}
    {%- for name in cfg.cluster_by -%}
        {%- if name | lower not in by_lower -%}
            {{ spark_clustering.config_error('cluster_by', cfg.cluster_by,
                "column '" ~ name ~ "' is not returned by the model; its columns are: " ~ columns | map(attribute='name') | join(', ')) }}
        {%- endif -%}
        {%- do cluster_cols.append(by_lower[name | lower]) -%}
    {%- endfor -%}
    {%- set partition_by = [] -%}
    {%- for name in cfg.partition_by -%}
        {%- if name | lower not in by_lower -%}
            {{ spark_clustering.config_error('partition_by', cfg.partition_by,
                "column '" ~ name ~ "' is not returned by the model; its columns are: " ~ columns | map(attribute='name') | join(', ')) }}
        {%- endif -%}
        {%- do partition_by.append(by_lower[name | lower].name) -%}
    {%- endfor -%}
    {%- set column_names = columns | map(attribute='name') | list -%}
    {%- set cluster_names = cluster_cols | map(attribute='name') | list -%}
    {%- set ranges = {} -%}
    {%- for col in cluster_cols -%}{%- do ranges.update({col.name: cfg.ranges[cfg.cluster_by[loop.index0]]}) -%}{%- endfor -%}

    {%- if row_count is none -%}
        {%- set row_count = run_query('select count(*) from ' ~ source_view).rows[0][0] | int -%}
    {%- endif -%}
    {%- set num_files = cfg.num_files or spark_clustering.files_for_target(row_count, cfg, existing) -%}
    {#- Tiny files cost more in per-file overhead (footers, listing, tasks) than their min/max save. -#}
    {%- if num_files > 1 and row_count < 1000 * num_files -%}
        {{ exceptions.warn('spark_clustering: ' ~ (label or model.name) ~ ': ' ~ row_count ~ ' rows in ' ~ num_files
            ~ ' files is about ' ~ (row_count // num_files) ~ ' rows per file (fewer than 1000); fewer, larger files '
            ~ 'prune as well and read faster: lower cluster_num_files or raise cluster_target_file_rows') }}
    {%- endif -%}

    {%- if cfg.method == 'linear' -%}
        {%- set boundaries = none -%}
        {%- set backend = none -%}
        {%- set source_check = spark_clustering.row_checksum(source_view, column_names) -%}
        {%- set key_sql = none -%}
        {%- set layout = none -%}
    {%- else -%}
        {%- set sample_rows = cfg.sample_rows_per_range * (ranges.values() | max) -%}
        {%- set fraction = [1.0, sample_rows / ([row_count, 1] | max)] | min -%}
        {%- set boundaries = spark_clustering.range_boundaries(source_view, cluster_cols, column_names, ranges, fraction) -%}
        {%- set source_check = {'row_count': boundaries.row_count, 'hash_sum': boundaries.hash_sum, 'hash_xor': boundaries.hash_xor} -%}
        {%- set backend = spark_clustering.udf_backend() -%}
        {%- set layout = spark_clustering.key_layout(cluster_names, boundaries, backend) -%}
        {%- set key_sql = spark_clustering.cluster_key(cfg.method, cluster_names, boundaries, backend) -%}
    {%- endif -%}

    {%- set select_sql = spark_clustering.clustered_select(source_view, column_names, cluster_names, key_sql, num_files, partition_by) -%}
    {%- set summary = cfg.method ~ ' on [' ~ cluster_names | join(', ') ~ ']' -%}
    {%- if layout is not none -%}
        {%- set per_col = [] -%}
        {%- for name in cluster_names -%}
            {%- do per_col.append(name ~ '=' ~ (boundaries['columns'][name]['literals'] | unique | list | length + 1)) -%}
        {%- endfor -%}
        {%- set summary = summary ~ ', ' ~ layout.bits ~ ' bits/column, value ranges ' ~ per_col | join(' ') ~ ', backend ' ~ backend -%}
    {%- endif -%}
    {{ log('spark_clustering: ' ~ (label or model.name) ~ ': ' ~ row_count ~ ' rows -> ' ~ num_files ~ ' files, ' ~ summary, info=true) }}
    {{ return({
        'columns': columns, 'column_names': column_names, 'cluster_by': cluster_names,
        'partition_by': partition_by, 'row_count': row_count, 'num_files': num_files,
        'boundaries': boundaries, 'backend': backend, 'layout': layout, 'key_sql': key_sql,
        'select_sql': select_sql, 'source_check': source_check,
    }) }}
{% endmacro %}


{#- CREATE TABLE ... AS with the model's dbt-spark table options (format, options, tblproperties,
    partition_by, comment). A `location_root` table gets a fresh directory per build, because the
    current table still owns `<location_root>/<alias>` until the swap. -#}
{% macro create_clustered_table_as(relation, select_sql, cfg) %}
    {%- set location_root = config.get('location_root') -%}
    create table {{ relation }}
    using {{ cfg.file_format }}
    {{ options_clause() }}
    {{ tblproperties_clause() }}
    {{ partition_cols(label="partitioned by") }}
    {%- if location_root %}
    location {{ spark_clustering._sql_literal(location_root ~ '/' ~ model['alias'] ~ '__sc_' ~ invocation_id[:8], 'location_root') }}
    {%- endif %}
    {{ comment_clause() }}
    as
    {{ select_sql }}
{% endmacro %}


{#- The staging table must hold exactly the model's rows: same count, same checksum. Only then is it
    marked validated (what recover_swap relies on to roll forward). -#}
{% macro validate_staging(staging, plan, cfg) %}
    {%- set staged = spark_clustering.staged_check(staging, plan.column_names) -%}
    {%- set bytes_per_row = (staged.file_bytes / staged.row_count) | round(2) if staged.row_count else 0 -%}
    {%- set expected = plan.source_check -%}
    {%- if cfg.validate and not spark_clustering.checks_match(staged, expected) -%}
        {%- do spark_clustering._drop_sidecar(staging) -%}
        {{ exceptions.raise_compiler_error(
            "spark_clustering: model '" ~ model.name ~ "': the clustered copy does not match the model query "
            ~ "(rows " ~ staged.row_count ~ " vs " ~ expected.row_count ~ ", checksum " ~ staged.hash_sum ~ "/" ~ staged.hash_xor
            ~ " vs " ~ expected.hash_sum ~ "/" ~ expected.hash_xor ~ "); the existing table was left untouched. "
            ~ "If the model is nondeterministic (rand(), current_timestamp(), unordered limit), make it deterministic "
            ~ "or set cluster_validate=false.") }}
    {%- endif -%}
    {#- cluster_by as JSON through one escaping helper: a column `it's` or `x,y` stays intact -#}
    {% call statement('spark_clustering_mark_validated') -%}
        {{ spark_clustering._set_tblproperties_sql(staging, {
            'spark_clustering.validated': true,
            'spark_clustering.cluster_by': plan.cluster_by,
            'spark_clustering.method': cfg.method,
            'spark_clustering.bits': plan.layout.bits if plan.layout else '',
            'spark_clustering.row_count': staged.row_count,
            'spark_clustering.num_files': plan.num_files,
            'spark_clustering.bytes_per_row': bytes_per_row,
        }) }}
    {%- endcall %}
{% endmacro %}


{#- Row count + checksum of a written table, and its bytes on disk, in one scan: the checksum is
    summed per file so the file sizes come out of the same scan. -#}
{% macro staged_check(relation, column_names) %}
    {%- set meta = spark_clustering._metadata_column(column_names) -%}
    {%- set row = run_query('select coalesce(sum(row_count), 0), coalesce(sum(hash_sum), 0), coalesce(bit_xor(hash_xor), 0), '
        ~ 'coalesce(sum(file_size), 0) from (select ' ~ spark_clustering.row_checksum_expressions(column_names)
        ~ ', max(' ~ meta ~ '.file_size) as file_size from ' ~ relation ~ ' group by ' ~ meta ~ '.file_path)').rows[0] -%}
    {{ return({'row_count': row[0] | int, 'hash_sum': row[1] | int, 'hash_xor': row[2] | int, 'file_bytes': row[3] | int}) }}
{% endmacro %}


{% macro checks_match(a, b) %}
    {{ return(a.row_count == b.row_count and a.hash_sum == b.hash_sum and a.hash_xor == b.hash_xor) }}
{% endmacro %}


{#- Files for a write: enough that no file exceeds cluster_target_file_rows and, when
    cluster_target_file_bytes is set, that bytes target too. Bytes per row: `bytes_per_row` when the
    caller measured them (recluster, on the files it rewrites), else what the previous build of
    this table measured on its own files (tblproperty spark_clustering.bytes_per_row): parquet/orc
    compression depends on the data, so a table's first build follows the rows target only. -#}
{% macro files_for_target(row_count, cfg, existing=none, bytes_per_row=none) %}
    {%- set files = [1, ((row_count + cfg.target_file_rows - 1) // cfg.target_file_rows)] | max -%}
    {%- set ns = namespace(measured=bytes_per_row) -%}
    {%- if cfg.target_file_bytes and ns.measured is none and existing is not none and not existing.is_view -%}
        {%- for row in run_query('show tblproperties ' ~ existing).rows
                if row[0] == 'spark_clustering.bytes_per_row' and row[1] -%}
            {%- set ns.measured = row[1] | float -%}
        {%- endfor -%}
    {%- endif -%}
    {%- if cfg.target_file_bytes and ns.measured -%}
        {%- set by_bytes = ((row_count * ns.measured / cfg.target_file_bytes) | round(0, 'ceil')) | int -%}
        {%- set files = [files, by_bytes] | max -%}
    {%- endif -%}
    {{ return(files) }}
{% endmacro %}

