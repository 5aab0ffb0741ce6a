{#- The steps of recluster_table (recluster.sql): settings, recovery, measure, gate, select,
    rewrite. Private: not part of the package's API. -#}

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
                    'cluster_validate', 'recluster', 'skip_recluster'] -%}
        {%- set value = spark_clustering._model_config_of(relation, key) -%}
        {%- if value is not none -%}{%- do source.update({key: value}) -%}{%- endif -%}
    {%- endfor -%}
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
    {%- if detail.provider not in ['parquet', 'orc'] -%}
        {{ exceptions.raise_compiler_error(
            "recluster: " ~ subject ~ " is a '" ~ detail.provider ~ "' table; recluster rewrites parquet and orc "
            ~ "tables (Delta and Iceberg have OPTIMIZE ... ZORDER BY / rewrite_data_files).") }}
    {%- endif -%}
    {%- do source.update({'file_format': detail.provider, 'partition_by': detail.partition_by}) -%}
    {%- set cfg = spark_clustering.clustering_config(source, subject) -%}

    {#- Every clustering column must be one of the table's before anything is read or written: an
        incremental model whose column was renamed keeps the old column in its table. -#}
    {%- set table_columns = detail.columns | map('lower') | list -%}
    {%- for name in cfg.cluster_by if name | lower not in table_columns -%}
        {%- set missing = "column '" ~ name ~ "' is not a column of " ~ table_name ~ " (its columns: "
                          ~ detail.columns | join(', ') ~ "); " -%}
        {%- if ns.origin == 'argument' -%}
            {{ spark_clustering.config_error('columns', columns, missing ~ "pass columns of the table, e.g. --args '{relation: "
                ~ table_name ~ ", columns: [" ~ detail.columns[:2] | join(', ') ~ "]}'", subject, 'argument') }}
        {%- elif ns.origin == 'property' -%}
            {{ spark_clustering.config_error('cluster_by', cfg.cluster_by, missing ~ "they were read from the table property "
                ~ "spark_clustering.cluster_by (the last clustering); set cluster_by in the model's config or pass "
                ~ "columns, e.g. --args '{relation: " ~ table_name ~ ", columns: [" ~ detail.columns[:2] | join(', ') ~ "]}'", subject) }}
        {%- else -%}
            {{ spark_clustering.config_error('cluster_by', cfg.cluster_by, missing ~ "the table was built before the model's "
                ~ "columns changed (an incremental run keeps the table's columns): rebuild it with dbt run --full-refresh"
                ~ (" --select " ~ node.name if node is not none else "") ~ ", or cluster_by columns the table has", subject) }}
        {%- endif -%}
    {%- endfor -%}

    {%- set _recluster_keys = ['max_average_depth', 'max_depth', 'min_new_rows', 'max_rounds', 'merge_ratio'] -%}
    {%- set rc = source.get('recluster') or {} -%}
    {%- if rc is not mapping -%}
        {{ spark_clustering.config_error('recluster', rc, 'use a dict, e.g. {max_average_depth: 8, min_new_rows: 100000}', subject) }}
    {%- endif -%}
    {%- for key in rc if key not in _recluster_keys -%}
        {{ spark_clustering.config_error('recluster', rc, "unknown key '" ~ key ~ "'; the keys are " ~ _recluster_keys | join(', '), subject) }}
    {%- endfor -%}
    {%- set t = rc.get('max_average_depth', 'auto') -%}
    {%- if t != 'auto' and (t is not number or t is boolean or t < 1) -%}
        {{ spark_clustering.config_error('recluster', rc, "max_average_depth must be 'auto' or a number >= 1", subject) }}
    {%- endif -%}
    {%- set max_depth = rc.get('max_depth') -%}
    {%- if max_depth is not none and (max_depth is not number or max_depth is boolean or max_depth < 1) -%}
        {{ spark_clustering.config_error('recluster', rc, 'max_depth must be a number >= 1', subject) }}
    {%- endif -%}
    {%- set min_new_rows = rc.get('min_new_rows', 1) -%}
    {%- set max_rounds = rc.get('max_rounds', 4) -%}
    {%- set merge_ratio = rc.get('merge_ratio', 2) -%}
    {%- if not spark_clustering._is_whole_number(min_new_rows) or min_new_rows < 0 -%}
        {{ spark_clustering.config_error('recluster', rc, 'min_new_rows must be a whole number >= 0', subject) }}
    {%- endif -%}
    {%- if not spark_clustering._is_whole_number(max_rounds) or max_rounds < 1 -%}
        {{ spark_clustering.config_error('recluster', rc, 'max_rounds must be a whole number >= 1', subject) }}
    {%- endif -%}
    {%- if merge_ratio is not number or merge_ratio is boolean or merge_ratio < 1 -%}
        {{ spark_clustering.config_error('recluster', rc, 'merge_ratio must be a number >= 1', subject) }}
    {%- endif -%}
    {%- set skip = source.get('skip_recluster', false) -%}
    {%- if skip is not boolean -%}
        {{ spark_clustering.config_error('skip_recluster', skip, 'use true or false (a boolean, not ' ~ spark_clustering._type_name(skip) ~ ')', subject) }}
    {%- endif -%}
    {{ return({
        'cfg': cfg, 'detail': detail, 'label': (model.name if model is defined and model and this is defined else relation | string),
        'max_average_depth': t, 'max_depth': max_depth, 'min_new_rows': min_new_rows | int,
        'max_rounds': max_rounds | int, 'merge_ratio': merge_ratio, 'skip': skip,
        'table_name': relation.schema ~ '.' ~ relation.identifier,
    }) }}
{% endmacro %}


{#- Location, provider, type (MANAGED / EXTERNAL / VIEW), columns, partition columns and properties
    from DESCRIBE TABLE EXTENDED. -#}
{% macro _table_detail(relation) %}
    {%- set ns = namespace(section='columns', location=none, provider=none, type=none) -%}
    {%- set columns = [] -%}
    {%- set partition_by = [] -%}
    {%- set properties = {} -%}
    {%- for row in run_query('describe table extended ' ~ relation).rows -%}
        {%- set name = (row[0] or '') | trim -%}
        {%- if name == '# Partition Information' -%}
            {%- set ns.section = 'partitions' -%}
        {%- elif name == '# Detailed Table Information' -%}
            {%- set ns.section = 'detail' -%}
        {%- elif ns.section == 'columns' and name and not name.startswith('#') -%}
            {%- do columns.append(name) -%}
        {%- elif ns.section == 'partitions' and name and not name.startswith('#') -%}
            {%- do partition_by.append(name) -%}
        {%- elif ns.section == 'detail' and name == 'Location' -%}
            {%- set ns.location = row[1] -%}
        {%- elif ns.section == 'detail' and name == 'Provider' -%}
            {%- set ns.provider = (row[1] or '') | lower -%}
        {%- elif ns.section == 'detail' and name == 'Type' -%}
            {%- set ns.type = (row[1] or '') | upper -%}
        {%- endif -%}
    {%- endfor -%}
    {%- for row in run_query('show tblproperties ' ~ relation).rows -%}
        {%- do properties.update({row[0]: row[1]}) -%}
    {%- endfor -%}
    {{ return({'location': ns.location, 'provider': ns.provider, 'type': ns.type, 'columns': columns,
               'partition_by': partition_by, 'properties': properties}) }}
{% endmacro %}


{#- The commit and the file listing are table functions of the Spark extension (the jar). -#}
{% macro _recluster_has_extension() %}
    {{ return(run_query("show functions like 'recluster_commit'").rows | length > 0) }}
{% endmacro %}


{#- Without the extension no file can be swapped safely: say what to load instead of failing on an
    unknown function name. -#}
{% macro _recluster_missing_extension(settings) %}
    {{ exceptions.raise_compiler_error(
        "recluster: " ~ settings.label ~ ": the spark_clustering Spark extension is not loaded, and recluster "
        ~ "commits files through its table functions (recluster_data_files, recluster_commit, recluster_recover). "
        ~ "Start Spark with spark.jars=<path>/spark-clustering-udfs.jar and "
        ~ "spark.sql.extensions=org.apache.spark.sql.sparkclustering.SparkClusteringExtensions "
        ~ "(scripts/setup builds the jar; see docs/deployment.md), or set skip_recluster: true.") }}
{% endmacro %}


{#- Before reading anything (under the lease, so no live writer owns what is found): finish
    (journal written) or roll back (not written) every commit an interrupted run left, including
    staging under a previous location of the table (the leftover staging table points there), then
    drop the leftover staging table. -#}
{% macro _recluster_recover(relation, settings, lease) %}
    {%- for row in run_query("select run_id, action from recluster_recover('" ~ settings.table_name ~ "', '"
                             ~ lease ~ "', '" ~ settings.table_name ~ "__sc_recluster')").rows -%}
        {{ log('spark_clustering: recluster ' ~ settings.label ~ ': interrupted run ' ~ row[0] ~ ' ' ~ row[1], info=true) }}
    {%- endfor -%}
    {%- do run_query("select * from drop_sidecar_table('" ~ settings.table_name ~ "__sc_recluster')") -%}
{% endmacro %}


{#- The table as the gate and the selection see it: every data file with its size, rows, per-column
    [min, max], level, run and scope (its directory: the table or one partition), the metrics and
    thresholds per scope; the commit replaces a file only while its size and mtime are as listed here. -#}
{% macro _recluster_measure(relation, settings) %}
    {%- set columns = settings.cfg.cluster_by -%}
    {%- set listing = run_query("select file_path, file_size, modification_time from recluster_data_files('" ~ settings.table_name ~ "')") -%}
    {%- set files = [] -%}
    {%- set by_path = {} -%}
    {%- for row in listing.rows -%}
        {%- set path = row[0] -%}
        {%- set name = path.split('/')[-1] -%}
        {%- set parts = name.split('-') -%}
        {%- if name.startswith('sc-l') and parts | length >= 4 -%}
            {%- set level = parts[1][1:] | int -%}
            {%- set run = parts[2] -%}
        {%- else -%}
            {%- set level = 0 -%}
            {%- set run = none -%}
        {%- endif -%}
        {%- set file = {'path': path, 'size': row[1] | int, 'mtime': row[2] | int, 'rows': 0, 'ranges': none, 'level': level,
                        'run': run, 'scope': path[:path.rfind('/')]} -%}
        {%- do files.append(file) -%}
        {%- do by_path.update({path: file}) -%}
    {%- endfor -%}
    {%- if files | length > 0 -%}
        {%- set stats = run_query(spark_clustering.file_stats(relation, columns)) -%}
        {%- set file_ranges = spark_clustering._file_ranges_from_stats(stats, columns | length) -%}
        {%- for row in stats.rows if row[0] in by_path -%}
            {%- do by_path[row[0]].update({'rows': row[1] | int, 'ranges': file_ranges[loop.index0]}) -%}
        {%- endfor -%}
    {%- endif -%}

    {%- set scopes = {} -%}
    {%- for file in files -%}
        {%- if file.scope not in scopes -%}
            {%- do scopes.update({file.scope: {'files': [], 'rows': 0, 'new_rows': 0, 'new_files': 0}}) -%}
        {%- endif -%}
        {%- set scope = scopes[file.scope] -%}
        {%- do scope.files.append(file) -%}
        {%- do scope.update({'rows': scope.rows + file.rows}) -%}
        {#- a 0-row file (an append that selected nothing) is not new work; a rewrite of its scope drops it -#}
        {%- if file.level == 0 and file.rows > 0 -%}
            {%- do scope.update({'new_rows': scope.new_rows + file.rows, 'new_files': scope.new_files + 1}) -%}
        {%- endif -%}
    {%- endfor -%}

    {%- set worst = {} -%}
    {%- for name in columns -%}{%- do worst.update({name: {'average_depth': 0, 'max_depth': 0}}) -%}{%- endfor -%}
    {%- set ns2 = namespace(new_rows=0, new_files=0, thresholds=none) -%}
    {%- for key, scope in scopes.items() -%}
        {#- Depth counted in files of the target size: a file of r rows stands for
            round(r / cluster_target_file_rows) files (at least 1) with its ranges. Otherwise a few huge unclustered
            files (one per task of an INSERT) look shallower than the clustered layout they ruin. -#}
        {%- set sized_ranges = [] -%}
        {%- for file in scope.files if file.rows > 0 -%}
            {%- for _ in range([1, (file.rows / settings.cfg.target_file_rows) | round | int] | max) -%}
                {%- do sized_ranges.append(file.ranges) -%}
            {%- endfor -%}
        {%- endfor -%}
        {%- set metrics = spark_clustering._clustering_metrics(sized_ranges, columns) -%}
        {%- set thresholds = spark_clustering._recluster_thresholds(scope.rows, settings) -%}
        {%- do scope.update({'metrics': metrics.columns, 'thresholds': thresholds}) -%}
        {%- set ns2.new_rows = ns2.new_rows + scope.new_rows -%}
        {%- set ns2.new_files = ns2.new_files + scope.new_files -%}
        {%- set ns2.thresholds = thresholds if ns2.thresholds is none else ns2.thresholds -%}
        {%- for name in columns -%}
            {%- set m = metrics.columns[name] -%}
            {%- do worst[name].update({'average_depth': [worst[name].average_depth, m.average_depth] | max,
                                       'max_depth': [worst[name].max_depth, m.max_depth] | max}) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- set runs = files | rejectattr('run', 'none') | map(attribute='run') | unique | list -%}
    {{ return({
        'files': files, 'scopes': scopes, 'new_rows': ns2.new_rows,
        'thresholds': ns2.thresholds if scopes | length == 1 else 'per partition',
        'summary': {'files': files | length, 'rows': files | sum(attribute='rows'), 'new_files': ns2.new_files,
                    'new_rows': ns2.new_rows, 'runs': runs | length, 'scopes': scopes | length, 'columns': worst},
    }) }}
{% endmacro %}


{#- {column: [max average depth, max depth]} for a scope of `rows` rows. 'auto' = 1.5 x the depth a
    fresh clustering of those rows has: with F files over k curve columns each column is cut in
    ~F^(1/k) slabs, each crossed by ~F^(1-1/k) files, and depth (the worst point of a file's range)
    comes out at ~1.4 F^(1-1/k) (simulated for k = 2..4, F = 4..100), at most F. A linear sort
    clusters its first column only (depth ~1), so only that column is gated. The max-depth cap is min(2t, 32) for a given t and 2t
    for 'auto', because a fixed 32 would fire forever on tables whose fresh depth exceeds it. -#}
{% macro _recluster_thresholds(rows, settings) %}
    {%- set cfg = settings.cfg -%}
    {%- set k = cfg.cluster_by | length -%}
    {%- set files = spark_clustering.files_for_target(rows, cfg) -%}
    {%- set result = {} -%}
    {%- for name in cfg.cluster_by -%}
        {%- if settings.max_average_depth != 'auto' -%}
            {%- set t = settings.max_average_depth -%}
            {%- set m = settings.max_depth or ([2 * t, 32] | min) -%}
            {%- do result.update({name: [t, [m, t] | max]}) -%}
        {%- elif cfg.method != 'linear' or loop.first -%}
            {%- set fresh = 1 if cfg.method == 'linear' else [files, 1.4 * files ** (1 - 1 / k)] | min -%}
            {%- set t = [2, 1.5 * fresh] | max | round(2) -%}
            {%- do result.update({name: [t, settings.max_depth or 2 * t]}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(result) }}
{% endmacro %}


{#- {rewrite, reason, scopes}: which scopes fail the gate, and why in one line. min_new_rows gates
    the first round only. -#}
{% macro _recluster_gate(state, settings, final, round_number=1) %}
    {%- if state.files | length == 0 -%}
        {{ return({'rewrite': false, 'reason': 'the table has no data files', 'scopes': []}) }}
    {%- endif -%}
    {#- later rounds merge runs: their trigger is depth alone -#}
    {%- if not final and round_number == 1 and state.new_rows < settings.min_new_rows -%}
        {{ return({'rewrite': false, 'scopes': [], 'reason': (state.new_rows ~ ' new rows since the last recluster, below min_new_rows '
                   ~ settings.min_new_rows) if state.new_rows else 'no new rows since the last recluster'}) }}
    {%- endif -%}
    {%- set failing = [] -%}
    {%- set reasons = [] -%}
    {%- for key, scope in state.scopes.items() -%}
        {%- set why = [] -%}
        {%- for name, limits in scope.thresholds.items() -%}
            {%- set m = scope.metrics[name] -%}
            {%- if m.average_depth > limits[0] -%}
                {%- do why.append(name ~ ' average depth ' ~ m.average_depth ~ ' > ' ~ limits[0]) -%}
            {%- elif m.max_depth > limits[1] -%}
                {%- do why.append(name ~ ' max depth ' ~ m.max_depth ~ ' > ' ~ limits[1]) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- if why -%}
            {%- do failing.append(key) -%}
            {%- if reasons | length < 3 -%}
                {%- do reasons.append(((key.split('/')[-1] ~ ': ') if state.scopes | length > 1 else '') ~ why | join(', ')) -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if not failing -%}
        {{ return({'rewrite': false, 'scopes': [], 'reason': 'depth within thresholds'}) }}
    {%- endif -%}
    {%- set more = (' and ' ~ (failing | length - 3) ~ ' more partitions') if failing | length > 3 else '' -%}
    {{ return({'rewrite': true, 'scopes': failing, 'reason': reasons | join('; ') ~ more}) }}
{% endmacro %}


{#- Files to rewrite in the failing scopes: the level-0 files plus the smallest runs while a run
    has at most merge_ratio x the rows gathered so far (so a 10 % append does not drag the settled
    90 % along; similar-sized runs merge, like size-tiered compaction). Without level-0 files the
    smallest run is the seed and at least the next one joins, so every round makes progress. -#}
{% macro _recluster_select(state, scope_keys, settings) %}
    {%- set chosen = [] -%}
    {%- for key in scope_keys -%}
        {%- set scope = state.scopes[key] -%}
        {%- set runs = {} -%}
        {%- for file in scope.files if file.run is not none -%}
            {%- if file.run not in runs -%}{%- do runs.update({file.run: {'run': file.run, 'rows': 0, 'files': []}}) -%}{%- endif -%}
            {%- do runs[file.run].files.append(file) -%}
            {%- do runs[file.run].update({'rows': runs[file.run].rows + file.rows}) -%}
        {%- endfor -%}
        {%- set ordered = runs.values() | sort(attribute='run') | sort(attribute='rows') | list -%}
        {%- set new_files = scope.files | selectattr('level', 'eq', 0) | selectattr('rows', 'gt', 0) | list -%}
        {%- set empty_files = scope.files | selectattr('level', 'eq', 0) | selectattr('rows', 'eq', 0) | list -%}
        {%- set ns = namespace(acc=0, stop=false, force=false, picked=[]) -%}
        {%- if new_files -%}
            {%- set ns.picked = new_files -%}
            {%- set ns.acc = new_files | sum(attribute='rows') -%}
        {%- elif ordered | length >= 2 -%}
            {%- set ns.picked = ordered[0].files -%}
            {%- set ns.acc = ordered[0].rows -%}
            {%- set ordered = ordered[1:] -%}
            {%- set ns.force = true -%}
        {%- else -%}
            {%- set ordered = [] -%}
        {%- endif -%}
        {%- for run in ordered if not ns.stop -%}
            {%- if ns.force or run.rows <= settings.merge_ratio * ns.acc -%}
                {%- set ns.picked = ns.picked + run.files -%}
                {%- set ns.acc = ns.acc + run.rows -%}
                {%- set ns.force = false -%}
            {%- else -%}
                {%- set ns.stop = true -%}
            {%- endif -%}
        {%- endfor -%}
        {%- do chosen.extend(ns.picked + (empty_files if ns.picked else [])) -%}
    {%- endfor -%}
    {{ return({'files': chosen, 'rows': chosen | sum(attribute='rows'), 'bytes': chosen | sum(attribute='size'),
               'level': 1 + (chosen | map(attribute='level') | max if chosen else 0)}) }}
{% endmacro %}


{#- Rewrite the selected files clustered into <location>/_sc_recluster_<run> (hidden from readers),
    check rows + checksum against the selected files, and commit (recluster_commit). -#}
{% macro _recluster_rewrite(relation, state, selection, settings, round_number, lease) %}
    {%- set run_id = modules.datetime.datetime.utcnow().strftime('%Y%m%d%H%M%S') ~ '_'
                     ~ invocation_id.replace('-', '')[:8] ~ '_' ~ round_number -%}
    {%- set prefix = 'sc-l' ~ selection.level ~ '-' ~ run_id -%}
    {%- set staging = spark_clustering.sidecar_relation(relation, 'recluster') -%}
    {%- set source_view = relation.identifier ~ '__sc_recluster_source' -%}
    {%- set paths = [] -%}
    {%- set replaced = [] -%}
    {%- for file in selection.files -%}
        {%- do paths.append(spark_clustering._sql_literal(file.path, 'recluster')) -%}
        {#- the commit replaces a file only while it is exactly what was read -#}
        {%- do replaced.append(spark_clustering._sql_literal(file.size ~ ':' ~ file.mtime ~ ':' ~ file.path, 'recluster')) -%}
    {%- endfor -%}
    {%- set pause_at = var('spark_clustering_pause_at', none) -%}
    {%- if pause_at -%}
        {#- test hook: the jar's own pause points (journal, moves, deletes) read this conf -#}
        {%- do run_query('set spark.sparkclustering.test.pauseAt=' ~ pause_at) -%}
    {%- endif -%}

    {% call statement('spark_clustering_recluster_source') -%}
        create or replace temporary view {{ source_view }} as
        select * from {{ relation }}
        where {{ spark_clustering._metadata_column(settings.detail.columns) }}.file_path in ({{ paths | join(', ') }})
    {%- endcall %}
    {#- Files for the rewritten rows: the rows target, and the bytes target at the selection's own
        bytes per row; a fixed cluster_num_files is taken as the table's share. -#}
    {%- set cfg = settings.cfg -%}
    {%- if cfg.num_files -%}
        {%- set files = [1, ((cfg.num_files * selection.rows / ([state.summary.rows, 1] | max)) | round(0, 'ceil')) | int] | max -%}
    {%- else -%}
        {%- set files = spark_clustering.files_for_target(selection.rows, cfg,
                bytes_per_row=(selection.bytes / selection.rows) if selection.rows else none) -%}
    {%- endif -%}
    {%- set plan_cfg = {} -%}
    {%- do plan_cfg.update(cfg) -%}
    {%- do plan_cfg.update({'num_files': files}) -%}
    {#- the selected files' rows are known exactly from their stats: no count(*) scan -#}
    {%- set plan = spark_clustering.plan_clustered_write(source_view, plan_cfg, relation, 'recluster ' ~ settings.label,
                                                         row_count=selection.rows) -%}
    {{ spark_clustering._recluster_pause_point('after_plan') }}

    {%- set staging_location = settings.detail.location ~ '/_sc_recluster_' ~ run_id -%}
    {% call statement('spark_clustering_recluster_stage') -%}
        create table {{ staging }}
        using {{ cfg.file_format }}
        {%- if cfg.partition_by %}
        partitioned by ({{ spark_clustering.quoted_columns(cfg.partition_by) }})
        {%- endif %}
        location {{ spark_clustering._sql_literal(staging_location, 'recluster') }}
        as
        {{ plan.select_sql }}
    {%- endcall %}
    {{ spark_clustering._recluster_pause_point('after_staging_write') }}

    {%- set staged = spark_clustering.staged_check(staging, plan.column_names) -%}
    {%- if not spark_clustering.checks_match(staged, plan.source_check) -%}
        {#- no journal yet: recovery drops the staging table and deletes the staged files -#}
        {%- do spark_clustering._recluster_recover(relation, settings, lease) -%}
        {%- do spark_clustering._table_lease_release(lease) -%}
        {{ exceptions.raise_compiler_error(
            "recluster: " ~ settings.label ~ ": the rewritten files do not match the files they replace (rows "
            ~ staged.row_count ~ " vs " ~ plan.source_check.row_count ~ ", checksum " ~ staged.hash_sum ~ "/" ~ staged.hash_xor
            ~ " vs " ~ plan.source_check.hash_sum ~ "/" ~ plan.source_check.hash_xor ~ "); nothing was committed and the "
            ~ "table is unchanged. Please report this with the dbt log.") }}
    {%- endif -%}
    {{ spark_clustering._recluster_pause_point('after_validate') }}
    {#- Test hook: SQL run here plays a writer that changes the table between read and commit. -#}
    {%- set concurrent_sql = var('spark_clustering_before_commit_sql', none) -%}
    {%- if concurrent_sql -%}{%- do run_query(concurrent_sql) -%}{%- endif -%}

    {#- proof of what is committed: the lease, the validated bytes, each replaced file as it was read -#}
    {%- set committed = run_query("select * from recluster_commit('" ~ settings.table_name ~ "', '" ~ lease ~ "', "
        ~ spark_clustering._sql_literal(staging_location, 'recluster') ~ ", '" ~ prefix ~ "', '" ~ staged.file_bytes ~ "', array("
        ~ replaced | join(', ') ~ "))").rows[0] -%}
    {%- if pause_at -%}{%- do run_query('reset spark.sparkclustering.test.pauseAt') -%}{%- endif -%}
    {% do adapter.drop_relation(staging) %}
    {% call statement('spark_clustering_recluster_drop_source') -%}
        drop view if exists {{ source_view }}
    {%- endcall %}
    {{ return({'run_id': run_id, 'level': selection.level, 'status': committed[0],
               'files_replaced': committed[2] | int, 'files_written': committed[1] | int, 'rows': staged.row_count,
               'bytes_removed': committed[4] | int, 'bytes_written': committed[3] | int}) }}
{% endmacro %}


{#- Test hook: var spark_clustering_pause_at = '<step>' stops here (a sleep inside Spark) so a test
    can kill -9 the process at exactly that step. Inert unless the var is set. -#}
{% macro _recluster_pause_point(name) %}
    {%- if var('spark_clustering_pause_at', none) == name -%}
        {{ log('spark_clustering: paused at ' ~ name, info=true) }}
        {%- do run_query("select reflect('java.lang.Thread', 'sleep', bigint(" ~ (var('spark_clustering_pause_seconds', 600) * 1000) | int ~ "))") -%}
    {%- endif -%}
{% endmacro %}


{#- "a=3.1 b=2.0" from a summary's per-column worst average depth. -#}
{% macro _depth_summary(summary) %}
    {%- if summary is none -%}{{ return('-') }}{%- endif -%}
    {%- set parts = [] -%}
    {%- for name, m in summary.columns.items() -%}{%- do parts.append(name ~ '=' ~ m.average_depth) -%}{%- endfor -%}
    {{ return(parts | join(' ') ~ ' (' ~ summary.files ~ ' files, ' ~ summary.new_files ~ ' new)') }}
{% endmacro %}
