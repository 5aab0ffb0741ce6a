{#- recluster(): measure the table, decide (gate) and select the files to rewrite. Pure decisions
    over the file listing and per-file statistics; nothing here writes. -#}

{#- The table as the gate and the selection see it: every data file with its size, rows, per-column
    [min, max], level, run and scope (its directory: the table or one partition), the metrics and
    thresholds per scope; the commit replaces a file only while its size and mtime are as listed here. -#}
{% macro _recluster_measure(relation, settings) %}
    {%- set columns = settings.cfg.cluster_by -%}
    {#- every data file of the table as it is now (plain: listed in its directories; Delta / Iceberg:
        the current snapshot's, from the format's log / manifests, with its version) -#}
    {%- set listing = spark_clustering._call_extension('table_data_files', {'table': settings.table_name},
                                                       ['file_path', 'file_size', 'modification_time', 'table_version', 'from_build']) -%}
    {%- set files = [] -%}
    {%- set by_path = {} -%}
    {%- set ns_version = namespace(value=none) -%}
    {%- for row in listing -%}
        {%- set path = row.file_path -%}
        {%- if row.table_version is not none -%}{%- set ns_version.value = row.table_version | int -%}{%- endif -%}
        {%- set place = settings.kind.file_place(path, row, settings) -%}
        {%- set scope = place.scope -%}
        {%- set parts = place.name.split('-') -%}
        {%- if place.name.startswith('sc-l') and parts | length >= 3 -%}
            {%- set level = parts[1][1:] | int -%}
            {%- set run = parts[2].split('.')[0] -%}
        {%- elif place.from_build -%}
            {#- written by the table's last clustered_table build (Delta / Iceberg: the version it
                committed, in the table's property spark_clustering.build_version; plain: the id of
                the job that wrote its files, spark_clustering.build_write_id): one clustered run, as
                a recluster's -#}
            {%- set level = 1 -%}
            {%- set run = 'build' -%}
        {%- else -%}
            {%- set level = 0 -%}
            {%- set run = none -%}
        {%- endif -%}
        {%- set file = {'path': path, 'size': row.file_size | int, 'mtime': row.modification_time | int, 'rows': 0, 'ranges': none, 'level': level,
                        'run': run, 'scope': scope} -%}
        {%- do files.append(file) -%}
        {%- do by_path.update({path: file}) -%}
    {%- endfor -%}
    {%- if files | length > 0 -%}
        {#- the DESCRIBE settings read, not a second one: nothing this call commits changes it -#}
        {%- set stats = spark_clustering._file_stats_rows(relation, columns, settings.detail) -%}
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
        'files': files, 'scopes': scopes, 'new_rows': ns2.new_rows, 'table_version': ns_version.value,
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
    {%- set files = spark_clustering._files_for_target(rows, cfg) -%}
    {%- set result = {} -%}
    {#- an `auto` layout is gated on the columns its workload filters on, at the depth its layout has fresh -#}
    {%- set gated = spark_clustering._workload_columns(cfg.workload, cfg.cluster_by) if cfg.method == 'auto' else [] -%}
    {%- for name in cfg.cluster_by if not gated or name in gated -%}
        {%- if settings.max_average_depth != 'auto' -%}
            {%- set t = settings.max_average_depth -%}
            {%- set m = settings.max_depth or ([2 * t, 32] | min) -%}
            {%- do result.update({name: [t, [m, t] | max]}) -%}
        {%- elif cfg.method == 'auto' and cfg.layout -%}
            {%- set t = [2, 1.5 * spark_clustering._fresh_depth(cfg.layout, name, files)] | max | round(2) -%}
            {%- do result.update({name: [t, settings.max_depth or 2 * t]}) -%}
        {%- elif cfg.method != 'linear' or loop.first -%}
            {%- set fresh = 1 if cfg.method == 'linear' else spark_clustering._curve_depth(files, k) -%}
            {%- set t = [2, 1.5 * fresh] | max | round(2) -%}
            {%- do result.update({name: [t, settings.max_depth or 2 * t]}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(result) }}
{% endmacro %}


{#- The depth `column` has in a fresh write of `layout` (a spec) into `files` files, by the rule above:
    a curve over k columns ~1.4 F^(1-1/k) on each of them, F on a column it leaves out; slabs(lead,
    m) F/m + 1 on the lead and m x the curve's depth within a slab of F/m files on the others; a
    k-d tree its own (_kdtree_depth). -#}
{% macro _fresh_depth(layout, column, files) %}
    {%- set curve_columns = layout['columns'] | map('lower') | list -%}
    {%- if layout['curve'] == 'kdtree' and column | lower in curve_columns -%}
        {#- the tree's own depth on the column, each leaf `files` / its leaves files deep -#}
        {%- set tree = spark_clustering._kdtree_depth(layout, curve_columns.index(column | lower)) -%}
        {{ return([files, tree * ([1, files / layout['files']] | max)] | min) }}
    {%- endif -%}
    {%- set per = files / layout['slabs'] if layout['curve'] == 'slabs' else files -%}
    {%- if layout['curve'] == 'slabs' and column | lower == layout['lead'] | lower -%}
        {{ return([files, per + 1] | min) }}
    {%- elif column | lower not in curve_columns -%}
        {{ return(files) }}
    {%- endif -%}
    {%- set k = curve_columns | length -%}
    {%- set within = spark_clustering._curve_depth(per, k) if k > 1 else 1 -%}
    {{ return([files, within * (layout['slabs'] if layout['curve'] == 'slabs' else 1)] | min) }}
{% endmacro %}


{#- Depth of a fresh curve over k columns cut into `files` files, on each of its columns (see above). -#}
{% macro _curve_depth(files, k) %}
    {{ return([files, 1.4 * files ** (1 - 1 / k)] | min) }}
{% endmacro %}


{#- {rewrite, reason, scopes, selection (when rewrite), cost (the cost policy's figures)}: what this
    round rewrites and why, by the cost policy when it has a workload and a rate (`cost_context`,
    macros/recluster/_recluster_cost.sql), else by the fixed gate, which then says why. -#}
{% macro _recluster_decide(state, settings, final, round_number, cost_context) %}
    {%- if settings.key_change and round_number == 1 and state.files | length > 0 -%}
        {%- set everything = state.files -%}
        {{ return({'rewrite': true, 'scopes': state.scopes.keys() | list,
                   'reason': settings.key_change ~ ' since the table was last clustered: every file is rewritten under the new key',
                   'selection': {'files': everything, 'rows': everything | sum(attribute='rows'), 'bytes': everything | sum(attribute='size'),
                                 'level': 1 + (everything | map(attribute='level') | max)}}) }}
    {%- endif -%}
    {%- if cost_context is not none and cost_context.ok and state.files | length > 0 -%}
        {{ return(spark_clustering._recluster_cost_decide(state, settings, cost_context)) }}
    {%- endif -%}
    {%- set decision = spark_clustering._recluster_gate(state, settings, final, round_number) -%}
    {%- if cost_context is not none and not cost_context.ok -%}
        {%- do decision.update({'reason': 'cost policy falls back to the fixed gate (' ~ cost_context.why ~ '): ' ~ decision.reason}) -%}
    {%- endif -%}
    {%- if decision.rewrite -%}
        {%- do decision.update({'selection': spark_clustering._recluster_select(state, decision.scopes, settings)}) -%}
    {%- endif -%}
    {{ return(decision) }}
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


{#- "a=3.1 b=2.0" from a summary's per-column worst average depth. -#}
{% macro _depth_summary(summary) %}
    {%- if summary is none -%}{{ return('-') }}{%- endif -%}
    {%- set parts = [] -%}
    {%- for name, m in summary.columns.items() -%}{%- do parts.append(name ~ '=' ~ m.average_depth) -%}{%- endfor -%}
    {{ return(parts | join(' ') ~ ' (' ~ summary.files ~ ' files, ' ~ summary.new_files ~ ' new)') }}
{% endmacro %}
