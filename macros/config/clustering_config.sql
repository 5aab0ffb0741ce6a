{#- Read and validate the clustering config of the current model (or of `source`, any mapping with
    .get(key, default), e.g. a model node's config when recluster runs as a run-operation). Every
    mistake is a compiler error naming the model, the config key and the fix. -#}
{% macro clustering_config(source=none) %}
    {{ return(adapter.dispatch('clustering_config', 'spark_clustering')(source)) }}
{% endmacro %}

{% macro default__clustering_config(source=none) %}
    {%- set cfg_source = source if source is not none else config -%}
    {%- set methods = ['hilbert', 'zorder', 'linear'] -%}
    {%- set formats = ['parquet', 'orc'] -%}

    {%- set cluster_by = cfg_source.get('cluster_by') -%}
    {%- if cluster_by is none or cluster_by == [] or cluster_by == '' -%}
        {{ spark_clustering.config_error('cluster_by', cluster_by,
            "set it to a column or a list of columns, e.g. cluster_by=['mission_id', 'ts']") }}
    {%- endif -%}
    {%- if cluster_by is string -%}{%- set cluster_by = [cluster_by] -%}{%- endif -%}
    {%- for col in cluster_by -%}
        {%- if col is not string or col | trim == '' -%}
            {{ spark_clustering.config_error('cluster_by', cluster_by, 'every entry must be a column name (a non-empty string)') }}
        {%- endif -%}
    {%- endfor -%}
    {%- set lowered = cluster_by | map('lower') | list -%}
    {%- if lowered | unique | list | length != lowered | length -%}
        {{ spark_clustering.config_error('cluster_by', cluster_by, 'list each column once') }}
    {%- endif -%}

    {%- set method = cfg_source.get('cluster_method', 'hilbert') -%}
    {%- if method not in methods -%}
        {{ spark_clustering.config_error('cluster_method', method, 'use one of: ' ~ methods | join(', ')) }}
    {%- endif -%}
    {%- if cluster_by | length > 32 and method != 'linear' -%}
        {{ spark_clustering.config_error('cluster_by', cluster_by, 'at most 32 columns for a curve key; clustering on more columns gains nothing measurable') }}
    {%- endif -%}

    {#- cluster_ranges: an int for every column or a {column: int} dict; 1000 ranges -> 10 bits a column. -#}
    {%- set ranges_cfg = cfg_source.get('cluster_ranges', 1000) -%}
    {%- set ranges = {} -%}
    {%- for col in cluster_by -%}
        {%- if ranges_cfg is mapping -%}
            {%- set r = ranges_cfg.get(col, 1000) -%}
        {%- else -%}
            {%- set r = ranges_cfg -%}
        {%- endif -%}
        {%- if r is not number or r is boolean or r != (r | int) or r < 2 or r > 65535 -%}
            {{ spark_clustering.config_error('cluster_ranges', ranges_cfg,
                'use a whole number from 2 to 65535, or a dict {column: number}') }}
        {%- endif -%}
        {%- do ranges.update({col: r | int}) -%}
    {%- endfor -%}
    {%- if ranges_cfg is mapping -%}
        {%- for col in ranges_cfg -%}
            {%- if col not in cluster_by -%}
                {{ spark_clustering.config_error('cluster_ranges', ranges_cfg,
                    "key '" ~ col ~ "' is not in cluster_by " ~ cluster_by | join(', ')) }}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}

    {%- set target_rows = cfg_source.get('cluster_target_file_rows', 1000000) -%}
    {%- if target_rows is not number or target_rows is boolean or target_rows < 1 -%}
        {{ spark_clustering.config_error('cluster_target_file_rows', target_rows, 'use a positive whole number of rows per file') }}
    {%- endif -%}
    {%- set target_bytes = cfg_source.get('cluster_target_file_bytes') -%}
    {%- if target_bytes is not none and (target_bytes is not number or target_bytes is boolean or target_bytes < 1024) -%}
        {{ spark_clustering.config_error('cluster_target_file_bytes', target_bytes, 'use a whole number of bytes per file of at least 1024, e.g. 134217728 for 128 MiB') }}
    {%- endif -%}
    {%- set num_files = cfg_source.get('cluster_num_files') -%}
    {%- if num_files is not none and (num_files is not number or num_files is boolean or num_files < 1) -%}
        {{ spark_clustering.config_error('cluster_num_files', num_files, 'use a positive whole number, or leave it unset to derive it from cluster_target_file_rows') }}
    {%- endif -%}

    {%- set file_format = cfg_source.get('file_format', 'parquet') -%}
    {%- if file_format not in formats -%}
        {{ spark_clustering.config_error('file_format', file_format,
            'clustered_table writes ' ~ formats | join(' or ') ~ '; Delta and Iceberg tables have their own clustering (OPTIMIZE ZORDER BY / rewrite_data_files)') }}
    {%- endif -%}

    {%- set partition_by = cfg_source.get('partition_by') or [] -%}
    {%- if partition_by is string -%}{%- set partition_by = [partition_by] -%}{%- endif -%}
    {%- for col in partition_by -%}
        {%- if col | lower in lowered -%}
            {{ spark_clustering.config_error('cluster_by', cluster_by,
                "remove '" ~ col ~ "': it is a partition_by column, constant within every file already") }}
        {%- endif -%}
    {%- endfor -%}

    {%- set sample_rows_per_range = cfg_source.get('cluster_sample_rows_per_range', 20) -%}
    {%- if sample_rows_per_range is not number or sample_rows_per_range < 1 -%}
        {{ spark_clustering.config_error('cluster_sample_rows_per_range', sample_rows_per_range, 'use a positive number (20 keeps boundaries within ~1 % of a range width)') }}
    {%- endif -%}

    {{ return({
        'cluster_by': cluster_by,
        'method': method,
        'ranges': ranges,
        'target_file_rows': target_rows | int,
        'target_file_bytes': (target_bytes | int) if target_bytes is not none else none,
        'num_files': (num_files | int) if num_files is not none else none,
        'file_format': file_format,
        'partition_by': partition_by,
        'sample_rows_per_range': sample_rows_per_range,
        'validate': cfg_source.get('cluster_validate', true),
    }) }}
{% endmacro %}

{#- One error format for every config mistake: model, key, value, fix. -#}
{% macro config_error(key, value, fix) %}
    {%- set name = model.name if model is defined and model is not none else 'unknown' -%}
    {{ exceptions.raise_compiler_error(
        "spark_clustering: model '" ~ name ~ "': config '" ~ key ~ "' = " ~ (value | string) ~ " is not valid: " ~ fix) }}
{% endmacro %}
