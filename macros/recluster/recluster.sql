{#- Keep a table clustered as it grows: measure, decide (gate), rewrite only the files that need it,
    commit without losing a row. A post-hook on `incremental` and `table` models
    (`post_hook="{{ spark_clustering.recluster() }}"`) or a run-operation
    (`dbt run-operation recluster --args '{relation: schema.table, final: true}'`).

    Files carry their level in their name: `part-*` (what dbt and Spark write) is level 0, never
    clustered; a rewrite names its files `sc-l<level>-<run>-<n>.<ext>`, one run per rewrite. Each
    round (macros/recluster/_recluster_plan.sql, _recluster_rewrite.sql):
      1. measure: list the data files (size, mtime), per-file min/max (file_stats), the metrics
         per scope (the whole table, or each partition of a partitioned table);
      2. gate: rewrite a scope when a clustering column's average depth > max_average_depth or
         its max depth > max_depth; skip everything when fewer than min_new_rows rows arrived in
         level-0 files since the last recluster (unless final);
      3. select: the scope's level-0 files plus the smallest runs, merged while a run has at most
         merge_ratio x the rows gathered so far (settled, large runs are left alone); a round
         without new files merges the two smallest runs;
      4. rewrite the selection clustered into the staging of the table's kind (macros/tables/),
         validate row count + checksum, and commit with table_rewrite_commit: on parquet/orc a
         journaled file swap under the table's lease (aborts when a file it replaces changed,
         docs/concurrency.md); on Delta Lake and Iceberg the format's own rewrite transaction
         (docs/table_formats.md), where a staging directory sc-l<level>-<run>/ carries the level
         and run of the files in it.
    Rounds repeat while the gate still fails, up to max_rounds (final: until it passes or nothing
    is left to merge). Returns '' (so it can be a hook); the outcome is logged at info level and,
    under run-operation, printed as one JSON line `recluster: {...}`. -#}
{% macro recluster(relation=none, final=false, columns=none, method=none) %}
    {{ return(adapter.dispatch('recluster', 'spark_clustering')(relation, final, columns, method)) }}
{% endmacro %}


{% macro spark__recluster(relation, final, columns, method) %}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- set outcome = spark_clustering._recluster_run(relation, final, columns, method) -%}
    {%- do spark_clustering._print_if_run_operation('recluster', outcome) -%}
    {{ return('') }}
{% endmacro %}


{#- One recluster of one table, as recluster() runs it: the outcome as a dict (relation, final,
    decision, reason, stopped, rounds, before, after, thresholds), for recluster() to log and print
    and for maintain() to summarize. -#}
{% macro _recluster_run(relation, final, columns, method) %}
    {#- debug level: where a recluster begins in dbt's events (the tests count its statements from here) -#}
    {{ log('spark_clustering: recluster: start') }}
    {%- do spark_clustering._require_bool('final', final, 'recluster', 'argument') -%}
    {%- if relation is none -%}
        {%- if this is defined and this is not none -%}
            {%- set relation = this -%}
        {%- else -%}
            {{ exceptions.raise_compiler_error(
                "recluster: no `relation` given and not running as a model hook; call it as "
                ~ "dbt run-operation recluster --args '{relation: my_schema.my_table}'") }}
        {%- endif -%}
    {%- endif -%}
    {%- set relation = spark_clustering._resolve_relation(relation, 'recluster') -%}
    {%- set settings = spark_clustering._recluster_settings(relation, columns, method) -%}
    {%- set outcome = {'relation': relation | string, 'final': final, 'decision': 'skipped', 'reason': '',
                       'stopped': '', 'rounds': [], 'before': none, 'after': none} -%}

    {#- A commit a crash interrupted is finished or rolled back even when reclustering is switched
        off: that is about the rows the table holds, not about its layout. -#}
    {%- set has_extension = spark_clustering._has_extension_function('table_rewrite_commit') -%}
    {#- why reclustering is off for this call ('' when on): decided once, used below twice -#}
    {%- set off_reason = 'var spark_clustering_recluster is false' if var('spark_clustering_recluster', true) in [false, 'false', 'False', 0]
                         else (settings.skip_reason if settings.skip else '') -%}
    {#- Nothing changed costs nothing: when the table's data (and any pending recovery) and the config
        are what the last settled recluster recorded (_maintenance_record.sql), stop before the lease,
        the recovery and the listing. Read-only, so no lease: the record is written on the full path
        only, under the lease. A switched-off recluster still recovers, below. -#}
    {%- if has_extension and not final and not off_reason -%}
        {%- set unchanged = spark_clustering._recluster_unchanged(relation, settings) -%}
        {%- if unchanged.skip -%}
            {%- do outcome.update({'reason': unchanged.reason}) -%}
            {{ log('spark_clustering: recluster ' ~ settings.label ~ ': skipped (' ~ outcome.reason ~ ')', info=true) }}
            {{ return(outcome) }}
        {%- endif -%}
    {%- endif -%}
    {%- set lease = none -%}
    {%- if has_extension -%}
        {#- one writer at a time: recovery below must never touch a live writer's staging -#}
        {%- set lease = spark_clustering._table_lease_acquire(relation, 'table', 'recluster ' ~ settings.label,
                settings.cfg.lease_wait_seconds) -%}
        {%- do spark_clustering._recluster_recover(relation, settings, lease) -%}
    {%- endif -%}

    {%- if off_reason -%}
        {%- do outcome.update({'reason': off_reason}) -%}
        {%- do spark_clustering._table_lease_release(lease) -%}
        {{ log('spark_clustering: recluster ' ~ settings.label ~ ': skipped (' ~ outcome.reason ~ ')', info=true) }}
        {{ return(outcome) }}
    {%- endif -%}

    {%- if not has_extension -%}
        {%- do spark_clustering._missing_extension('recluster: ' ~ settings.label,
                ['table_data_files', 'table_rewrite_commit', 'table_rewrite_recover'], 'set skip_recluster: true') -%}
    {%- endif -%}

    {%- set limit = 64 if final else settings.max_rounds -%}
    {#- the cost policy's workload and rate, once per call (final: the gate, as asked) -#}
    {%- set cost_context = spark_clustering._recluster_cost_context(relation, settings)
                           if settings.policy == 'cost' and not final else none -%}
    {%- do outcome.update({'policy': 'cost' if cost_context is not none and cost_context.ok else 'gate'}) -%}
    {%- set ns = namespace(done=false, state=none, committed=false) -%}
    {%- for round_number in range(1, limit + 2) if not ns.done -%}
        {%- set ns.state = spark_clustering._recluster_measure(relation, settings) -%}
        {%- if outcome.before is none -%}{%- do outcome.update({'before': ns.state.summary}) -%}{%- endif -%}
        {%- set decision = spark_clustering._recluster_decide(ns.state, settings, final, round_number, cost_context) -%}
        {%- if round_number == 1 and decision.cost is defined -%}{%- do outcome.update({'cost': decision.cost}) -%}{%- endif -%}
        {%- if round_number > limit and decision.rewrite -%}
            {%- do outcome.update({'stopped': 'gate still fails after ' ~ limit ~ ' round(s): ' ~ decision.reason
                                   ~ (' (raise recluster.max_rounds or run with final: true)' if not final else '')}) -%}
            {%- set ns.done = true -%}
        {%- elif not decision.rewrite -%}
            {%- do outcome.update({'stopped': decision.reason}) -%}
            {%- if round_number == 1 -%}{%- do outcome.update({'reason': decision.reason}) -%}{%- endif -%}
            {%- set ns.done = true -%}
        {%- else -%}
            {%- set selection = decision.selection -%}
            {%- if selection.files | length == 0 -%}
                {%- do outcome.update({'stopped': decision.reason ~ '; nothing left to merge (every failing scope is one clustered run)'}) -%}
                {%- if round_number == 1 -%}{%- do outcome.update({'reason': outcome.stopped}) -%}{%- endif -%}
                {%- set ns.done = true -%}
            {%- else -%}
                {{ log('spark_clustering: recluster ' ~ settings.label ~ ': round ' ~ round_number ~ ': ' ~ decision.reason
                       ~ ' -> rewriting ' ~ selection.files | length ~ ' of ' ~ ns.state.files | length ~ ' files ('
                       ~ selection.rows ~ ' rows, ' ~ selection.bytes ~ ' bytes)', info=true) }}
                {%- if round_number == 1 -%}{%- do outcome.update({'reason': decision.reason}) -%}{%- endif -%}
                {%- set result = spark_clustering._recluster_rewrite(relation, ns.state, selection, settings, round_number, lease) -%}
                {%- do outcome.rounds.append(result) -%}
                {%- if result.status == 'committed' -%}
                    {%- set ns.committed = true -%}
                    {%- if cost_context is not none and cost_context.get('run_created') is not none -%}
                        {#- the run this round wrote, dated now: a later round's count starts from it -#}
                        {%- do cost_context.run_created.update({result.run_id: {'queries': cost_context.observed_queries,
                                                                                'runs': cost_context.cost_runs}}) -%}
                    {%- endif -%}
                    {%- do outcome.update({'decision': 'reclustered'}) -%}
                {%- else -%}
                    {%- do outcome.update({'decision': 'aborted', 'stopped': result.status}) -%}
                    {{ log('spark_clustering: recluster ' ~ settings.label ~ ': ' ~ result.status, info=true) }}
                    {%- set ns.done = true -%}
                {%- endif -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if outcome.decision == 'aborted' -%}
        {#- what the concurrent writer left, not what this run planned on -#}
        {%- set ns.state = spark_clustering._recluster_measure(relation, settings) -%}
    {%- endif -%}
    {%- do outcome.update({'after': ns.state.summary, 'thresholds': ns.state.thresholds}) -%}
    {%- if ns.committed -%}
        {#- only what changed (a first recluster, a layout chosen again): on Delta and Iceberg a
            property write is a commit of its own; the time of each recluster is in the record -#}
        {%- set changed = spark_clustering._changed_tblproperties({
                'spark_clustering.cluster_by': settings.cfg.cluster_by,
                'spark_clustering.method': settings.cfg.method,
                'spark_clustering.layout': settings.cfg.layout or '',
                'spark_clustering.layout_name': spark_clustering._layout_name(settings.cfg.layout) if settings.cfg.layout else ''},
                settings.detail.properties) -%}
        {%- if changed -%}
            {% call statement('spark_clustering_recluster_properties') -%}
                {{ spark_clustering._set_tblproperties_sql(relation, changed) }}
            {%- endcall %}
        {%- endif -%}
        {#- e.g. a plain table's statistics sidecar for the rewritten files (Delta and Iceberg keep
            them in their own log / manifests) -#}
        {%- do settings.kind.after_rewrite(relation, settings.cfg) -%}
    {%- endif -%}
    {%- if outcome.cost is defined and outcome.decision == 'reclustered' -%}
        {%- do outcome.update({'expected_saving_bytes': outcome.cost.expected_saving_bytes}) -%}
    {%- endif -%}
    {#- the cost policy's memory: the queries counted so far (the next run's rate is what comes on
        top) and what the last rewrite expected the files it left to meet per query (the next run
        checks it) -#}
    {%- set remembered = {} -%}
    {%- if cost_context is not none -%}
        {%- do remembered.update({'observed_queries': cost_context.observed_queries}) -%}
        {%- if outcome.cost is defined -%}
            {%- do remembered.update({'estimate_checks': outcome.cost.estimate_checks}) -%}
        {%- endif -%}
        {%- if cost_context.get('runs_since_rewrite') is not none -%}
            {%- do remembered.update({'runs_since_rewrite': 0 if outcome.decision == 'reclustered' else cost_context.runs_since_rewrite}) -%}
            {%- do remembered.update({'queries_at_last_rewrite': cost_context.observed_queries if outcome.decision == 'reclustered'
                                                                 else cost_context.rewrite_baseline}) -%}
            {#- when each run the table holds now was written (a run first seen: the last rewrite's
                date; the runs rewritten away are dropped) -#}
            {%- set run_created = {} -%}
            {%- for run in ns.state.files | map(attribute='run') | select | unique -%}
                {%- set key = spark_clustering._recluster_run_key(run, settings) -%}
                {%- do run_created.update({key: cost_context.run_created.get(key, cost_context.default_created)}) -%}
            {%- endfor -%}
            {%- do remembered.update({'cost_runs': cost_context.cost_runs, 'run_created': run_created}) -%}
        {%- endif -%}
        {%- if outcome.decision == 'reclustered' and outcome.cost is defined -%}
            {%- do remembered.update({'expected_files_per_query': outcome.cost.files_per_query_after,
                                      'expected_rewritten_files_per_query': outcome.cost.files_per_query_rewritten,
                                      'expected_at': modules.datetime.datetime.utcnow().isoformat()}) -%}
        {%- endif -%}
    {%- endif -%}
    {#- after every commit and property write (on Delta a version of its own), still under the lease -#}
    {%- do spark_clustering._recluster_record_outcome(relation, settings, outcome, remembered,
            cost_context.record if cost_context is not none else none) -%}
    {%- do spark_clustering._table_lease_release(lease) -%}
    {{ log('spark_clustering: recluster ' ~ settings.label ~ ': ' ~ outcome.decision ~ ' (' ~ outcome.reason
           ~ ('; stopped: ' ~ outcome.stopped if outcome.stopped and outcome.stopped != outcome.reason else '') ~ '); average depth '
           ~ spark_clustering._depth_summary(outcome.before) ~ ' -> ' ~ spark_clustering._depth_summary(outcome.after), info=true) }}
    {{ return(outcome) }}
{% endmacro %}


{% macro default__recluster(relation, final, columns, method) %}
    {{ spark_clustering._unsupported_adapter('recluster', 'rewrites data files of parquet, orc, Delta Lake and Iceberg tables through the Spark extension') }}
{% endmacro %}
