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
    {%- set backup = spark_clustering._sidecar_relation(target, 'backup') -%}
    {%- if existing is not none and existing.is_view -%}
        {#- A view holds no data: nothing to keep. -#}
        {% do adapter.drop_relation(existing) %}
        {%- set existing = none -%}
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
{% endmacro %}


{% macro default__swap_relation(staging, target, existing) %}
    {{ spark_clustering._unsupported_adapter('swap_relation', 'renames tables with ALTER TABLE ... RENAME TO, which must be a metastore operation') }}
{% endmacro %}
