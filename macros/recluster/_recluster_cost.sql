{#- recluster()'s cost policy (`recluster: {policy: cost}`): rewrite when the reads a rewrite saves
    outweigh what it costs. Pure arithmetic over the measure (every file's size, rows, level, run and
    per-column [min, max]) and the table's workload: nothing here reads a row.

    Per scope (the table or one partition), in bytes:
      now      the bytes one query reads: per box of the workload, the files whose [min, max] meet
               the box on every clustering column it filters on (what min/max skipping keeps),
               weighed by how often the box runs
      after    the same with a candidate selection rewritten: the files left alone as they are; the
               selection's rows cut into F new files of the target size, of which a box meets
               F x prod_c min(1, f_c + 1/s_c): f_c the share of the selection's rows inside the box
               on column c (each file's rows taken as spread evenly over its [min, max]), s_c the
               slabs the layout cuts c into (a curve over k columns: F^(1/k) / 1.2 each, its files
               overlapping more than a grid's cells; linear: F on its first column, 1 on the others;
               a k-d tree, whose leaves do not overlap: F^e_c, e_c its share of the tree's cuts)
      cost     2 x the selection's bytes (a rewrite reads them and writes them again), plus what
               the write's first pass reads on top (_write_first_pass, the write plan's own rule).
               A write cut on sampled keys (no partition columns, a curve key that fits a BIGINT:
               _write_key_fits) or into one file reads the
               clustering columns first: nothing counted for them, the whole of every file the
               table's reader reads whole (Iceberg: files of at most 1 MiB; the kind's
               read_whole_bytes). Any other write (2 or more files of a partitioned table or of a
               key wider than 63 bits, linear) takes its quantiles or its checksum in a pass over
               every column: the selection's bytes once more (3 x in all). A selection of at most
               recluster.cache_bytes (or 4 x that with files the reader reads whole) is read into
               Spark's cache by that first pass and written from it (_recluster_caches_selection):
               2 x, whatever the write
      saving   (now - after) x the queries expected over the horizon: queries_per_run x horizon_runs;
               with horizon_runs 'lost_reads', the queries since the last rewrite instead (since the
               oldest run the candidate takes in was written, when that is earlier): a rewrite
               is made once the reads it would have saved since then reach its cost (the
               rent-or-buy rule: a table queried rarely is left alone, one queried often is kept
               clustered, with no guess of how long the table will live)
    The candidates are the levels' selections: the new (level-0) files alone, then with the smallest
    run, the two smallest, ... up to every file of the scope (a full recluster); without new files,
    the two smallest runs first (one run rewritten alone comes out as it was). Each scope's best is
    the one with the largest saving - cost, if that is positive. The call rewrites the scopes' bests
    together, and only if their saving - cost together exceeds the table's metadata that a call which
    rewrites reads again (its staging table, its commit, the measure after it: the kind's
    rewrite_metadata_bytes, paid once however many partitions it rewrites): small rewrites wait to be
    done together where the metadata weighs. -#}


{#- What the cost policy needs once per call: the workload as (box, weight) pairs (the boxes the
    extension observed, the 200 most queried; a declared `cluster_workload` list until the extension
    has observed as many queries as it has boxes: then the queries the table actually serves say
    more about the reads a rewrite saves than the ones it was declared to serve) and the rate
    (`queries_per_run`: a number, or 'observed': the queries the extension counted since the previous
    recluster run, from the table's maintenance record). {'ok': false, 'why': ...} when either is
    unknown: the fixed gate then decides and says why. -#}
{% macro _recluster_cost_context(relation, settings) %}
    {%- set declared = settings.workload_config -%}
    {%- set is_declared = declared is not none and declared is not string -%}
    {%- set declared_boxes = [] -%}
    {%- set declared_weights = {} -%}
    {%- for box in (declared if is_declared else []) -%}
        {%- set key = tojson(box, sort_keys=true) -%}
        {%- if key not in declared_weights -%}{%- do declared_boxes.append(box) -%}{%- do declared_weights.update({key: 0}) -%}{%- endif -%}
        {%- do declared_weights.update({key: declared_weights[key] + 1}) -%}
    {%- endfor -%}
    {%- set boxes = [] -%}
    {%- set weights = {} -%}
    {%- set ns = namespace(total=none) -%}
    {#- the queries observed so far count towards the rate whatever the boxes -#}
    {%- if spark_clustering._has_extension_function('observed_workload') -%}
        {%- set ns.total = 0 -%}
        {%- for row in spark_clustering._call_extension('observed_workload', {'table': settings.table_name}, ['box', 'queries'],
                                                        'order by queries desc, box') -%}
            {%- set ns.total = ns.total + row.queries | int -%}
            {%- if loop.index <= 200 -%}
                {%- do boxes.append(fromjson(row.box)) -%}
                {%- do weights.update({tojson(boxes[-1], sort_keys=true): row.queries | int}) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set source = 'observed' -%}
    {%- if is_declared and (ns.total or 0) < declared | length -%}
        {%- set boxes = declared_boxes -%}
        {%- set weights = declared_weights -%}
        {%- set source = 'declared' -%}
    {%- endif -%}
    {%- set record = spark_clustering._maintenance_record(relation) -%}
    {#- `record`: read under the lease, so still the record when the call writes it (_recluster_record_outcome) -#}
    {%- set context = {'ok': false, 'why': '', 'boxes': [], 'workload': source, 'declared_boxes': declared_boxes | length,
                       'observed_queries': ns.total, 'record': record,
                       'expected_files_per_query': record.get('expected_files_per_query'),
                       'expected_rewritten_files_per_query': record.get('expected_rewritten_files_per_query'),
                       'expected_at': record.get('expected_at'), 'estimate_checks': record.get('estimate_checks') or [],
                       'rate': none, 'rate_source': 'declared', 'horizon_runs': settings.horizon_runs} -%}
    {%- if not boxes -%}
        {%- do context.update({'why': 'no workload observed or declared (the Spark extension records the queries that filter '
                               ~ 'on the clustering columns; or set cluster_workload)'}) -%}
        {{ return(context) }}
    {%- endif -%}
    {%- set ns_sum = namespace(w=0) -%}
    {%- for box in boxes -%}{%- set ns_sum.w = ns_sum.w + weights[tojson(box, sort_keys=true)] -%}{%- endfor -%}
    {%- for box in boxes -%}
        {%- do context.boxes.append({'box': box, 'weight': weights[tojson(box, sort_keys=true)] / ns_sum.w}) -%}
    {%- endfor -%}
    {%- if settings.queries_per_run != 'observed' -%}
        {%- do context.update({'ok': true, 'rate': settings.queries_per_run}) -%}
    {%- elif ns.total is none -%}
        {%- do context.update({'why': 'queries_per_run is observed but the Spark extension, which counts the queries, is not '
                               ~ 'loaded: load it, or set queries_per_run to the queries the table serves between two runs'}) -%}
    {%- elif record.get('observed_queries') is none -%}
        {%- do context.update({'why': 'the rate of queries is not known yet (the first run under the cost policy records '
                               ~ ns.total ~ ' observed queries; the next one counts those that came since)'}) -%}
    {%- else -%}
        {%- do context.update({'ok': true, 'rate': [0, ns.total - record.observed_queries | int] | max, 'rate_source': 'observed'}) -%}
    {%- endif -%}
    {#- horizon_runs 'lost_reads': the queries since the last rewrite (this run's included), which
        read what the rewrite would have saved them: observed, the count since the rewrite's run;
        declared, the rate x the runs since it -#}
    {%- if context.ok and settings.horizon_runs == 'lost_reads' -%}
        {%- set runs = (record.get('runs_since_rewrite') or 0) | int + 1 -%}
        {#- with no rewrite recorded yet, counting starts at the previous run -#}
        {%- set baseline = record.get('queries_at_last_rewrite', record.get('observed_queries')) -%}
        {#- when each run of the table was written (run_created: {run: {queries, runs}}, the count of
            observed queries and this table's cost runs then); default_created, the last rewrite's
            date: a run not recorded yet came after it, or was there before the first (a build) -#}
        {%- set cost_runs = (record.get('cost_runs') or 0) | int + 1 -%}
        {%- do context.update({'runs_since_rewrite': runs, 'rewrite_baseline': baseline,
                               'cost_runs': cost_runs, 'run_created': dict(record.get('run_created') or {}),
                               'default_created': {'queries': baseline if context.rate_source == 'observed' else none,
                                                   'runs': cost_runs - runs}}) -%}
        {%- do context.update({'queries_since_rewrite': spark_clustering._recluster_cost_queries_since(context, context.default_created)}) -%}
    {%- endif -%}
    {{ return(context) }}
{% endmacro %}


{#- The key of a run in context.run_created: its id; a build's run, which every build calls 'build',
    by the build too (a rebuild is a new run) -#}
{% macro _recluster_run_key(run, settings) %}
    {%- if run != 'build' -%}{{ return(run) }}{%- endif -%}
    {%- set properties = settings.detail.properties or {} -%}
    {{ return('build@' ~ properties.get('spark_clustering.build_version', properties.get('spark_clustering.build_write_id', ''))) }}
{% endmacro %}


{#- horizon_runs lost_reads: the queries since `created` (an entry of context.run_created, or
    default_created: the last rewrite): observed, the count since then; declared, the rate x the
    cost runs since then -#}
{% macro _recluster_cost_queries_since(context, created) %}
    {%- if context.rate_source == 'observed' and created.get('queries') is not none -%}
        {{ return([0, context.observed_queries - created.queries | int] | max) }}
    {%- endif -%}
    {{ return(context.rate * [0, context.cost_runs - created.runs | int] | max) }}
{% endmacro %}


{#- {rewrite, reason, scopes, selection, cost} as _recluster_gate + _recluster_select return them,
    decided by cost (see the top of this file); `cost` holds the figures the log line and the
    outcome show. -#}
{% macro _recluster_cost_decide(state, settings, context) %}
    {%- set lost_reads = context.horizon_runs == 'lost_reads' -%}
    {%- set queries = context.queries_since_rewrite if lost_reads else context.rate * context.horizon_runs -%}
    {%- set chosen = [] -%}
    {%- set figures = {'queries': queries, 'queries_per_run': context.rate, 'rate_source': context.rate_source,
                       'horizon_runs': context.horizon_runs, 'boxes': context.boxes | length, 'workload': context.workload,
                       'bytes_per_query_now': 0, 'bytes_per_query_after': 0, 'files_per_query_now': 0,
                       'files_per_query_after': 0, 'files_per_query_rewritten': 0, 'files_per_query_settled': 0,
                       'rewrite_bytes': 0, 'rewrite_cost_bytes': 0, 'expected_saving_bytes': 0, 'rewrite_queries': 0} -%}
    {%- set ns = namespace(best_unpaid=none, settled=0) -%}
    {#- every scope's sweep first: what the files before this run's appends meet checks the last
        rewrite's estimate, which corrects this run's -#}
    {%- set sweeps = [] -%}
    {%- for key, scope in state.scopes.items() -%}
        {%- set sweep = spark_clustering._recluster_cost_sweep(scope, settings, context.boxes) -%}
        {%- do sweeps.append(sweep) -%}
        {%- set ns.settled = ns.settled + sweep.now.settled_files -%}
    {%- endfor -%}
    {#- lost_reads: a candidate that takes in a run is credited with the queries since the oldest run
        it takes in was written, not only since the last rewrite: from then on the queries read what
        keeping the candidate's rows apart cost them (a rewrite of the new files alone must not
        restart the count of a full recluster's) -#}
    {%- set run_queries = {} -%}
    {%- if lost_reads -%}
        {%- for sweep in sweeps -%}
            {%- for group in sweep.groups if group.run is defined -%}
                {%- set created = context.run_created.get(spark_clustering._recluster_run_key(group.run, settings), context.default_created) -%}
                {%- do run_queries.update({group.run: spark_clustering._recluster_cost_queries_since(context, created)}) -%}
            {%- endfor -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set correction = spark_clustering._recluster_cost_correction(context, ns.settled) -%}
    {%- do context.update({'correction': correction}) -%}
    {%- do figures.update({'estimate_correction': correction.factor, 'estimate_checks': correction.checks}) -%}
    {#- asked once, not per scope: outside a model (a run-operation) the session's functions are not
        memoised, and a table of many partitions has as many scopes -#}
    {%- set key_fits = spark_clustering._recluster_cost_key_fits(settings) -%}
    {%- set choices = [] -%}
    {%- for sweep in sweeps -%}
        {%- do choices.append(spark_clustering._recluster_cost_scope(sweep, settings, queries, correction.factor, run_queries, key_fits)) -%}
    {%- endfor -%}
    {#- the scopes whose best rewrite saves more than it costs are rewritten together, by one call
        that pays the table's metadata once: only if their net savings together exceed it -#}
    {%- set call = spark_clustering._recluster_cost_call(choices | selectattr('files') | map(attribute='best') | list, settings) -%}
    {%- for choice in choices -%}
        {%- do figures.update({'bytes_per_query_now': figures.bytes_per_query_now + choice.now.bytes,
                               'files_per_query_now': figures.files_per_query_now + choice.now.files,
                               'files_per_query_settled': figures.files_per_query_settled + choice.now.settled_files}) -%}
        {%- if call.pays and choice.files -%}
            {%- do chosen.extend(choice.files) -%}
            {%- do figures.update({'rewrite_queries': [figures.rewrite_queries, choice.queries] | max}) -%}
            {%- do figures.update({'bytes_per_query_after': figures.bytes_per_query_after + choice.after.bytes,
                                   'files_per_query_rewritten': figures.files_per_query_rewritten + choice.after.rewritten_files,
                                   'files_per_query_after': figures.files_per_query_after + choice.after.files,
                                   'rewrite_bytes': figures.rewrite_bytes + choice.bytes,
                                   'expected_saving_bytes': figures.expected_saving_bytes + choice.saving}) -%}
        {%- else -%}
            {%- do figures.update({'bytes_per_query_after': figures.bytes_per_query_after + choice.now.bytes,
                                   'files_per_query_after': figures.files_per_query_after + choice.now.files}) -%}
            {%- if choice.best is not none and (ns.best_unpaid is none or choice.best.net > ns.best_unpaid.net) -%}
                {%- set ns.best_unpaid = choice.best -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if call.pays -%}
        {%- do figures.update({'rewrite_cost_bytes': call.cost}) -%}
    {%- elif call.files -%}
        {%- set ns.best_unpaid = call -%}
    {%- elif ns.best_unpaid is not none -%}
        {%- set ns.best_unpaid = spark_clustering._recluster_cost_call([ns.best_unpaid], settings) -%}
    {%- endif -%}
    {%- for name in ['bytes_per_query_now', 'bytes_per_query_after', 'files_per_query_now', 'files_per_query_after',
                     'files_per_query_rewritten', 'files_per_query_settled', 'expected_saving_bytes'] -%}
        {%- do figures.update({name: figures[name] | round(1)}) -%}
    {%- endfor -%}
    {#- the queries the rewrite (or the best unpaid one) is credited with -#}
    {%- set credited = figures.rewrite_queries if chosen else (ns.best_unpaid.queries if ns.best_unpaid is not none else queries) -%}
    {%- set rate_text = (context.rate ~ ' queries per run (' ~ context.rate_source ~ '); ' ~ queries ~ ' since the last rewrite, '
                         ~ context.runs_since_rewrite ~ ' run(s) ago'
                         ~ ((', ' ~ (credited | round(1)) ~ ' since the oldest run it takes in was written') if credited > queries else '')
                         ~ ' (horizon lost_reads)') if lost_reads
                        else (context.rate ~ ' queries per run (' ~ context.rate_source ~ ') x horizon ' ~ context.horizon_runs ~ ' runs') -%}
    {#- the last rewrite's estimate against what the files it left meet now (new files aside) -#}
    {%- set expected = context.get('expected_files_per_query') -%}
    {%- set check = ('; the last rewrite expected ~' ~ expected ~ ' files per query, the files before this run\'s appends meet '
                     ~ figures.files_per_query_settled) if expected is not none else '' -%}
    {%- if correction.checks -%}
        {%- set check = check ~ '; estimates x' ~ correction.factor ~ ' (the table\'s last ' ~ correction.checks | length
                        ~ ' rewrite(s) checked)' -%}
    {%- endif -%}
    {%- if context.workload == 'observed' and context.declared_boxes -%}
        {%- set check = check ~ '; estimated on the ' ~ context.boxes | length ~ ' observed boxes, not the '
                        ~ context.declared_boxes ~ ' declared (' ~ context.observed_queries ~ ' queries observed)' -%}
    {%- endif -%}
    {%- do figures.update({'last_expected_files_per_query': expected}) -%}
    {%- if not chosen -%}
        {%- if ns.best_unpaid is none -%}
            {%- set reason = 'cost: nothing to rewrite' -%}
        {%- else -%}
            {%- set reason = 'cost: nothing pays: the best rewrite (' ~ ns.best_unpaid.files ~ ' files / '
                ~ spark_clustering._bytes_text(ns.best_unpaid.bytes) ~ ') costs ' ~ spark_clustering._bytes_text(ns.best_unpaid.cost)
                ~ ' and saves ~' ~ spark_clustering._bytes_text([0, ns.best_unpaid.saving] | max) ~ ' of reads over '
                ~ (credited | round(1)) ~ ' queries (' ~ rate_text ~ ')' ~ check -%}
        {%- endif -%}
        {{ return({'rewrite': false, 'scopes': [], 'reason': reason, 'cost': figures}) }}
    {%- endif -%}
    {%- set selection = {'files': chosen, 'rows': chosen | sum(attribute='rows'), 'bytes': chosen | sum(attribute='size'),
                         'level': 1 + (chosen | map(attribute='level') | max)} -%}
    {%- set reason = 'cost: rewrite ' ~ chosen | length ~ ' files / ' ~ spark_clustering._bytes_text(selection.bytes)
        ~ ': saves ~' ~ spark_clustering._bytes_text(figures.expected_saving_bytes) ~ ' of reads over ' ~ (credited | round(1))
        ~ ' queries (' ~ rate_text ~ '), costs ' ~ spark_clustering._bytes_text(figures.rewrite_cost_bytes)
        ~ '; files read per query ' ~ figures.files_per_query_now ~ ' -> ~' ~ figures.files_per_query_after ~ ' (estimated)' ~ check -%}
    {%- set scopes = chosen | map(attribute='scope') | unique | list -%}
    {{ return({'rewrite': true, 'scopes': scopes, 'reason': reason, 'selection': selection, 'cost': figures}) }}
{% endmacro %}


{#- What the table's own past rewrites say about the estimate: {factor, checks}. A rewrite under the
    policy records the files per query it expected its rewritten files to meet (and the files it left
    alone); the next run sees what the files before its appends meet (`settled`): the rewritten
    ones met settled - left, a ratio to what was expected. The last 5 ratios, one per rewrite, are
    kept in the maintenance record (`estimate_checks`); their geometric mean, within [1/3, 3],
    multiplies the files a box is expected to meet among the rewritten ones from then on (1 before
    any check). A rewrite expected to be met by fewer than 0.5 files per query is not checked (the
    ratio of small numbers says little). -#}
{% macro _recluster_cost_correction(context, settled) %}
    {#- decided by a call's first round: a later round's files before the appends include its rewrite -#}
    {%- if context.get('correction') is not none -%}{{ return(context.correction) }}{%- endif -%}
    {%- set checks = (context.get('estimate_checks') or []) | list -%}
    {%- set expected = context.get('expected_files_per_query') -%}
    {%- set rewritten = context.get('expected_rewritten_files_per_query') -%}
    {%- if expected is not none and rewritten is not none and rewritten >= 0.5 -%}
        {%- set ratio = [[(settled - (expected - rewritten)) / rewritten, 1.0 / 3] | max, 3.0] | min -%}
        {%- set entry = {'rewrite_at': context.get('expected_at'), 'ratio': ratio | round(3)} -%}
        {%- if checks and checks[-1].rewrite_at == entry.rewrite_at -%}
            {%- set checks = checks[:-1] -%}
        {%- endif -%}
        {%- set checks = (checks + [entry])[-5:] -%}
    {%- endif -%}
    {%- set ns = namespace(product=1.0) -%}
    {%- for c in checks -%}{%- set ns.product = ns.product * c.ratio -%}{%- endfor -%}
    {%- set factor = (ns.product ** (1.0 / checks | length) if checks else 1.0) | round(3) -%}
    {{ return({'factor': factor, 'checks': checks}) }}
{% endmacro %}


{#- One scope's sweep over its files against the workload's boxes: {groups (the new files, then each
    run, smallest first), per_box (per box and group: the bytes and files it meets and per column the
    rows inside it), now: {bytes, files, settled_files} per query}. -#}
{% macro _recluster_cost_sweep(scope, settings, boxes) %}
    {%- set columns = settings.cfg.cluster_by -%}
    {#- groups: the new (level-0) files, then each run, smallest first -#}
    {%- set runs = {} -%}
    {%- for file in scope.files if file.run is not none -%}
        {%- if file.run not in runs -%}{%- do runs.update({file.run: {'run': file.run, 'files': [], 'rows': 0}}) -%}{%- endif -%}
        {%- do runs[file.run].files.append(file) -%}
        {%- do runs[file.run].update({'rows': runs[file.run].rows + file.rows}) -%}
    {%- endfor -%}
    {%- set groups = [] -%}
    {%- set new_files = scope.files | selectattr('level', 'eq', 0) | list -%}
    {%- if new_files | selectattr('rows', 'gt', 0) | list -%}
        {%- do groups.append({'files': new_files, 'rows': new_files | sum(attribute='rows')}) -%}
    {%- endif -%}
    {%- for run in runs.values() | sort(attribute='run') | sort(attribute='rows') -%}{%- do groups.append(run) -%}{%- endfor -%}

    {#- one sweep over the files: per box and group, the bytes and files it meets, and per column the
        rows inside the box (sum of rows x the share of the file's [min, max] inside it) -#}
    {#- every bound as a number once (macro calls are the slow part of Jinja): each file's per column,
        each box's per column it filters on, read as that column's values are -#}
    {%- set numeric = {} -%}
    {%- set like = {} -%}
    {%- for file in scope.files -%}
        {%- set ranges = [] -%}
        {%- for r in file.ranges or [] -%}
            {%- if r is not none and loop.index0 not in like -%}{%- do like.update({loop.index0: r[0]}) -%}{%- endif -%}
            {%- do ranges.append(none if r is none else [spark_clustering._cost_number(r[0], r[0]), spark_clustering._cost_number(r[1], r[1])]) -%}
        {%- endfor -%}
        {%- do numeric.update({file.path: ranges}) -%}
    {%- endfor -%}
    {%- set lowered = columns | map('lower') | list -%}
    {%- set per_box = [] -%}
    {%- for entry in boxes -%}
        {%- set filters = [] -%}
        {%- for name, bounds in entry.box.items() if name | lower in lowered and lowered.index(name | lower) in like -%}
            {%- set c = lowered.index(name | lower) -%}
            {%- do filters.append([c, spark_clustering._cost_number(bounds[0], like[c]), spark_clustering._cost_number(bounds[1], like[c])]) -%}
        {%- endfor -%}
        {%- set group_figures = [] -%}
        {%- for group in groups -%}
            {%- set g = {'bytes': 0, 'files': 0, 'inside': {}} -%}
            {%- for file in group.files -%}
                {%- set ranges = numeric[file.path] -%}
                {%- set nsf = namespace(meets=true) -%}
                {%- for f in filters if ranges -%}
                    {#- the share of the file's rows inside the box on this column: its [min, max] taken
                        as evenly filled; a one-value range is all in or all out; only NULLs: none -#}
                    {%- set r = ranges[f[0]] -%}
                    {%- if r is none -%}
                        {%- set share = 0 -%}
                    {%- else -%}
                        {%- set start = r[0] if f[1] is none else [r[0], f[1]] | max -%}
                        {%- set end = r[1] if f[2] is none else [r[1], f[2]] | min -%}
                        {%- set share = 0 if start > end else (1 if r[1] == r[0] else [(end - start) / (r[1] - r[0]), 1e-9] | max) -%}
                    {%- endif -%}
                    {%- do g.inside.update({f[0]: g.inside.get(f[0], 0) + file.rows * share}) -%}
                    {%- if share == 0 -%}{%- set nsf.meets = false -%}{%- endif -%}
                {%- endfor -%}
                {%- if nsf.meets and file.rows > 0 -%}
                    {%- do g.update({'bytes': g.bytes + file.size, 'files': g.files + 1}) -%}
                {%- endif -%}
            {%- endfor -%}
            {%- do group_figures.append(g) -%}
        {%- endfor -%}
        {%- do per_box.append({'weight': entry.weight, 'filters': filters, 'groups': group_figures}) -%}
    {%- endfor -%}

    {#- settled: the files of earlier rewrites and builds only, which the last rewrite's estimate was about -#}
    {%- set first_run = 1 if new_files | selectattr('rows', 'gt', 0) | list else 0 -%}
    {%- set now = {'bytes': 0, 'files': 0, 'settled_files': 0} -%}
    {%- for b in per_box -%}
        {%- do now.update({'bytes': now.bytes + b.weight * b.groups | sum(attribute='bytes'),
                           'files': now.files + b.weight * b.groups | sum(attribute='files'),
                           'settled_files': now.settled_files + b.weight * b.groups[first_run:] | sum(attribute='files')}) -%}
    {%- endfor -%}
    {{ return({'groups': groups, 'per_box': per_box, 'now': now}) }}
{% endmacro %}


{#- One scope's decision from its sweep: {files (to rewrite, [] for none), bytes, saving, now: {bytes,
    files} per query, after: {bytes, files, rewritten_files}, best: the candidate with the largest net
    (saving - cost), rewritten or not}. `correction`: what the table's own past rewrites say the
    estimate of the files a box meets among the rewritten ones is off by (_recluster_cost_correction). -#}
{% macro _recluster_cost_scope(sweep, settings, queries, correction=1.0, run_queries={}, key_fits=none) %}
    {%- set slab_columns = spark_clustering._recluster_cost_curve_columns(settings) -%}
    {%- set groups = sweep.groups -%}
    {%- set per_box = sweep.per_box -%}
    {%- set now = sweep.now -%}
    {%- set ns = namespace(best=none) -%}
    {#- one run alone (no new files) is not a candidate: rewritten on its own it comes out as it went
        in (the same rows cut by the same layout), whatever an estimate says -#}
    {%- set first = 2 if groups and groups[0].run is defined else 1 -%}
    {%- set cfg = settings.cfg -%}
    {%- set key_fits = spark_clustering._recluster_cost_key_fits(settings) if key_fits is none else key_fits -%}
    {%- for size in range(first, groups | length + 1) -%}
        {%- set picked = groups[:size] -%}
        {%- set rows = picked | sum(attribute='rows') -%}
        {%- set files = [] -%}
        {%- for group in picked -%}{%- do files.extend(group.files) -%}{%- endfor -%}
        {%- set bytes = files | sum(attribute='size') -%}
        {%- set new_count = spark_clustering._files_for_target(rows, settings.cfg, bytes / [rows, 1] | max) -%}
        {#- a selection read into the cache is read once; otherwise the write's first pass
            (_write_first_pass; a recluster's write observes its checksum) reads the clustering
            columns (and the files the reader reads whole) or every column -#}
        {%- if spark_clustering._recluster_caches_selection(files, settings) -%}
            {%- set cost = 2 * bytes -%}
        {%- elif spark_clustering._write_first_pass(cfg.method, key_fits, new_count, true) == 'every_column' -%}
            {%- set cost = 3 * bytes -%}
        {%- else -%}
            {%- set cost = 2 * bytes + spark_clustering._recluster_cost_sample_reads(files, settings) -%}
        {%- endif -%}
        {%- set after = {'bytes': 0, 'files': 0, 'rewritten_files': 0} -%}
        {%- for b in per_box -%}
            {%- set left = b.groups[size:] -%}
            {%- set nsb = namespace(share=1.0) -%}
            {%- for f in b.filters -%}
                {%- set nsi = namespace(rows=0) -%}
                {%- for g in b.groups[:size] -%}{%- set nsi.rows = nsi.rows + g.inside.get(f[0], 0) -%}{%- endfor -%}
                {#- a curve's files overlap more than a grid's cells (a fresh curve is ~1.4 x as deep as
                    a grid, _curve_depth; a curve of 2^k files is the grid itself): F^(1/k) / 1.2 slabs,
                    between the two, as measured (macros/recluster/recluster.yml); a k-d tree's leaves
                    do not overlap: F^e_c slabs, e_c the share of its cuts that fall on c -#}
                {%- if slab_columns.kdtree is not none -%}
                    {%- set slabs = [1, new_count ** slab_columns.kdtree.get(f[0], 0)] | max -%}
                {%- else -%}
                    {%- set slabs = [1, new_count ** (1.0 / slab_columns.count) / 1.2] | max if f[0] in slab_columns.curve
                                    else (new_count if f[0] == slab_columns.lead else 1) -%}
                {%- endif -%}
                {%- set part = nsi.rows / [rows, 1] | max -%}
                {%- set nsb.share = nsb.share * ((0 if part == 0 else [1.0, part + 1.0 / slabs] | min)) -%}
            {%- endfor -%}
            {#- one new file's [min, max] are those of all its rows: whether it meets the box is known,
                not estimated, so the correction does not apply -#}
            {%- set met = [new_count, (correction if new_count > 1 else 1.0) * new_count * nsb.share] | min -%}
            {%- do after.update({'bytes': after.bytes + b.weight * (left | sum(attribute='bytes') + met * bytes / new_count),
                                 'files': after.files + b.weight * (left | sum(attribute='files') + met),
                                 'rewritten_files': after.rewritten_files + b.weight * met}) -%}
        {%- endfor -%}
        {%- set nsq = namespace(queries=queries) -%}
        {%- for group in picked if group.run is defined -%}
            {%- set nsq.queries = [nsq.queries, run_queries.get(group.run, queries)] | max -%}
        {%- endfor -%}
        {%- set saving = nsq.queries * (now.bytes - after.bytes) -%}
        {%- set candidate = {'files': files | length, 'chosen': files, 'bytes': bytes, 'cost': cost, 'saving': saving,
                             'net': saving - cost, 'after': after, 'queries': nsq.queries} -%}
        {%- if ns.best is none or candidate.net > ns.best.net -%}{%- set ns.best = candidate -%}{%- endif -%}
    {%- endfor -%}
    {%- if ns.best is not none and ns.best.net > 0 -%}
        {{ return({'files': ns.best.chosen, 'bytes': ns.best.bytes, 'cost': ns.best.cost, 'saving': ns.best.saving, 'now': now,
                   'after': ns.best.after, 'best': ns.best, 'queries': ns.best.queries}) }}
    {%- endif -%}
    {{ return({'files': [], 'bytes': 0, 'cost': 0, 'saving': 0, 'now': now, 'after': now, 'best': ns.best, 'queries': queries}) }}
{% endmacro %}


{#- One call's rewrite from the candidates it takes (one per scope: the table, or each partition it
    rewrites): {files, bytes, cost, saving, net, queries, pays}, the scopes' figures summed and the
    table's metadata that a call which rewrites reads again (its staging table, its commit, the
    measure after it: the kind's rewrite_metadata_bytes) counted once, however many partitions it
    rewrites. `pays` when it saves more than it costs; never for no candidate. -#}
{% macro _recluster_cost_call(candidates, settings) %}
    {%- set cost = (candidates | sum(attribute='cost')) + settings.kind.rewrite_metadata_bytes -%}
    {%- set saving = candidates | sum(attribute='saving') -%}
    {{ return({'files': candidates | sum(attribute='files'), 'bytes': candidates | sum(attribute='bytes'), 'cost': cost,
               'saving': saving, 'net': saving - cost, 'queries': (candidates | map(attribute='queries') | max) if candidates else 0,
               'pays': (candidates | length > 0) and saving > cost}) }}
{% endmacro %}


{#- Whether the rewrite's write cuts its files on sampled keys (_write_key_fits), from its settings. -#}
{% macro _recluster_cost_key_fits(settings) %}
    {%- set cfg = settings.cfg -%}
    {{ return(spark_clustering._write_key_fits(cfg.method, (cfg.partition_by or []) | length > 0, cfg.cluster_by | length,
                                               cfg.ranges.values() | max, spark_clustering.udf_backend())) }}
{% endmacro %}


{#- What a rewrite's sampling pass (a pass over the clustering columns of the selection, before a
    write cut on sampled keys) reads beyond the clustering columns: the files the table's reader
    reads whole (Iceberg's files of at most 1 MiB), in bytes. -#}
{% macro _recluster_cost_sample_reads(files, settings) %}
    {%- set limit = settings.kind.read_whole_bytes -%}
    {{ return(files | selectattr('size', 'le', limit) | sum(attribute='size') if limit > 0 else 0) }}
{% endmacro %}


{#- Which clustering columns (by index) a rewrite cuts into slabs, as _recluster_cost_scope needs
    them: {curve: [indexes], count: k, lead: index or none, kdtree: none or {index: e_c}}. hilbert /
    zorder: a curve over every column; linear: its first column only; auto: a curve over the columns
    of the recorded layout, or its k-d tree, which cuts F files into F^e_c slabs of column c (e_c:
    the share of the cuts on a leaf's path from the root that are on c, over all leaves). -#}
{% macro _recluster_cost_curve_columns(settings) %}
    {%- set cfg = settings.cfg -%}
    {%- set lowered = cfg.cluster_by | map('lower') | list -%}
    {%- if cfg.method == 'linear' -%}
        {{ return({'curve': [], 'count': 1, 'lead': 0, 'kdtree': none}) }}
    {%- endif -%}
    {%- set layout = cfg.layout if cfg.method == 'auto' and cfg.layout else none -%}
    {%- set names = (layout['columns'] if layout else cfg.cluster_by) | map('lower') | list -%}
    {%- set curve = [] -%}
    {%- for name in names if name in lowered -%}{%- do curve.append(lowered.index(name)) -%}{%- endfor -%}
    {%- set kdtree = none -%}
    {%- if layout and layout['curve'] == 'kdtree' and layout['files'] > 1 -%}
        {%- set weights = spark_clustering._kdtree_cut_weights(layout) -%}
        {%- set kdtree = {} -%}
        {%- for name in names if name in lowered -%}
            {%- do kdtree.update({lowered.index(name): weights.get(loop.index0, 0) / weights['all']}) -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return({'curve': curve, 'count': [curve | length, 1] | max, 'lead': none, 'kdtree': kdtree}) }}
{% endmacro %}


{#- A number that orders as `value` does among the values of its column, for the estimate: numbers
    as they are, dates as days, timestamps as seconds, strings by their first 8 bytes (a longer
    shared prefix makes their ranges look like one value). `like`: a value of the column from the
    statistics, which says how a workload's text bound (a date, a timestamp) is read. -#}
{% macro _cost_number(value, like) %}
    {%- if value is none -%}{{ return(none) }}{%- endif -%}
    {%- if value is number -%}{{ return(value | float) }}{%- endif -%}
    {%- set is_time = like is not none and like is not string and like is not number and like.toordinal is defined -%}
    {%- if value is string and is_time -%}
        {%- if like.hour is defined -%}
            {%- set value = modules.datetime.datetime.fromisoformat(value.replace('T', ' ')[:26]) -%}
        {%- else -%}
            {%- set value = modules.datetime.date.fromisoformat(value[:10]) -%}
        {%- endif -%}
    {%- endif -%}
    {%- if value is not string and value.toordinal is defined -%}
        {%- if value.hour is defined -%}
            {{ return(value.toordinal() * 86400.0 + value.hour * 3600 + value.minute * 60 + value.second + value.microsecond / 1000000) }}
        {%- endif -%}
        {{ return(value.toordinal() * 1.0) }}
    {%- endif -%}
    {%- if like is number -%}{{ return(value | float) }}{%- endif -%}
    {%- set encoded = (value | string).encode('utf-8') -%}
    {%- set ns = namespace(n=0.0) -%}
    {%- for i in range(8) -%}
        {%- set ns.n = ns.n * 256 + (encoded[i] if i < encoded | length else 0) -%}
    {%- endfor -%}
    {{ return(ns.n) }}
{% endmacro %}


{#- "310.2 MB" -#}
{% macro _bytes_text(n) %}
    {%- set ns = namespace(v=n | float, unit='B') -%}
    {%- for unit in ['KB', 'MB', 'GB', 'TB'] if ns.v >= 1000 -%}
        {%- set ns.v = ns.v / 1000 -%}{%- set ns.unit = unit -%}
    {%- endfor -%}
    {{ return((ns.v | round(1)) ~ ' ' ~ ns.unit) }}
{% endmacro %}
