{#- Iceberg tables: what differs from Delta (_format_table.sql holds what they share). -#}

{#- read_whole_bytes: Iceberg 1.12's Parquet reader fetches a data file of at most 1 MiB whole,
    whatever columns a scan asks for (Parquet.ReadBuilder: EagerInputFile, a fixed threshold that no
    setting changes). -#}
{% macro _iceberg_table_kind() %}
    {%- set kind = spark_clustering._format_table_kind() -%}
    {%- do kind.update({
        'name': 'iceberg',
        'version': spark_clustering._iceberg_table_version,
        'replace_version': spark_clustering._iceberg_replace_version,
        'version_known_before_commit': false,
        'file_column': spark_clustering._iceberg_file_column,
        'staging_dir': spark_clustering._iceberg_staging_dir,
        'metadata_file_stats': spark_clustering._iceberg_metadata_file_stats,
        'exact_stats_properties': spark_clustering._iceberg_exact_stats_properties,
        'refuse_layout': spark_clustering._iceberg_refuse_layout,
        'refuse_unbounded_columns': spark_clustering._table_kind_skips,
        'restore_sql': spark_clustering._iceberg_restore_sql,
        'read_whole_bytes': 1048576,
    }) -%}
    {{ return(kind) }}
{% endmacro %}


{#- The current snapshot id (a reserved table property): what time travel (VERSION AS OF) and
    set_current_snapshot name; none before the first snapshot. -#}
{% macro _iceberg_table_version(relation) %}
    {%- set snapshot = spark_clustering._table_properties(relation).get('current-snapshot-id') -%}
    {{ return(none if snapshot in [none, 'none', ''] else snapshot | int) }}
{% endmacro %}


{#- The snapshot the whole-table write after `previous` committed: a CREATE / REPLACE TABLE AS
    SELECT starts a new lineage, so it is the current lineage's root (not the current snapshot,
    which may be another writer's append on top of it); the current one if there is no root. -#}
{% macro _iceberg_replace_version(relation, previous) %}
    {%- set roots = run_query('select snapshot_id from ' ~ relation ~ '.history where is_current_ancestor and parent_id is null').rows -%}
    {{ return(roots[0][0] | int if roots else spark_clustering._iceberg_table_version(relation)) }}
{% endmacro %}


{#- Iceberg names a row's data file by its own hidden column. -#}
{% macro _iceberg_file_column(column_names) %}
    {{ return('_file') }}
{% endmacro %}


{#- Under the table's data directory, named for the run's level and run (manifests keep the paths). -#}
{% macro _iceberg_staging_dir(location, level, run_id) %}
    {{ return(location ~ '/data/sc-l' ~ level ~ '-' ~ run_id) }}
{% endmacro %}


{#- Not rollback_to_snapshot: a REPLACE starts a new lineage, so the old snapshot is no ancestor. -#}
{% macro _iceberg_restore_sql(relation, version) %}
    {{ return("call spark_catalog.system.set_current_snapshot(table => "
              ~ spark_clustering._sql_literal(relation.schema ~ '.' ~ relation.identifier, 'rollback') ~ ", snapshot_id => " ~ version ~ ")") }}
{% endmacro %}


{#- Iceberg bounds every primitive type, truncating them to 16 bytes by default: metrics mode `full`
    for each clustering column, for this write and every later writer of the table. Its writer keeps
    the package's distribution and order (it would otherwise ask Spark to shuffle a partitioned
    table's rows by partition again). -#}
{% macro _iceberg_exact_stats_properties(column_names, cluster_by) %}
    {%- set properties = {'write.distribution-mode': 'none', 'write.spark.fanout.enabled': 'true'} -%}
    {%- for name in cluster_by -%}
        {%- do properties.update({'write.metadata.metrics.column.' ~ name: 'full'}) -%}
    {%- endfor -%}
    {{ return(properties) }}
{% endmacro %}


{#- A sort order the table declares is never replaced silently: Iceberg's writers and
    rewrite_data_files would sort its files by it, and CREATE OR REPLACE would drop it. -#}
{% macro _iceberg_refuse_layout(target, detail, cluster_by) %}
    {%- if detail.properties.get('sort-order') -%}
        {{ spark_clustering._config_error('cluster_by', cluster_by, "the Iceberg table " ~ target
            ~ " declares the sort order " ~ detail.properties['sort-order'] ~ ": Iceberg's writers and rewrite_data_files "
            ~ "would sort its files by that, and a rebuild would drop it. Run ALTER TABLE " ~ target ~ " WRITE UNORDERED "
            ~ "to hand its layout to spark_clustering, or materialize the model as a table to keep the sort order", none) }}
    {%- endif -%}
{% endmacro %}


{#- An Iceberg table's file statistics from its `files` metadata table (its manifests: no data file
    is read), when they are exact for every column asked: the column's metrics mode is `full`
    (what clustered_table and recluster set for the clustering columns), or `truncate(n)` on a
    column that is neither string nor binary (only those are truncated); never for float/double
    (Iceberg's bounds leave NaN out, Spark's max counts it as the largest value) and never while
    the table has row-level delete files (the bounds and record counts would include deleted rows).
    Otherwise '' and file_stats reads the rows. `inexact_column` (_file_stats_sql): the delete files
    are counted in the same statement (its inexact_files), not by one of their own. -#}
{% macro _iceberg_metadata_file_stats(relation, column_list, detail, inexact_column=false) %}
    {%- set properties = detail.properties -%}
    {%- set columns_by_name = spark_clustering._columns_by_name(relation) -%}
    {%- set default_mode = properties.get('write.metadata.metrics.default', 'truncate(16)') | lower -%}
    {%- for name in column_list -%}
        {%- set mode = properties.get('write.metadata.metrics.column.' ~ name, default_mode) | lower -%}
        {%- set type = (columns_by_name.get(name | lower) or {}).get('type', '') -%}
        {%- if type in ['float', 'double'] or not (mode == 'full' or (mode.startswith('truncate') and type not in ['string', 'binary'])) -%}
            {{ return('') }}
        {%- endif -%}
    {%- endfor -%}
    {%- if not inexact_column and run_query('select count(*) from '
            ~ spark_clustering._iceberg_metadata_table(relation, 'delete_files')).rows[0][0] | int > 0 -%}
        {{ return('') }}
    {%- endif -%}
    {#- `files` lists the delete files too (content 1 and 2) -#}
    {%- set sql -%}
select
    file_path,
    record_count as row_count
    {%- for column_name in column_list %}
    {%- set metrics = 'readable_metrics.' ~ spark_clustering._quoted_columns([column_name]) %},
    {{ metrics }}.lower_bound as {{ spark_clustering._quoted_suffixed(column_name, '__min') }},
    {{ metrics }}.upper_bound as {{ spark_clustering._quoted_suffixed(column_name, '__max') }},
    {{ metrics }}.null_value_count as {{ spark_clustering._quoted_suffixed(column_name, '__null_count') }}
    {%- endfor %}
    {%- if inexact_column %},
    count_if(content != 0) over () as inexact_files,
    content
    {%- endif %}
from {{ spark_clustering._iceberg_metadata_table(relation, 'files') }}
    {%- endset -%}
    {%- if inexact_column -%}
        {{ return('select * from (' ~ sql ~ ') where (content = 0 and row_count > 0) or inexact_files > 0') }}
    {%- endif -%}
    {{ return(sql ~ ' where content = 0 and record_count > 0') }}
{% endmacro %}


{#- An Iceberg metadata table of `relation` (files, delete_files, ...) by its full name: written
    `schema.table.files`, Spark first takes `schema` for a catalog and logs CATALOG_NOT_FOUND with
    a stack trace before it finds the table in the session catalog, where dbt-spark's tables are. -#}
{% macro _iceberg_metadata_table(relation, name) %}
    {{ return('spark_catalog.' ~ relation ~ '.' ~ name) }}
{% endmacro %}
