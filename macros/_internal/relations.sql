{#- Relations: resolving what a user passed, the model behind a table, the package's sidecar tables. -#}

{#- A Relation from a Relation or from a string "table", "schema.table" or "database.schema.table"
    (looked up in the warehouse; a compiler error when it does not exist). -#}
{% macro _resolve_relation(relation, macro_name) %}
    {%- if relation is not string -%}
        {%- if relation is none or relation.identifier is not defined -%}
            {%- set msg -%}
                {{ macro_name }}: argument `relation` must be a Relation (ref('my_model')) or a string 'schema.table', got {{ relation }}. A generic test with a `where` config passes a subquery, which has no data files: remove `where` from this test.
            {%- endset -%}
            {{ exceptions.raise_compiler_error(msg | trim) }}
        {%- endif -%}
        {{ return(relation) }}
    {%- endif -%}
    {%- set parts = (relation | replace('`', '') | trim).split('.') -%}
    {%- if parts | length == 1 -%}
        {%- set found = adapter.get_relation(database=none, schema=target.schema, identifier=parts[0]) -%}
    {%- elif parts | length == 2 -%}
        {%- set found = adapter.get_relation(database=none, schema=parts[0], identifier=parts[1]) -%}
    {%- elif parts | length == 3 -%}
        {%- set found = adapter.get_relation(database=parts[0], schema=parts[1], identifier=parts[2]) -%}
    {%- else -%}
        {%- set found = none -%}
    {%- endif -%}
    {%- if found is none -%}
        {%- set msg -%}
            {{ macro_name }}: argument `relation` '{{ relation }}' does not name an existing table (looked up as schema.table, schema defaulting to the target schema '{{ target.schema }}'); build the model first or pass the right 'schema.table'.
        {%- endset -%}
        {{ exceptions.raise_compiler_error(msg | trim) }}
    {%- endif -%}
    {{ return(found) }}
{% endmacro %}


{#- The model/seed/snapshot node whose relation this is, or none. -#}
{% macro _model_node_of(relation) %}
    {%- for node in graph.nodes.values() if node.resource_type in ['model', 'seed', 'snapshot'] -%}
        {%- set same_schema = (node.schema or '') | lower == (relation.schema or '') | lower -%}
        {%- set same_name = (node.alias or node.name) | lower == (relation.identifier or '') | lower -%}
        {#- Spark relations often carry no database; compare it only when both sides have one -#}
        {%- set same_database = node.database is none or relation.database is none
            or node.database | lower == relation.database | lower -%}
        {%- if same_schema and same_name and same_database -%}
            {{ return(node) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(none) }}
{% endmacro %}


{#- The `cluster_by` (a list) of the model whose relation this is, or none, by the settings chain;
    'auto': the columns the last build chose, recorded on the table (its properties are read only
    then). -#}
{% macro _cluster_by_of(relation) %}
    {%- set cluster_by = spark_clustering._setting_of(relation, 'cluster_by') -%}
    {%- if cluster_by is string and cluster_by == 'auto' -%}
        {%- set cluster_by = spark_clustering._setting_of(relation, 'cluster_by', spark_clustering._table_properties(relation)) -%}
        {{ return(none if cluster_by == 'auto' else cluster_by) }}
    {%- endif -%}
    {{ return([cluster_by] if cluster_by is string else cluster_by) }}
{% endmacro %}


{#- {lower-case column name: Spark data type} of a relation. -#}
{% macro _column_types(relation) %}
    {%- set types = {} -%}
    {%- for column in adapter.get_columns_in_relation(relation) -%}
        {%- do types.update({column.name | lower: column.data_type}) -%}
    {%- endfor -%}
    {{ return(types) }}
{% endmacro %}


{#- `<identifier>__sc_<kind>` beside `target`: the package's sidecar tables (staging, backup, recluster). -#}
{% macro _sidecar_relation(target, kind) %}
    {{ return(api.Relation.create(database=target.database, schema=target.schema,
                                  identifier=target.identifier ~ '__sc_' ~ kind, type='table')) }}
{% endmacro %}


{#- The temporary view a write reads the model's query (or the files to rewrite) through. -#}
{% macro _source_view_name(target, kind='source') %}
    {{ return(target.identifier ~ '__sc_' ~ kind) }}
{% endmacro %}


{#- Drop one of the package's sidecar tables with its files: DROP keeps an external table's files
    (a location_root build), which would leave every previous version on disk. Needs the extension;
    without it the table is dropped and its directory left, as Spark does. -#}
{% macro _drop_sidecar(relation) %}
    {%- if spark_clustering._has_extension_function('drop_sidecar_table') -%}
        {%- do spark_clustering._call_extension('drop_sidecar_table', {'table': relation}) -%}
        {%- do adapter.cache_dropped(relation) -%}
    {%- else -%}
        {% do adapter.drop_relation(relation) %}
    {%- endif -%}
{% endmacro %}


{#- DESCRIBE's account of `relation` (_table_detail: provider, location, properties, ...); none at
    parse time, for a query or a table that does not exist (a query of it fails when it runs
    anyway). -#}
{% macro _existing_table_detail(relation) %}
    {%- if not execute or relation is string or relation.identifier is not defined -%}{{ return(none) }}{%- endif -%}
    {%- if adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) is none
          and not spark_clustering._table_in_catalog(relation) -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(spark_clustering._table_detail(relation)) }}
{% endmacro %}


{#- Whether Spark's catalog has `relation`, for a table dbt's relation cache does not hold: the one a
    materialization created in this invocation (the post-hook of an incremental model's first run:
    dbt-spark does not add the new table to the cache). Asked only for the running model's own
    relation in a run or build (its schema exists then; SHOW TABLES fails on a missing schema, as in
    a compile before the first run): one SHOW TABLES, on a cache miss only. -#}
{% macro _table_in_catalog(relation) %}
    {%- if relation.schema is none or this is not defined or this is none or flags.WHICH not in ['run', 'build'] -%}
        {{ return(false) }}
    {%- endif -%}
    {%- if (relation.schema | lower) != ((this.schema or '') | lower) or (relation.identifier | lower) != ((this.identifier or '') | lower) -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set found = run_query("show tables in " ~ adapter.quote(relation.schema) ~ " like "
                              ~ spark_clustering._sql_literal(relation.identifier, 'file_stats')) -%}
    {{ return(found is not none and (found.rows | length) > 0) }}
{% endmacro %}
