{#- `materialized='clustered_table'`: a table whose files are range-partitioned on a Hilbert /
    Z-order / linear key of `cluster_by` and sorted within. How the files are written, validated
    and committed is the table kind's (macros/tables/): parquet/orc built aside, validated and
    swapped into place under the table's lease, the previous table readable until the new one is
    complete; Delta/Iceberg written and committed in one transaction of the format. -#}
{% materialization clustered_table, adapter='spark' %}
    {%- set cfg = spark_clustering.clustering_config() -%}
    {#- cluster_workload: observed -> the boxes Spark recorded from this table's scans -#}
    {%- do cfg.update({'workload': spark_clustering._resolve_workload(cfg.workload, this)}) -%}
    {%- set target_relation = api.Relation.create(identifier=model['alias'], schema=schema,
                                                  database=database, type='table') -%}
    {%- set grant_config = config.get('grants') -%}

    {{ run_hooks(pre_hooks) }}

    {%- set kind = spark_clustering._table_kind(cfg.file_format) -%}
    {%- set begun = kind.build_begin(target_relation, cfg) -%}
    {%- set existing = begun.existing -%}

    {%- if config.get('contract').enforced -%}
        {{ get_assert_columns_equivalent(compiled_code) }}
    {%- endif -%}

    {%- set source_view = spark_clustering._source_view_name(target_relation) -%}
    {% call statement('spark_clustering_source_view') -%}
        create or replace temporary view {{ source_view }} as {{ compiled_code }}
    {%- endcall %}

    {%- set plan = spark_clustering._plan_clustered_write(source_view, cfg, existing) -%}

    {%- do kind.build_write(target_relation, existing, plan, cfg, begun.lease) -%}

    {% call statement('spark_clustering_drop_source_view') -%}
        drop view if exists {{ source_view }}
    {%- endcall %}

    {% set should_revoke = should_revoke(existing, full_refresh_mode=True) %}
    {% do apply_grants(target_relation, grant_config, should_revoke) %}
    {% do persist_docs(target_relation, model) %}

    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
