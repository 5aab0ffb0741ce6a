{#- Crash-safe replacement of `target` by a validated `staging` table.

    1. target -> backup (rename)   2. staging -> target (rename)   3. drop backup
    Renames are metastore operations; a crash between any two steps leaves either the old or the
    new table under a known name, and `recover_swap` (run first by every write) finishes or rolls
    back: staging is only promoted when it carries the `spark_clustering.validated` property,
    which is set after its row count and checksum matched the source. -#}
{% macro swap_relation(staging, target, existing) %}
    {{ return(adapter.dispatch('swap_relation', 'spark_clustering')(staging, target, existing)) }}
{% endmacro %}

{% macro spark__swap_relation(staging, target, existing) %}
    {%- set backup = spark_clustering.sidecar_relation(target, 'backup') -%}
    {%- if existing is not none and existing.is_view -%}
        {#- A view holds no data: nothing to keep. -#}
        {% do adapter.drop_relation(existing) %}
        {%- set existing = none -%}
    {%- endif -%}
    {%- if existing is not none -%}
        {% do adapter.rename_relation(target, backup) %}
    {%- endif -%}
    {{ spark_clustering.fault_point('after_backup') }}
    {% do adapter.rename_relation(staging, target) %}
    {{ spark_clustering.fault_point('after_promote') }}
    {%- if existing is not none -%}
        {%- do spark_clustering._drop_sidecar(backup) -%}
    {%- endif -%}
{% endmacro %}

{#- Drop one of the package's sidecar tables with its files: DROP keeps an external table's files
    (a location_root build), which would leave every previous version on disk. Needs the extension;
    without it the table is dropped and its directory left, as Spark does. -#}
{% macro _drop_sidecar(relation) %}
    {%- if spark_clustering._has_lease_functions() -%}
        {%- do run_query("select * from drop_sidecar_table(" ~ spark_clustering._sql_literal(relation.schema ~ '.' ~ relation.identifier, 'drop') ~ ")") -%}
        {%- do adapter.cache_dropped(relation) -%}
    {%- else -%}
        {% do adapter.drop_relation(relation) %}
    {%- endif -%}
{% endmacro %}

{#- `<identifier>__sc_<kind>` beside `target`: staging, backup. -#}
{% macro sidecar_relation(target, kind) %}
    {{ return(api.Relation.create(database=target.database, schema=target.schema,
                                  identifier=target.identifier ~ '__sc_' ~ kind, type='table')) }}
{% endmacro %}

{#- Finish or roll back a swap that a crash interrupted, and drop an unvalidated staging table. -#}
{% macro recover_swap(target) %}
    {{ return(adapter.dispatch('recover_swap', 'spark_clustering')(target)) }}
{% endmacro %}

{% macro spark__recover_swap(target) %}
    {%- set staging = spark_clustering.sidecar_relation(target, 'staging') -%}
    {%- set backup = spark_clustering.sidecar_relation(target, 'backup') -%}
    {%- set has_target = adapter.get_relation(target.database, target.schema, target.identifier) is not none -%}
    {%- set has_staging = adapter.get_relation(staging.database, staging.schema, staging.identifier) is not none -%}
    {%- set has_backup = adapter.get_relation(backup.database, backup.schema, backup.identifier) is not none -%}
    {%- if has_backup and not has_target -%}
        {%- if has_staging and spark_clustering.is_validated(staging) -%}
            {{ log('spark_clustering: ' ~ target ~ ': finishing an interrupted swap (promoting the validated staging table)', info=true) }}
            {% do adapter.rename_relation(staging, target) %}
            {%- set has_staging = false -%}
        {%- else -%}
            {{ log('spark_clustering: ' ~ target ~ ': rolling back an interrupted swap (restoring the previous table)', info=true) }}
            {% do adapter.rename_relation(backup, target) %}
            {%- set has_backup = false -%}
        {%- endif -%}
    {%- endif -%}
    {%- if has_backup -%}
        {{ log('spark_clustering: ' ~ target ~ ': dropping the previous version left by an interrupted swap', info=true) }}
        {%- do spark_clustering._drop_sidecar(backup) -%}
    {%- endif -%}
    {%- if has_staging -%}
        {{ log('spark_clustering: ' ~ target ~ ': dropping staging table left by an interrupted build', info=true) }}
        {%- do spark_clustering._drop_sidecar(staging) -%}
    {%- endif -%}
{% endmacro %}

{% macro is_validated(relation) %}
    {%- set props = run_query('show tblproperties ' ~ relation) -%}
    {%- for row in props.rows -%}
        {%- if row[0] == 'spark_clustering.validated' and row[1] == 'true' -%}{{ return(true) }}{%- endif -%}
    {%- endfor -%}
    {{ return(false) }}
{% endmacro %}

{#- Test hook: var spark_clustering_fail_at = '<point>' raises there, to prove a failure at that
    step leaves the data readable. Inert unless the var is set. -#}
{% macro fault_point(name) %}
    {%- if var('spark_clustering_fail_at', none) == name -%}
        {{ exceptions.raise_compiler_error('spark_clustering: injected failure at ' ~ name ~ ' (var spark_clustering_fail_at)') }}
    {%- endif -%}
{% endmacro %}
