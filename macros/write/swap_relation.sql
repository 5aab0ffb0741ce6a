{#- Crash-safe replacement of `target` by a validated `staging` table.

    1. target -> backup (rename)   2. staging -> target (rename)   3. drop backup
    Renames are metastore operations; a crash between any two steps leaves either the old or the
    new table under a known name, and `recover_swap` (run first by every write) finishes or rolls
    back: staging is only promoted when it carries the `spark_clustering.validated` property,
    which is set after its row count and checksum matched the source. With the extension loaded
    the steps run in one call of its `swap_staging_table`, which checks the writer lease `lease`
    first and releases it last (returns true: the lease is given up); without it, one statement
    each (returns false). -#}
{% macro swap_relation(staging, target, existing, lease=none, what=none) %}
    {{ return(adapter.dispatch('swap_relation', 'spark_clustering')(staging, target, existing, lease, what)) }}
{% endmacro %}

{% macro spark__swap_relation(staging, target, existing, lease, what) %}
    {%- set backup = spark_clustering._sidecar_relation(target, 'backup') -%}
    {%- set one_call = spark_clustering._has_extension_function('swap_staging_table') -%}
    {#- the lease is checked before anything changes (swap_staging_table checks it itself first) -#}
    {%- if not one_call or (existing is not none and existing.is_view) -%}
        {%- do spark_clustering._table_lease_check(lease, what) -%}
    {%- endif -%}
    {%- if existing is not none and existing.is_view -%}
        {#- A view holds no data: nothing to keep. -#}
        {% do adapter.drop_relation(existing) %}
        {%- set existing = none -%}
    {%- endif -%}
    {%- if one_call -%}
        {#- one round trip instead of six (lease check, 2 renames, backup drop, release) -#}
        {%- do spark_clustering._call_extension('swap_staging_table', {'table': target, 'lease_token': lease or '',
                                                                      'what': what or ('swap of ' ~ target)}) -%}
        {#- dbt's relation cache, as the renames and the drop of the SQL path leave it -#}
        {%- if existing is not none -%}{%- do adapter.cache_renamed(target, backup) -%}{%- endif -%}
        {%- do adapter.cache_renamed(staging, target) -%}
        {%- if existing is not none -%}{%- do adapter.cache_dropped(backup) -%}{%- endif -%}
        {{ return(true) }}
    {%- endif -%}
    {%- if existing is not none -%}
        {% do adapter.rename_relation(target, backup) %}
    {%- endif -%}
    {{ spark_clustering._test_hook('clustered_table.after_backup') }}
    {% do adapter.rename_relation(staging, target) %}
    {{ spark_clustering._test_hook('clustered_table.after_promote') }}
    {%- if existing is not none -%}
        {%- do spark_clustering._drop_sidecar(backup) -%}
    {%- endif -%}
    {{ return(false) }}
{% endmacro %}


{% macro default__swap_relation(staging, target, existing, lease, what) %}
    {{ spark_clustering._unsupported_adapter('swap_relation', 'renames tables with ALTER TABLE ... RENAME TO, which must be a metastore operation') }}
{% endmacro %}
