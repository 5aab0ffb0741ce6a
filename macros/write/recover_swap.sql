{#- Finish or roll back a swap that a crash interrupted, and drop an unvalidated staging table. -#}
{% macro recover_swap(target) %}
    {{ return(adapter.dispatch('recover_swap', 'spark_clustering')(target)) }}
{% endmacro %}

{% macro spark__recover_swap(target) %}
    {%- set staging = spark_clustering._sidecar_relation(target, 'staging') -%}
    {%- set backup = spark_clustering._sidecar_relation(target, 'backup') -%}
    {%- set has_target = adapter.get_relation(target.database, target.schema, target.identifier) is not none -%}
    {%- set has_staging = adapter.get_relation(staging.database, staging.schema, staging.identifier) is not none -%}
    {%- set has_backup = adapter.get_relation(backup.database, backup.schema, backup.identifier) is not none -%}
    {%- if has_backup and not has_target -%}
        {%- if has_staging and spark_clustering._is_validated(staging) -%}
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


{% macro default__recover_swap(target) %}
    {{ spark_clustering._unsupported_adapter('recover_swap', 'renames tables with ALTER TABLE ... RENAME TO, which must be a metastore operation') }}
{% endmacro %}
