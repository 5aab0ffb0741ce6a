{#- `materialized='clustered_table'`: a table whose files are range-partitioned on a Hilbert /
    Z-order / linear key of `cluster_by` and sorted within. parquet/orc: built aside, validated
    (row count, or an order-independent checksum, against the model query) and swapped into place;
    the previous table stays readable until the new one is complete (dbt-spark's `table` drops a
    parquet table before rebuilding it). delta/iceberg: written and committed in one transaction
    of the format (_format_table_write.sql). -#}
{% materialization clustered_table, adapter='spark' %}
    {%- set cfg = spark_clustering.clustering_config() -%}
    {#- cluster_workload: observed -> the boxes Spark recorded from this table's scans -#}
    {%- do cfg.update({'workload': spark_clustering._resolve_workload(cfg.workload, this)}) -%}
    {%- set target_relation = api.Relation.create(identifier=model['alias'], schema=schema,
                                                  database=database, type='table') -%}
    {%- set staging = spark_clustering._sidecar_relation(target_relation, 'staging') -%}
    {%- set grant_config = config.get('grants') -%}

    {{ run_hooks(pre_hooks) }}

    {%- set table_format = cfg.file_format in ['delta', 'iceberg'] -%}
    {%- if table_format -%}
        {#- Delta / Iceberg: the format's transaction is the swap, its concurrency control the lease -#}
        {%- set existing = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
    {%- else -%}
        {#- One writer of the package per table (a recluster of it waits, or it waits for one); then
            finish or roll back whatever an interrupted run left, before reading the current state. -#}
        {%- set lease = spark_clustering._table_lease_acquire(target_relation, 'name', 'clustered_table ' ~ model.name, cfg.lease_wait_seconds) -%}
        {{ spark_clustering.recover_swap(target_relation) }}
        {%- set existing = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
    {%- endif -%}

    {%- if config.get('contract').enforced -%}
        {{ get_assert_columns_equivalent(compiled_code) }}
    {%- endif -%}

    {%- set source_view = spark_clustering._source_view_name(target_relation) -%}
    {% call statement('spark_clustering_source_view') -%}
        create or replace temporary view {{ source_view }} as {{ compiled_code }}
    {%- endcall %}

    {%- set plan = spark_clustering._plan_clustered_write(source_view, cfg, existing) -%}

    {%- if table_format -%}
        {{ spark_clustering._replace_format_table(target_relation, existing, plan, cfg) }}
    {%- else -%}
        {%- set build_location = spark_clustering._build_location(target_relation, cfg) -%}
        {% call statement('main') -%}
            {{ spark_clustering._create_clustered_table_as(staging, plan.select_sql, cfg, build_location) }}
        {%- endcall %}
        {{ spark_clustering._test_hook('clustered_table.after_staging_write') }}

        {#- statistics for data skipping, keyed by paths relative to the table directory: they stay
            valid through the swap (the files do not move, or move with their directory); their
            per-file row counts are what the copy's row count is checked with -#}
        {%- set file_stats = spark_clustering._write_file_stats_after_write(staging, cfg) -%}
        {{ spark_clustering._validate_staging(staging, plan, cfg, file_stats) }}
        {%- set released = spark_clustering.swap_relation(staging, target_relation, existing, lease, 'clustered_table ' ~ model.name) -%}
        {%- if not released -%}{%- do spark_clustering._table_lease_release(lease) -%}{%- endif -%}
    {%- endif -%}

    {% call statement('spark_clustering_drop_source_view') -%}
        drop view if exists {{ source_view }}
    {%- endcall %}

    {% set should_revoke = should_revoke(existing, full_refresh_mode=True) %}
    {% do apply_grants(target_relation, grant_config, should_revoke) %}
    {% do persist_docs(target_relation, model) %}

    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
