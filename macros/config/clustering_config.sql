{#- Read and validate the clustering config of the current model (or of `source`, any mapping with
    .get(key, default), e.g. a model node's config when recluster runs as a run-operation). Every
    mistake is a compiler error naming the model, the config key and the fix. -#}
{% macro clustering_config(source=none, subject=none) %}
    {{ return(adapter.dispatch('clustering_config', 'spark_clustering')(source, subject)) }}
{% endmacro %}

{% macro default__clustering_config(source=none, subject=none) %}
    {%- set cfg_source = source if source is not none else config -%}
    {%- set methods = ['hilbert', 'zorder', 'linear'] -%}
    {%- set formats = ['parquet', 'orc'] -%}

    {%- set cluster_by = cfg_source.get('cluster_by') -%}
    {%- if cluster_by is none or cluster_by == [] or cluster_by == '' -%}
        {{ spark_clustering.config_error('cluster_by', cluster_by,
            "set it to a column or a list of columns, e.g. cluster_by=['mission_id', 'ts']", subject) }}
    {%- endif -%}
    {%- if cluster_by is string -%}{%- set cluster_by = [cluster_by] -%}{%- endif -%}
    {#- a dict iterates its keys and a number not at all: both must be refused here, by type -#}
    {%- if cluster_by is mapping or cluster_by is not iterable -%}
        {{ spark_clustering.config_error('cluster_by', cluster_by,
            "it is " ~ spark_clustering._type_name(cluster_by) ~ "; set it to a column name or a list of column names, e.g. cluster_by=['mission_id', 'ts']", subject) }}
    {%- endif -%}
    {%- set cluster_by = cluster_by | list -%}
    {%- for col in cluster_by -%}
        {%- if col is not string or col | trim == '' -%}
            {{ spark_clustering.config_error('cluster_by', cluster_by, 'every entry must be a column name (a non-empty string); '
                ~ (col | string) ~ ' is ' ~ spark_clustering._type_name(col), subject) }}
        {%- endif -%}
    {%- endfor -%}
    {%- set lowered = cluster_by | map('lower') | list -%}
    {%- if lowered | unique | list | length != lowered | length -%}
        {{ spark_clustering.config_error('cluster_by', cluster_by, 'list each column once', subject) }}
    {%- endif -%}

    {%- set method = spark_clustering._config_value(cfg_source, 'cluster_method', 'hilbert') -%}
    {%- if method is not string or method not in methods -%}
        {{ spark_clustering.config_error('cluster_method', method, 'use one of: ' ~ methods | join(', '), subject) }}
    {%- endif -%}
    {%- if cluster_by | length > 32 and method != 'linear' -%}
        {{ spark_clustering.config_error('cluster_by', cluster_by, 'at most 32 columns for a curve key; clustering on more columns gains nothing measurable', subject) }}
    {%- endif -%}

    {#- cluster_ranges: an int for every column or a {column: int} dict; 1000 ranges -> 10 bits a column. -#}
    {%- set ranges_cfg = spark_clustering._config_value(cfg_source, 'cluster_ranges', 1000) -%}
    {%- set ranges = {} -%}
    {%- for col in cluster_by -%}
        {%- if ranges_cfg is mapping -%}
            {%- set r = ranges_cfg.get(col, 1000) -%}
        {%- else -%}
            {%- set r = ranges_cfg -%}
        {%- endif -%}
        {%- if not spark_clustering._is_whole_number(r) or r < 2 or r > 65535 -%}
            {{ spark_clustering.config_error('cluster_ranges', ranges_cfg,
                'use a whole number from 2 to 65535, or a dict {column: number}', subject) }}
        {%- endif -%}
        {%- do ranges.update({col: r | int}) -%}
    {%- endfor -%}
    {%- if ranges_cfg is mapping -%}
        {%- for col in ranges_cfg -%}
            {%- if col not in cluster_by -%}
                {{ spark_clustering.config_error('cluster_ranges', ranges_cfg,
                    "key '" ~ col ~ "' is not in cluster_by " ~ cluster_by | join(', '), subject) }}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}

    {%- set target_rows = spark_clustering._config_value(cfg_source, 'cluster_target_file_rows', 1000000) -%}
    {%- if not spark_clustering._is_whole_number(target_rows) or target_rows < 1 -%}
        {{ spark_clustering.config_error('cluster_target_file_rows', target_rows, 'use a positive whole number of rows per file, e.g. 1000000', subject) }}
    {%- endif -%}
    {%- set target_bytes = cfg_source.get('cluster_target_file_bytes') -%}
    {%- if target_bytes is not none and (not spark_clustering._is_whole_number(target_bytes) or target_bytes < 1024) -%}
        {{ spark_clustering.config_error('cluster_target_file_bytes', target_bytes, 'use a whole number of bytes per file of at least 1024, e.g. 134217728 for 128 MiB', subject) }}
    {%- endif -%}
    {%- set num_files = cfg_source.get('cluster_num_files') -%}
    {%- if num_files is not none and (not spark_clustering._is_whole_number(num_files) or num_files < 1) -%}
        {{ spark_clustering.config_error('cluster_num_files', num_files, 'use a positive whole number, or leave it unset to derive it from cluster_target_file_rows', subject) }}
    {%- endif -%}
    {#- every file is a task, a listing entry and a row of file_stats: 100,000 is far past any gain -#}
    {%- if num_files is not none and num_files > 100000 -%}
        {{ spark_clustering.config_error('cluster_num_files', num_files, 'use at most 100000 files per write; for a table that large set cluster_target_file_rows or cluster_target_file_bytes instead', subject) }}
    {%- endif -%}

    {%- set file_format = spark_clustering._config_value(cfg_source, 'file_format', 'parquet') -%}
    {%- if file_format is not string or file_format not in formats -%}
        {{ spark_clustering.config_error('file_format', file_format,
            'clustered_table writes ' ~ formats | join(' or ') ~ '; Delta and Iceberg tables have their own clustering (OPTIMIZE ZORDER BY / rewrite_data_files)', subject) }}
    {%- endif -%}

    {%- set partition_by = cfg_source.get('partition_by') or [] -%}
    {%- if partition_by is string -%}{%- set partition_by = [partition_by] -%}{%- endif -%}
    {%- if partition_by is mapping or partition_by is not iterable -%}
        {{ spark_clustering.config_error('partition_by', partition_by, 'it is ' ~ spark_clustering._type_name(partition_by) ~ "; use a column name or a list of column names, e.g. partition_by=['region']", subject) }}
    {%- endif -%}
    {%- set partition_by = partition_by | list -%}
    {%- for col in partition_by -%}
        {%- if col is not string or col | trim == '' -%}
            {{ spark_clustering.config_error('partition_by', partition_by, 'every entry must be a column name (a non-empty string); ' ~ (col | string) ~ ' is ' ~ spark_clustering._type_name(col), subject) }}
        {%- endif -%}
        {%- if col | lower in lowered -%}
            {{ spark_clustering.config_error('cluster_by', cluster_by,
                "remove '" ~ col ~ "': it is a partition_by column, constant within every file already", subject) }}
        {%- endif -%}
    {%- endfor -%}

    {%- set sample_rows_per_range = spark_clustering._config_value(cfg_source, 'cluster_sample_rows_per_range', 20) -%}
    {%- if sample_rows_per_range is not number or sample_rows_per_range is boolean or sample_rows_per_range < 1 -%}
        {{ spark_clustering.config_error('cluster_sample_rows_per_range', sample_rows_per_range, 'use a positive number (20 keeps boundaries within ~1 % of a range width)', subject) }}
    {%- endif -%}

    {#- a string 'false' is truthy: only a real boolean may switch validation off -#}
    {%- set validate = spark_clustering._config_value(cfg_source, 'cluster_validate', true) -%}
    {%- if validate is not boolean -%}
        {{ spark_clustering.config_error('cluster_validate', validate, 'use true or false (a boolean, not ' ~ spark_clustering._type_name(validate) ~ ')', subject) }}
    {%- endif -%}

    {%- set file_stats = spark_clustering._config_value(cfg_source, 'cluster_file_stats', true) -%}
    {%- if file_stats is not boolean -%}
        {{ spark_clustering.config_error('cluster_file_stats', file_stats, 'use true or false (a boolean, not ' ~ spark_clustering._type_name(file_stats) ~ ')', subject) }}
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
        'validate': validate,
        'file_stats': file_stats,
    }) }}
{% endmacro %}

{#- A config value, the default when the key is unset or set to none (a model passing var(..., none)). -#}
{% macro _config_value(cfg_source, key, default) %}
    {%- set value = cfg_source.get(key) -%}
    {{ return(default if value is none else value) }}
{% endmacro %}

{#- true for a whole number (1, 2.0), false for booleans (true is a number to Jinja), strings, lists. -#}
{% macro _is_whole_number(value) %}
    {{ return(value is number and value is not boolean and value == (value | int)) }}
{% endmacro %}

{#- "a string 'x'", "a number 5", ...: what the user wrote, for the error text. -#}
{% macro _type_name(value) %}
    {%- if value is none -%}{{ return('none') }}
    {%- elif value is boolean -%}{{ return('a boolean ' ~ (value | string | lower)) }}
    {%- elif value is number -%}{{ return('a number ' ~ value) }}
    {%- elif value is string -%}{{ return("a string '" ~ value ~ "'") }}
    {%- elif value is mapping -%}{{ return('a dict ' ~ value) }}
    {%- elif value is iterable -%}{{ return('a list ' ~ (value | list)) }}
    {%- else -%}{{ return('the value ' ~ value) }}
    {%- endif -%}
{% endmacro %}

{#- One error format for every config mistake: subject (default: the current model), key, value, fix.
    `kind` names where the value came from: a `config` key, or a macro's `argument`. -#}
{% macro config_error(key, value, fix, subject=none, kind='config') %}
    {%- if subject is none -%}
        {%- set subject = "model '" ~ (model.name if model is defined and model is not none else 'unknown') ~ "'" -%}
    {%- endif -%}
    {{ exceptions.raise_compiler_error(
        "spark_clustering: " ~ subject ~ ": " ~ kind ~ " '" ~ key ~ "' = " ~ (value | string) ~ " is not valid: " ~ fix) }}
{% endmacro %}
