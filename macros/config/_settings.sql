{#- The settings chain: every key the package reads from a model, declared once, and one resolver
    that every path calls (clustered_table, recluster(), the metrics, the audit model), in the
    spirit of Iceberg's SparkReadConf (one chain per setting). Validation of the values is
    clustering_config's (macros/config/clustering_config.sql); this file only finds them. -#}

{#- Every setting, declared once: {key: {default, var, property, paths}}.
      default   the value when no link of the chain sets it
      var       a dbt var that overrides the model's value for a whole invocation
      property  the table property the last build or recluster recorded; read by the paths that
                work on an existing table (recluster(), the metrics), never by a build
      adapter_key  dbt-spark's own key: its macros read it from config() only, so the package does
                not look under meta either (a value there would be half honoured)
      paths     what honours the key: `build` (clustered_table), `recluster` (recluster(), post-hook
                or run-operation), `measure` (clustering_information, files_scanned_ratio, the
                generic tests, the audit model)
    macros/config/config.yml documents every key in a table a test checks against this one. -#}
{% macro _declared_settings() %}
    {{ return({
        'cluster_by':                    {'default': none, 'property': 'spark_clustering.cluster_by', 'paths': ['build', 'recluster', 'measure']},
        'cluster_method':                {'default': 'hilbert', 'property': 'spark_clustering.method', 'paths': ['build', 'recluster']},
        'cluster_workload':              {'default': none, 'paths': ['build', 'recluster', 'measure']},
        'cluster_ranges':                {'default': 1000, 'paths': ['build', 'recluster']},
        'cluster_target_file_rows':      {'default': 1000000, 'paths': ['build', 'recluster']},
        'cluster_target_file_bytes':     {'default': none, 'paths': ['build', 'recluster']},
        'cluster_num_files':             {'default': none, 'paths': ['build', 'recluster']},
        'cluster_sample_rows_per_range': {'default': 20, 'paths': ['build', 'recluster']},
        'cluster_validate':              {'default': 'count', 'paths': ['build']},
        'cluster_file_stats':            {'default': true, 'paths': ['build', 'recluster']},
        'file_format':                   {'default': 'parquet', 'adapter_key': true, 'paths': ['build']},
        'partition_by':                  {'default': none, 'adapter_key': true, 'paths': ['build']},
        'cluster_swap':                  {'default': 'auto', 'paths': ['build']},
        'cluster_lease_wait_seconds':    {'default': 300, 'var': 'spark_clustering_lease_wait_seconds', 'paths': ['build', 'recluster']},
        'recluster':                     {'default': {}, 'paths': ['recluster']},
        'skip_recluster':                {'default': false, 'var': 'spark_clustering_skip_recluster', 'paths': ['recluster']},
    }) }}
{% endmacro %}


{#- Resolve every declared key: {key: {'value': v, 'origin': o}}, o one of 'argument', 'var',
    'config', 'meta', 'property', 'default'. The chain, first set wins (none counts as unset, so a
    model passing var(..., none) gets the default):
      arguments  what the caller fixes: run-operation arguments (recluster's columns, method) and
                 what an existing table decides itself (its format and partition columns)
      var        the key's dbt var
      config     the model's config() / .yml / dbt_project.yml key
      meta       the same key under the model's `meta`, where dbt >= 1.10 wants custom keys; read
                 from the node's config as a plain dict, so dbt prints no deprecation warning
                 (not for dbt-spark's own keys, `adapter_key`)
      property   the table property, when `properties` (the existing table's) are given
      default
    The var of skip_recluster (spark_clustering_skip_recluster) also takes a list of model names:
    true for the models `model_name` names in it, unset for the others; false is unset too, so a
    model's own skip_recluster: true holds whatever the var says.
    `node_config`: a node's config as a mapping (the model's `model.config` in a build, the graph
    node's in a run-operation); none for a table no model builds. cluster_by 'auto' on an existing
    table whose build recorded its columns resolves to those columns (origin 'property'), and its
    method then defaults to auto: the workload may have changed since the build chose them. -#}
{% macro _resolve_settings(node_config=none, properties=none, arguments=none, model_name=none) %}
    {%- set node_config = node_config or {} -%}
    {%- set meta = node_config.get('meta') or {} -%}
    {%- set arguments = arguments or {} -%}
    {%- set resolved = {} -%}
    {%- set ns_by = namespace(auto=false) -%}
    {%- for key, spec in spark_clustering._declared_settings().items() -%}
        {%- set ns = namespace(value=none, origin='default') -%}
        {%- set var_value = var(spec.var, none) if spec.var else none -%}
        {%- if key == 'skip_recluster' -%}
            {%- set var_value = spark_clustering._skip_recluster_var(var_value, model_name) -%}
        {%- endif -%}
        {%- set chain = [('argument', arguments.get(key)),
                         ('var', var_value),
                         ('config', node_config.get(key)),
                         ('meta', none if spec.adapter_key else meta.get(key))] -%}
        {%- for origin, value in chain if ns.origin == 'default' and value is not none -%}
            {%- set ns.value = value -%}
            {%- set ns.origin = origin -%}
        {%- endfor -%}
        {%- if key == 'cluster_by' and ns.value is string and ns.value == 'auto' -%}{%- set ns_by.auto = true -%}{%- endif -%}
        {%- set recorded = (properties or {}).get(spec.property) if spec.property else none -%}
        {%- if recorded and (ns.origin == 'default' or (key == 'cluster_by' and ns.value == 'auto')) -%}
            {%- set ns.value = spark_clustering._list_property(recorded) if key == 'cluster_by' else recorded -%}
            {%- set ns.origin = 'property' -%}
        {%- endif -%}
        {%- if ns.origin == 'default' -%}{%- set ns.value = spec.default -%}{%- endif -%}
        {%- do resolved.update({key: {'value': ns.value, 'origin': ns.origin}}) -%}
    {%- endfor -%}
    {#- cluster_by 'auto' on the model: the method is auto too unless the model sets one -#}
    {%- if ns_by.auto and resolved.cluster_method.origin in ['default', 'property'] -%}
        {%- do resolved.update({'cluster_method': {'value': 'auto', 'origin': 'default'}}) -%}
    {%- endif -%}
    {{ return(resolved) }}
{% endmacro %}


{#- One resolved setting's value of the model/seed/snapshot whose relation this is (none for a table
    no model builds: then only the var, the table's property and the default are left). -#}
{% macro _setting_of(relation, key, properties=none) %}
    {%- set node = spark_clustering._model_node_of(relation) -%}
    {{ return(spark_clustering._resolve_settings(node.config if node is not none else none, properties)[key].value) }}
{% endmacro %}


{#- The current model's config as a plain mapping (dbt's `model` context is the node as a dict): a
    key read from it is never a `config.get` of a custom key, which dbt >= 1.10 warns about. -#}
{% macro _current_model_config() %}
    {{ return(model.config if model is defined and model and model.config is defined else {}) }}
{% endmacro %}


{#- The per-run skip (var spark_clustering_skip_recluster) as the chain's var link of skip_recluster:
    true (every model), or a list of model names (true for those); anything else leaves the link
    unset (none), so the model's own skip_recluster decides. -#}
{% macro _skip_recluster_var(value, model_name) %}
    {%- if value is sameas true or value in ['true', 'True'] -%}
        {{ return(true) }}
    {%- elif value is string -%}
        {{ return(true if model_name is not none and value.split(',') | map('trim') | select('equalto', model_name) | list else none) }}
    {%- elif value is iterable and value is not mapping -%}
        {{ return(true if model_name is not none and model_name in value else none) }}
    {%- endif -%}
    {{ return(none) }}
{% endmacro %}
