{#- Read and validate the clustering config of the current model (or of `source`, any mapping with
    .get(key, default), e.g. a model node's config when recluster runs as a run-operation). Every
    mistake is a compiler error naming the model (or `subject`), the config key and the fix.
    Returns {cluster_by, method, ranges, target_file_rows, target_file_bytes, num_files,
    file_format, partition_by, sample_rows_per_range, validate, file_stats, workload (a list of
    boxes or none), layout (none; recluster sets the layout an `auto` table recorded)}. -#}
{% macro clustering_config(source=none, subject=none) %}
    {%- set cfg_source = source if source is not none else config -%}
    {%- set value_of = spark_clustering._config_value -%}

    {#- cluster_workload (config or meta): boxes {column: [lo, hi]}; `auto` simulates layouts against them -#}
    {%- set workload = cfg_source.get('cluster_workload') -%}
    {%- if workload is none -%}{%- set workload = (cfg_source.get('meta') or {}).get('cluster_workload') -%}{%- endif -%}
    {%- if workload is string and workload in ['observed', 'auto'] -%}
        {#- the scans Spark recorded: resolved against the table when it is written (_resolve_workload) -#}
    {%- elif workload is not none -%}
        {%- set problem = spark_clustering._workload_problem(workload, '') -%}
        {%- if problem -%}
            {{ spark_clustering._config_error('cluster_workload', workload,
                "give 'observed' (the queries Spark saw) or a non-empty list of boxes {column: [lo, hi]} (inclusive, null for an open end), "
                ~ "e.g. cluster_workload=[{'event_time': ['2024-01-01', '2024-01-31']}, {'device_id': [100, 200]}]", subject) }}
        {%- endif -%}
        {%- set workload = [workload] if workload is mapping else workload | list -%}
    {%- endif -%}

    {%- set cluster_by = cfg_source.get('cluster_by') -%}
    {#- cluster_by: 'auto' = the columns the workload filters on, most filtered first (at most 4); a
        column named auto is cluster_by=['auto'] -#}
    {%- set auto_columns = cluster_by is string and cluster_by == 'auto' -%}
    {%- if auto_columns -%}
        {%- if not workload or workload is string -%}
            {{ spark_clustering._config_error('cluster_by', cluster_by,
                "'auto' picks the columns the model's cluster_workload filters on: declare cluster_workload as a list "
                ~ "of boxes {column: [lo, hi]}, or list the columns, e.g. cluster_by=['mission_id', 'ts']", subject) }}
        {%- endif -%}
        {%- set counts = {} -%}
        {%- set order = [] -%}
        {%- for box in workload -%}
            {%- for col in box -%}
                {%- if col not in counts -%}{%- do counts.update({col: 0}) -%}{%- do order.append(col) -%}{%- endif -%}
                {%- do counts.update({col: counts[col] + 1}) -%}
            {%- endfor -%}
        {%- endfor -%}
        {%- set ranked = [] -%}
        {%- for col in order -%}{%- do ranked.append({'name': col, 'boxes': counts[col]}) -%}{%- endfor -%}
        {%- set cluster_by = (ranked | sort(attribute='boxes', reverse=true) | map(attribute='name') | list)[:4] -%}
    {%- endif -%}
    {%- if cluster_by is none or cluster_by == [] or cluster_by == '' -%}
        {{ spark_clustering._config_error('cluster_by', cluster_by,
            "set it to a column or a list of columns, e.g. cluster_by=['mission_id', 'ts']", subject) }}
    {%- endif -%}
    {%- set cluster_by = spark_clustering._require_name_list('cluster_by', cluster_by, "cluster_by=['mission_id', 'ts']", subject) -%}
    {%- set lowered = cluster_by | map('lower') | list -%}
    {%- if lowered | unique | list | length != lowered | length -%}
        {{ spark_clustering._config_error('cluster_by', cluster_by, 'list each column once', subject) }}
    {%- endif -%}

    {%- set method = spark_clustering._require_choice('cluster_method', value_of(cfg_source, 'cluster_method', 'auto' if auto_columns else 'hilbert'),
                                                      ['hilbert', 'zorder', 'linear', 'auto'], subject=subject) -%}
    {%- if cluster_by | length > 32 and method != 'linear' -%}
        {{ spark_clustering._config_error('cluster_by', cluster_by, 'at most 32 columns for a curve key; clustering on more columns gains nothing measurable', subject) }}
    {%- endif -%}

    {#- cluster_ranges: an int for every column or a {column: int} dict; 1000 ranges -> 10 bits a column. -#}
    {%- set ranges_cfg = value_of(cfg_source, 'cluster_ranges', 1000) -%}
    {%- set ranges = {} -%}
    {%- for col in cluster_by -%}
        {%- set r = ranges_cfg.get(col, 1000) if ranges_cfg is mapping else ranges_cfg -%}
        {%- do ranges.update({col: spark_clustering._require_number('cluster_ranges', r,
                'use a whole number from 2 to 65535, or a dict {column: number}', min=2, max=65535, integer=true,
                subject=subject, shown=ranges_cfg)}) -%}
    {%- endfor -%}
    {%- for col in (ranges_cfg if ranges_cfg is mapping else []) if col not in cluster_by -%}
        {{ spark_clustering._config_error('cluster_ranges', ranges_cfg, "key '" ~ col ~ "' is not in cluster_by " ~ cluster_by | join(', '), subject) }}
    {%- endfor -%}

    {%- set target_rows = spark_clustering._require_number('cluster_target_file_rows', value_of(cfg_source, 'cluster_target_file_rows', 1000000),
            'use a positive whole number of rows per file, e.g. 1000000', min=1, integer=true, subject=subject) -%}
    {%- set target_bytes = cfg_source.get('cluster_target_file_bytes') -%}
    {%- if target_bytes is not none -%}
        {%- set target_bytes = spark_clustering._require_number('cluster_target_file_bytes', target_bytes,
                'use a whole number of bytes per file of at least 1024, e.g. 134217728 for 128 MiB', min=1024, integer=true, subject=subject) -%}
    {%- endif -%}
    {%- set num_files = cfg_source.get('cluster_num_files') -%}
    {%- if num_files is not none -%}
        {%- set num_files = spark_clustering._require_number('cluster_num_files', num_files,
                'use a positive whole number, or leave it unset to derive it from cluster_target_file_rows', min=1, integer=true, subject=subject) -%}
        {#- every file is a task, a listing entry and a row of file_stats: 100,000 is far past any gain -#}
        {%- do spark_clustering._require_number('cluster_num_files', num_files,
                'use at most 100000 files per write; for a table that large set cluster_target_file_rows or cluster_target_file_bytes instead', max=100000, subject=subject) -%}
    {%- endif -%}

    {%- set formats = ['parquet', 'orc', 'delta', 'iceberg'] -%}
    {%- set file_format = value_of(cfg_source, 'file_format', 'parquet') -%}
    {%- if file_format == 'hudi' -%}
        {{ spark_clustering._config_error('file_format', file_format, "Hudi tables are clustered by Hudi's own clustering "
            ~ "service (hoodie.clustering.inline / hoodie.clustering.plan.strategy.sort.columns), which rewrites file groups "
            ~ "through Hudi's timeline; spark_clustering writes parquet, orc, delta or iceberg", subject) }}
    {%- endif -%}
    {%- do spark_clustering._require_choice('file_format', file_format, formats, 'use one of: ' ~ formats | join(', '), subject) -%}

    {%- set partition_by = spark_clustering._require_name_list('partition_by', cfg_source.get('partition_by') or [], "partition_by=['region']", subject) -%}
    {%- for col in partition_by if '(' in col -%}
        {#- an Iceberg transform (days(ts), bucket(16, id), ...): the write routes each row to its
            partition's files by the partition columns' values, which a transform has not yet -#}
        {{ spark_clustering._config_error('partition_by', partition_by, "'" ~ col ~ "' is a partition transform, and "
            ~ "clustered_table routes rows to files by the values of plain partition columns: compute the partition "
            ~ "value as a column of the model (e.g. date(ts) as ts_day, pmod(hash(id), 16) as id_bucket) and "
            ~ "partition_by that column", subject) }}
    {%- endfor -%}
    {%- for col in partition_by if col | lower in lowered -%}
        {{ spark_clustering._config_error('cluster_by', cluster_by,
            "remove '" ~ col ~ "': it is a partition_by column, constant within every file already", subject) }}
    {%- endfor -%}

    {%- set sample_rows_per_range = spark_clustering._require_number('cluster_sample_rows_per_range', value_of(cfg_source, 'cluster_sample_rows_per_range', 20),
            'use a positive number (20 keeps boundaries within ~1 % of a range width)', min=1, subject=subject) -%}
    {#- 'count' (default): rows of the copy (footers) = rows of the query; 'checksum' (or true, what it
        meant before the modes): also an order-independent checksum of every row; false: no check -#}
    {%- set validate = value_of(cfg_source, 'cluster_validate', 'count') -%}
    {%- if validate is sameas true -%}{%- set validate = 'checksum' -%}{%- endif -%}
    {%- if validate is not sameas false and (validate is not string or validate not in ['count', 'checksum']) -%}
        {%- set fix -%}use true or false (a boolean, not {{ spark_clustering._type_name(validate) }}), 'count' or 'checksum'{%- endset -%}
        {{ spark_clustering._config_error('cluster_validate', validate, fix, subject) }}
    {%- endif -%}
    {%- set file_stats = spark_clustering._require_bool('cluster_file_stats', value_of(cfg_source, 'cluster_file_stats', true), subject) -%}

    {{ return({
        'cluster_by': cluster_by,
        'method': method,
        'ranges': ranges,
        'target_file_rows': target_rows,
        'target_file_bytes': target_bytes,
        'num_files': num_files,
        'file_format': file_format,
        'partition_by': partition_by,
        'sample_rows_per_range': sample_rows_per_range,
        'validate': validate,
        'file_stats': file_stats,
        'workload': workload,
        'layout': none,
    }) }}
{% endmacro %}
