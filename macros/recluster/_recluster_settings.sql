{#- recluster(): the settings of one table (clustering config + the gate's keys), checked before
    anything is read or written. -#}

{#- Clustering config (clustering_config) + gate settings of the table's model, read from the
    project's graph so run-operation sees what the post-hook sees; cluster_by/method fall back to
    what the last recluster recorded in the table's properties. The table itself decides format and
    partition columns. -#}
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
    {%- set source = {} -%}
    {%- set ns = namespace(origin='config') -%}
    {%- for key in ['cluster_by', 'cluster_method', 'cluster_ranges', 'cluster_target_file_rows',
                    'cluster_target_file_bytes', 'cluster_num_files', 'cluster_sample_rows_per_range',
                    'cluster_validate', 'cluster_workload', 'recluster', 'skip_recluster'] -%}
        {%- set value = spark_clustering._model_config_of(relation, key) -%}
        {%- if value is not none -%}{%- do source.update({key: value}) -%}{%- endif -%}
    {%- endfor -%}
    {#- cluster_by 'auto': the columns the build chose (the workload may have changed since) -#}
    {%- if source.get('cluster_by') == 'auto' and detail.properties.get('spark_clustering.cluster_by') -%}
        {%- do source.update({'cluster_by': spark_clustering._list_property(detail.properties['spark_clustering.cluster_by']),
                              'cluster_method': source.get('cluster_method') or 'auto'}) -%}
    {%- endif -%}
    {%- if source.get('cluster_by') is none and detail.properties.get('spark_clustering.cluster_by') -%}
        {%- do source.update({'cluster_by': spark_clustering._list_property(detail.properties['spark_clustering.cluster_by'])}) -%}
        {%- set ns.origin = 'property' -%}
    {%- endif -%}
    {%- if source.get('cluster_method') is none and detail.properties.get('spark_clustering.method') -%}
        {%- do source.update({'cluster_method': detail.properties['spark_clustering.method']}) -%}
    {%- endif -%}
    {%- if columns is not none -%}
        {%- do source.update({'cluster_by': columns}) -%}
        {%- set ns.origin = 'argument' -%}
    {%- endif -%}
    {%- if method is not none -%}{%- do source.update({'cluster_method': method}) -%}{%- endif -%}
    {%- if source.get('cluster_by') is none -%}
        {{ exceptions.raise_compiler_error(
            "recluster: " ~ relation ~ " has no `cluster_by`: set it in the model's config (or under meta), "
            ~ "or pass it, e.g. --args '{relation: " ~ relation ~ ", columns: [event_time, device_id]}'") }}
    {%- endif -%}
    {%- if detail.provider not in ['parquet', 'orc', 'delta', 'iceberg'] -%}
        {{ exceptions.raise_compiler_error(
            "recluster: " ~ subject ~ " is a '" ~ detail.provider ~ "' table; recluster rewrites parquet, orc, "
            ~ "Delta Lake and Iceberg tables" ~ (" (Hudi has its own clustering service)" if detail.provider == 'hudi' else "") ~ ".") }}
    {%- endif -%}
    {%- do source.update({'file_format': detail.provider, 'partition_by': detail.partition_by}) -%}
    {%- set cfg = spark_clustering.clustering_config(source, subject) -%}
    {#- an `auto` table keeps the layout its build chose (the workload is simulated on full builds) -#}
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
        {%- if ns.origin == 'argument' -%}
            {{ spark_clustering._config_error('columns', columns, missing ~ "pass columns of the table, e.g. --args '{relation: "
                ~ table_name ~ ", columns: [" ~ detail.columns[:2] | join(', ') ~ "]}'", subject, 'argument') }}
        {%- elif ns.origin == 'property' -%}
            {{ spark_clustering._config_error('cluster_by', cfg.cluster_by, missing ~ "they were read from the table property "
                ~ "spark_clustering.cluster_by (the last clustering); set cluster_by in the model's config or pass "
                ~ "columns, e.g. --args '{relation: " ~ table_name ~ ", columns: [" ~ detail.columns[:2] | join(', ') ~ "]}'", subject) }}
        {%- else -%}
            {{ spark_clustering._config_error('cluster_by', cfg.cluster_by, missing ~ "the table was built before the model's "
                ~ "columns changed (an incremental run keeps the table's columns): rebuild it with dbt run --full-refresh"
                ~ (" --select " ~ node.name if node is not none else "") ~ ", or cluster_by columns the table has", subject) }}
        {%- endif -%}
    {%- endfor -%}

    {%- set recluster_keys = ['max_average_depth', 'max_depth', 'min_new_rows', 'max_rounds', 'merge_ratio'] -%}
    {%- set rc = source.get('recluster') or {} -%}
    {%- if rc is not mapping -%}
        {{ spark_clustering._config_error('recluster', rc, 'use a dict, e.g. {max_average_depth: 8, min_new_rows: 100000}', subject) }}
    {%- endif -%}
    {%- for key in rc if key not in recluster_keys -%}
        {{ spark_clustering._config_error('recluster', rc, "unknown key '" ~ key ~ "'; the keys are " ~ recluster_keys | join(', '), subject) }}
    {%- endfor -%}
    {#- every key is reported as part of the `recluster` dict the user wrote -#}
    {%- set t = rc.get('max_average_depth', 'auto') -%}
    {%- if t != 'auto' -%}
        {%- set t = spark_clustering._require_number('recluster', t, "max_average_depth must be 'auto' or a number >= 1", min=1, subject=subject, shown=rc) -%}
    {%- endif -%}
    {%- set max_depth = rc.get('max_depth') -%}
    {%- if max_depth is not none -%}
        {%- set max_depth = spark_clustering._require_number('recluster', max_depth, 'max_depth must be a number >= 1', min=1, subject=subject, shown=rc) -%}
    {%- endif -%}
    {%- set min_new_rows = spark_clustering._require_number('recluster', rc.get('min_new_rows', 1), 'min_new_rows must be a whole number >= 0',
                                                            min=0, integer=true, subject=subject, shown=rc) -%}
    {%- set max_rounds = spark_clustering._require_number('recluster', rc.get('max_rounds', 4), 'max_rounds must be a whole number >= 1',
                                                          min=1, integer=true, subject=subject, shown=rc) -%}
    {%- set merge_ratio = spark_clustering._require_number('recluster', rc.get('merge_ratio', 2), 'merge_ratio must be a number >= 1',
                                                           min=1, subject=subject, shown=rc) -%}
    {%- set skip = spark_clustering._require_bool('skip_recluster', source.get('skip_recluster', false), subject) -%}
    {{ return({
        'cfg': cfg, 'detail': detail, 'label': (model.name if model is defined and model and this is defined else relation | string),
        'max_average_depth': t, 'max_depth': max_depth, 'min_new_rows': min_new_rows,
        'max_rounds': max_rounds, 'merge_ratio': merge_ratio, 'skip': skip,
        'table_name': relation.schema ~ '.' ~ relation.identifier,
    }) }}
{% endmacro %}
