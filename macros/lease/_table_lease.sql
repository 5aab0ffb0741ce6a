{#- The writer lease of a table (the jar's table_lease_acquire / table_lease_release): one writer
    of the package at a time per table, so recovery never touches a live writer's staging and two
    reclusters (or a recluster and a rebuild) never commit over each other. Private helpers. -#}

{#- Take the lease of `relation` and return its token; none when the extension is not loaded (the
    pure-SQL path has no file-system access: docs/concurrency.md says what that leaves unguarded).
    scope 'name': the table name (a rebuild that replaces the table); 'table': name + location (a
    rewrite of its files). Waits up to `wait_seconds` (the model's cluster_lease_wait_seconds,
    resolved and checked by clustering_config) for the holder, then stops with an error naming it. -#}
{% macro _table_lease_acquire(relation, scope, what, wait_seconds) %}
    {%- if not spark_clustering._has_extension_function('table_lease_acquire') -%}{{ return(none) }}{%- endif -%}
    {%- set wait = wait_seconds -%}
    {%- set owner = 'dbt ' ~ invocation_id ~ ' ' ~ what -%}
    {%- set row = spark_clustering._call_extension('table_lease_acquire',
            {'table': relation, 'owner': owner, 'wait_seconds': wait, 'scope': scope}, ['lease_token', 'waited_ms'])[0] -%}
    {%- if row.waited_ms > 1000 -%}
        {{ log('spark_clustering: ' ~ what ~ ': waited ' ~ (row.waited_ms / 1000) | round(1) ~ ' s for the lease of ' ~ relation, info=true) }}
    {%- endif -%}
    {{ return(row.lease_token) }}
{% endmacro %}


{#- Right before a commit point (clustered_table's swap): stop, nothing done, unless the lease is
    still this run's with half a ttl left. -#}
{% macro _table_lease_check(token, what) %}
    {%- if token -%}
        {%- do spark_clustering._call_extension('table_lease_check', {'lease_token': token, 'what': what}, ['held']) -%}
    {%- endif -%}
{% endmacro %}


{% macro _table_lease_release(token) %}
    {%- if token -%}
        {%- do spark_clustering._call_extension('table_lease_release', {'token_or_owner_prefix': token, 'by_owner': false}, ['released']) -%}
    {%- endif -%}
{% endmacro %}


{#- on-run-end (dbt_project.yml): a run that failed between taking and giving up a lease gives it
    up here, so a long-lived Spark (Thrift server, notebook) does not keep renewing it. -#}
{% macro _release_run_leases() %}
    {%- if execute and spark_clustering._has_extension_function('table_lease_acquire') -%}
        {%- do spark_clustering._call_extension('table_lease_release', {'token_or_owner_prefix': 'dbt ' ~ invocation_id ~ ' ', 'by_owner': true}, ['released']) -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}
