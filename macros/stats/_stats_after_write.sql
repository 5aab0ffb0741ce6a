{#- After a write of the package (clustered_table, recluster): the statistics sidecar, when the
    extension is loaded and the model has not switched it off (config cluster_file_stats: false,
    read by clustering_config as `file_stats`). Returns write_file_stats' result, or none.
    `own_write`: `relation` is a table this session has just written whole (clustered_table's new
    table): its parquet string bounds come from the footers where the writer kept them whole. -#}
{% macro _write_file_stats_after_write(relation, cfg, own_write=false) %}
    {%- if cfg.file_stats and spark_clustering._has_extension_function('write_file_stats') -%}
        {{ return(spark_clustering._run_write_file_stats(relation, own_write=own_write)) }}
    {%- endif -%}
    {{ return(none) }}
{% endmacro %}
