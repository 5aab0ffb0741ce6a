{#- recluster(): the settings of one table (clustering config + the gate's keys), checked before
    anything is read or written. -#}

{#- Clustering config + gate settings of the table's model (clustering_config over the one settings
    chain), read from the project's graph so a run-operation sees what the post-hook sees;
    cluster_by/method fall back to what the last build or recluster recorded in the table's
    properties. The table itself decides format and partition columns. -#}
{% macro _recluster_settings(relation, columns=none, method=none) %}
    {%- set detail = spark_clustering._table_detail(relation) -%}
    {%- set table_name = relation.schema ~ '.' ~ relation.identifier -%}
    {%- set node = spark_clustering._model_node_of(relation) -%}
    {#- errors name the model when the graph knows one for the table, else the table -#}
    {%- set subject = ("model '" ~ node.name ~ "' (table " ~ table_name ~ ")") if node is not none else ('table ' ~ table_name) -%}
    {%- if detail.type == 'VIEW' -%}
        {{ exceptions.raise_compiler_error(
            "recluster: " ~ subject ~ " is a view: it has no data files to rewrite. Recluster the parquet/orc table "
            ~ "the view reads (--args '{relation: <schema>.<table>}'), or materialize the model as incremental or "
            ~ "table (a view model cannot carry the recluster() post-hook).") }}
    {%- endif -%}
    {%- set kind = spark_clustering._table_kind(detail.provider) -%}
    {%- if kind is none -%}
        {{ exceptions.raise_compiler_error(
            "recluster: " ~ subject ~ " is a '" ~ detail.provider ~ "' table; recluster rewrites parquet, orc, "
            ~ "Delta Lake and Iceberg tables" ~ (" (Hudi has its own clustering service)" if detail.provider == 'hudi' else "") ~ ".") }}
    {%- endif -%}
    {#- the one settings chain, as a build reads it, plus what this call and the table fix: the
        run-operation's columns / method, the table's own format and partition columns, and what the
        last build or recluster recorded in its properties -#}
    {%- set arguments = {'cluster_by': columns, 'cluster_method': method,
                         'file_format': detail.provider, 'partition_by': detail.partition_by} -%}
    {%- set node_config = node.config if node is not none else none -%}
    {%- set resolved = spark_clustering._resolve_settings(node_config, detail.properties, arguments,
                                                          node.name if node is not none else none) -%}
    {%- if resolved.cluster_by.value is none -%}
        {{ exceptions.raise_compiler_error(
            "recluster: " ~ relation ~ " has no `cluster_by`: set it in the model's config (or under meta), "
            ~ "or pass it, e.g. --args '{relation: " ~ relation ~ ", columns: [event_time, device_id]}'") }}
    {%- endif -%}
    {%- set cfg = spark_clustering.clustering_config(subject=subject, resolved=resolved) -%}
    {#- an `auto` table keeps the layout its build chose (the workload is simulated on full builds) -#}
    {%- set workload_config = cfg.workload -%}
    {%- do cfg.update({'workload': spark_clustering._resolve_workload(cfg.workload, relation)}) -%}
    {%- if cfg.method == 'auto' -%}
        {%- do cfg.update({'layout': spark_clustering._recorded_layout(detail.properties.get('spark_clustering.layout'), cfg.cluster_by)}) -%}
    {%- endif -%}

    {#- Every clustering column must be one of the table's before anything is read or written: an
        incremental model whose column was renamed keeps the old column in its table. -#}
    {%- set table_columns = detail.columns | map('lower') | list -%}
    {%- for name in cfg.cluster_by if name | lower not in table_columns -%}
        {%- set missing = "column '" ~ name ~ "' is not a column of " ~ table_name ~ " (its columns: "
                          ~ detail.columns | join(', ') ~ "); " -%}
        {%- if cfg.origins.cluster_by == 'argument' -%}
            {{ spark_clustering._config_error('columns', columns, missing ~ "pass columns of the table, e.g. --args '{relation: "
                ~ table_name ~ ", columns: [" ~ detail.columns[:2] | join(', ') ~ "]}'", subject, 'argument') }}
        {%- elif cfg.origins.cluster_by == 'property' -%}
            {{ spark_clustering._config_error('cluster_by', cfg.cluster_by, missing ~ "they were read from the table property "
                ~ "spark_clustering.cluster_by (the last clustering); set cluster_by in the model's config or pass "
                ~ "columns, e.g. --args '{relation: " ~ table_name ~ ", columns: [" ~ detail.columns[:2] | join(', ') ~ "]}'", subject) }}
        {%- else -%}
            {{ spark_clustering._config_error('cluster_by', cfg.cluster_by, missing ~ "the table was built before the model's "
                ~ "columns changed (an incremental run keeps the table's columns): rebuild it with dbt run --full-refresh"
                ~ (" --select " ~ node.name if node is not none else "") ~ ", or cluster_by columns the table has", subject) }}
        {%- endif -%}
    {%- endfor -%}

    {#- the key the table was last clustered under (its properties), when the config now says another:
        its runs are clustered on columns the queries no longer follow, so the first round rewrites
        every file rather than mixing two keys -#}
    {%- set recorded_by = detail.properties.get('spark_clustering.cluster_by') -%}
    {%- set recorded_method = detail.properties.get('spark_clustering.method') -%}
    {%- set key_change = none -%}
    {%- if recorded_by and (spark_clustering._list_property(recorded_by) | map('lower') | list) != (cfg.cluster_by | map('lower') | list) -%}
        {%- set key_change = 'cluster_by changed from ' ~ spark_clustering._list_property(recorded_by) | join(', ')
                             ~ ' to ' ~ cfg.cluster_by | join(', ') -%}
    {%- elif recorded_method and recorded_method != cfg.method -%}
        {%- set key_change = 'cluster_method changed from ' ~ recorded_method ~ ' to ' ~ cfg.method -%}
    {%- endif -%}

    {{ return({
        'cfg': cfg, 'detail': detail, 'key_change': key_change, 'label': (model.name if model is defined and model and this is defined else relation | string),
        'max_average_depth': cfg.gate.max_average_depth, 'max_depth': cfg.gate.max_depth,
        'workload_config': workload_config, 'policy': cfg.gate.policy, 'horizon_runs': cfg.gate.horizon_runs, 'queries_per_run': cfg.gate.queries_per_run,
        'min_new_rows': cfg.gate.min_new_rows, 'max_rounds': cfg.gate.max_rounds, 'merge_ratio': cfg.gate.merge_ratio,
        'cache_bytes': cfg.gate.cache_bytes,
        'skip': cfg.skip_recluster, 'settings': resolved,
        'skip_reason': ('var spark_clustering_skip_recluster names the model' if resolved.skip_recluster.origin == 'var'
                        else resolved.skip_recluster.origin ~ ' skip_recluster is true'), 'model': node.name if node is not none else none,
        'table_name': relation.schema ~ '.' ~ relation.identifier, 'kind': kind,
    }) }}
{% endmacro %}
