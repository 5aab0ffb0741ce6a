{#- Where each setting of a table's model comes from: every declared key (macros/config/_settings.sql)
    with its resolved value and origin ('argument', 'var', 'config', 'meta', 'property' or
    'default'), its default and the paths that honour it, plus the validated config recluster()
    works with (clustering_config). Resolved exactly as recluster() resolves them: the model's
    config and meta from the project's graph, the table's recorded properties, the table's own
    format and partition columns. Returns {relation, model, settings: {key: {value, origin, default,
    paths}}, config}; under `dbt run-operation clustering_settings` also prints it as one JSON line
    `clustering_settings: {...}`. A config mistake is the same error the build or recluster()
    raises. -#}
{% macro clustering_settings(relation) %}
    {{ return(adapter.dispatch('clustering_settings', 'spark_clustering')(relation)) }}
{% endmacro %}


{% macro spark__clustering_settings(relation) %}
    {%- if not execute -%}{{ return({}) }}{%- endif -%}
    {%- set relation = spark_clustering._resolve_relation(relation, 'clustering_settings') -%}
    {%- set resolved = spark_clustering._recluster_settings(relation) -%}
    {%- set chain = resolved.settings -%}
    {%- set settings = {} -%}
    {%- for key, spec in spark_clustering._declared_settings().items() -%}
        {%- do settings.update({key: {'value': chain[key].value, 'origin': chain[key].origin,
                                      'default': spec.default, 'paths': spec.paths}}) -%}
    {%- endfor -%}
    {%- set cfg = {} -%}
    {%- for key, value in resolved.cfg.items() if key != 'layout' -%}{%- do cfg.update({key: value}) -%}{%- endfor -%}
    {%- set result = {'relation': relation | string, 'model': resolved.model,
                      'settings': settings, 'config': cfg} -%}
    {%- do spark_clustering._print_if_run_operation('clustering_settings', result) -%}
    {{ return(result) }}
{% endmacro %}


{% macro default__clustering_settings(relation) %}
    {{ spark_clustering._unsupported_adapter('clustering_settings', 'reads Spark table properties and file formats') }}
{% endmacro %}
