{#- Read and validate the clustering settings of the current model, or of `source` (a node's config
    as a mapping, e.g. the graph node's when recluster runs as a run-operation). Every key is found
    by the one settings chain (_resolve_settings, macros/config/_settings.sql: argument -> var ->
    config -> meta -> table property -> default; `properties` are an existing table's, `arguments`
    what the caller fixes) and checked here, before any SQL. Every mistake is a compiler error
    naming the model (or `subject`), the config key and the fix.
    Returns {cluster_by, method, ranges, target_file_rows, target_file_bytes, num_files,
    file_format, partition_by, sample_rows_per_range, validate, file_stats, workload (a list of
    boxes, 'observed' or none), swap, lease_wait_seconds, gate (recluster's), skip_recluster, layout
    (none; recluster sets the layout an `auto` table recorded), origins ({key: where its value came
    from})}. -#}
{% macro clustering_config(source=none, subject=none, properties=none, arguments=none, resolved=none) %}
    {#- `resolved`: the chain's answer when the caller has it already (recluster()), not asked twice -#}
    {%- set settings = resolved if resolved is not none else spark_clustering._resolve_settings(
            source if source is not none else spark_clustering._current_model_config(), properties, arguments) -%}
    {%- set cfg_source = {} -%}
    {%- set origins = {} -%}
    {%- for key, setting in settings.items() -%}
        {%- do cfg_source.update({key: setting.value}) -%}
        {%- do origins.update({key: setting.origin}) -%}
    {%- endfor -%}

    {#- cluster_workload: boxes {column: [lo, hi]}; `auto` simulates layouts against them -#}
    {%- set workload = cfg_source.get('cluster_workload') -%}
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

    {%- set method = spark_clustering._require_choice('cluster_method', cfg_source.cluster_method,
                                                      ['hilbert', 'zorder', 'linear', 'auto'], subject=subject) -%}
    {%- if cluster_by | length > 32 and method != 'linear' -%}
        {{ spark_clustering._config_error('cluster_by', cluster_by, 'at most 32 columns for a curve key; clustering on more columns gains nothing measurable', subject) }}
    {%- endif -%}

    {#- cluster_ranges: an int for every column or a {column: int} dict; 1000 ranges -> 10 bits a column. -#}
    {%- set ranges_cfg = cfg_source['cluster_ranges'] -%}
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

    {%- set target_rows = spark_clustering._require_number('cluster_target_file_rows', cfg_source['cluster_target_file_rows'],
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

    {%- set formats = spark_clustering._table_providers() -%}
    {%- set file_format = cfg_source['file_format'] -%}
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

    {%- set sample_rows_per_range = spark_clustering._require_number('cluster_sample_rows_per_range', cfg_source['cluster_sample_rows_per_range'],
            'use a positive number (20 keeps boundaries within ~1 % of a range width)', min=1, subject=subject) -%}
    {#- 'count' (default): rows of the copy (footers) = rows of the query; 'checksum' (or true, what it
        meant before the modes): also an order-independent checksum of every row; false: no check -#}
    {%- set validate = cfg_source['cluster_validate'] -%}
    {%- if validate is sameas true -%}{%- set validate = 'checksum' -%}{%- endif -%}
    {%- if validate is not sameas false and (validate is not string or validate not in ['count', 'checksum']) -%}
        {%- set fix -%}use true or false (a boolean, not {{ spark_clustering._type_name(validate) }}), 'count' or 'checksum'{%- endset -%}
        {{ spark_clustering._config_error('cluster_validate', validate, fix, subject) }}
    {%- endif -%}
    {%- set file_stats = spark_clustering._require_bool('cluster_file_stats', cfg_source['cluster_file_stats'], subject) -%}
    {%- set swap = spark_clustering._require_choice('cluster_swap', cfg_source['cluster_swap'], ['auto', 'location', 'rename'], subject=subject) -%}
    {#- the var overrides the model for a whole invocation; an error names what was set -#}
    {%- set lease_wait = settings.cluster_lease_wait_seconds -%}
    {%- set lease_wait_seconds = spark_clustering._require_number(
            'spark_clustering_lease_wait_seconds' if lease_wait.origin == 'var' else 'cluster_lease_wait_seconds',
            lease_wait.value, 'use a number of seconds >= 0 (0: do not wait)', min=0, subject=subject,
            kind='var' if lease_wait.origin == 'var' else 'config') -%}
    {%- set gate = spark_clustering._recluster_gate_config(cfg_source['recluster'], subject) -%}
    {%- set skip_recluster = spark_clustering._require_bool('skip_recluster', cfg_source['skip_recluster'], subject) -%}

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
        'swap': swap,
        'lease_wait_seconds': lease_wait_seconds,
        'gate': gate,
        'skip_recluster': skip_recluster,
        'layout': none,
        'origins': origins,
    }) }}
{% endmacro %}


{#- The `recluster` config (recluster()'s policy and gate), checked key by key; every error shows the
    dict the user wrote. Returns {policy ('gate' or 'cost'), horizon_runs, queries_per_run ('observed'
    or a number), max_average_depth ('auto' or a number), max_depth, min_new_rows, max_rounds,
    merge_ratio, cache_bytes}. -#}
{% macro _recluster_gate_config(rc, subject=none) %}
    {%- set keys = ['policy', 'horizon_runs', 'queries_per_run', 'max_average_depth', 'max_depth', 'min_new_rows',
                    'max_rounds', 'merge_ratio', 'cache_bytes'] -%}
    {%- if rc is not mapping -%}
        {{ spark_clustering._config_error('recluster', rc, 'use a dict, e.g. {max_average_depth: 8, min_new_rows: 100000}', subject) }}
    {%- endif -%}
    {%- for key in rc if key not in keys -%}
        {{ spark_clustering._config_error('recluster', rc, "unknown key '" ~ key ~ "'; the keys are " ~ keys | join(', '), subject) }}
    {%- endfor -%}
    {%- set t = rc.get('max_average_depth', 'auto') -%}
    {%- if t != 'auto' -%}
        {%- set t = spark_clustering._require_number('recluster', t, "max_average_depth must be 'auto' or a number >= 1", min=1, subject=subject, shown=rc) -%}
    {%- endif -%}
    {%- set max_depth = rc.get('max_depth') -%}
    {%- if max_depth is not none -%}
        {%- set max_depth = spark_clustering._require_number('recluster', max_depth, 'max_depth must be a number >= 1', min=1, subject=subject, shown=rc) -%}
    {%- endif -%}
    {%- set policy = rc.get('policy', 'gate') -%}
    {%- if policy not in ['gate', 'cost'] -%}
        {{ spark_clustering._config_error('recluster', rc, "policy must be 'gate' (rewrite when depth passes a threshold) or 'cost' "
            ~ "(rewrite when the reads it saves over horizon_runs outweigh the rewrite), e.g. {policy: cost}", subject) }}
    {%- endif -%}
    {%- set horizon = rc.get('horizon_runs', 'lost_reads') -%}
    {%- if horizon != 'lost_reads' and (horizon is not number or horizon is boolean or horizon <= 0) -%}
        {{ spark_clustering._config_error('recluster', rc, "horizon_runs must be a number > 0: the recluster runs (one per append "
            ~ "of an incremental model) over which the cost policy counts the reads a rewrite saves, e.g. {horizon_runs: 10}; or "
            ~ "'lost_reads': count the queries since the last rewrite instead", subject) }}
    {%- endif -%}
    {%- set rate = rc.get('queries_per_run', 'observed') -%}
    {%- if rate != 'observed' and (rate is not number or rate is boolean or rate < 0) -%}
        {{ spark_clustering._config_error('recluster', rc, "queries_per_run must be 'observed' (counted by the Spark extension "
            ~ "between two recluster runs) or a number >= 0 of queries the table serves between two runs, e.g. {queries_per_run: 20}", subject) }}
    {%- endif -%}
    {{ return({
        'policy': policy,
        'horizon_runs': horizon,
        'queries_per_run': rate,
        'max_average_depth': t,
        'max_depth': max_depth,
        'min_new_rows': spark_clustering._require_number('recluster', rc.get('min_new_rows', 1), 'min_new_rows must be a whole number >= 0',
                                                         min=0, integer=true, subject=subject, shown=rc),
        'max_rounds': spark_clustering._require_number('recluster', rc.get('max_rounds', 4), 'max_rounds must be a whole number >= 1',
                                                       min=1, integer=true, subject=subject, shown=rc),
        'merge_ratio': spark_clustering._require_number('recluster', rc.get('merge_ratio', 2), 'merge_ratio must be a number >= 1',
                                                        min=1, subject=subject, shown=rc),
        'cache_bytes': spark_clustering._require_number('recluster', rc.get('cache_bytes', 67108864),
                                                        'cache_bytes must be a whole number of bytes >= 0 (0: never cache a rewrite\'s files)',
                                                        min=0, integer=true, subject=subject, shown=rc),
    }) }}
{% endmacro %}
