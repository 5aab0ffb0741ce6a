{#- After a write of the package (clustered_table, recluster): the statistics sidecar, when the
    extension is loaded and the model has not switched it off (config cluster_file_stats: false,
    read by clustering_config as `file_stats`). Returns write_file_stats' result, or none. -#}
{% macro _write_file_stats_after_write(relation, cfg) %}
    {%- if cfg.file_stats and spark_clustering._has_extension_function('write_file_stats') -%}
        {{ return(spark_clustering._run_write_file_stats(relation)) }}
    {%- endif -%}
    {{ return(none) }}
{% endmacro %}
