{#- The config of a benchmark's plain (parquet) clustered table of var source: the clustering
    columns (var cluster_by), curve (var method, default hilbert) and file count (var num_files)
    from vars, the table name `alias` (each model's own var, see dbt_project.yml). The models that
    build such a table for different benchmarks share it: `config(parquet_clustered_config(...))`. -#}
{% macro parquet_clustered_config(alias) %}
    {{ return({'materialized': 'clustered_table', 'cluster_by': var('cluster_by'),
               'cluster_method': var('method', 'hilbert'), 'cluster_num_files': var('num_files', none),
               'file_format': 'parquet', 'alias': alias}) }}
{% endmacro %}
