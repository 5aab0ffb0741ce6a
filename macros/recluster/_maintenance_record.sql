{#- A table's maintenance record: one JSON object the jar keeps per table name beside the table's
    observed workload, <database location>/_spark_clustering_workload/<table>/maintenance.json
    (maintenance_record / save_maintenance_record, udfs/scala/.../maintenance/MaintenanceRecord.scala).
    Not in the table's data and not a table property: a property write on Delta / Iceberg is a commit,
    which would change the very version the record is compared with. Its fields (docs/architecture.md,
    "The maintenance record"):
      state          table_state's token when the last recluster settled ('' when it did not: the next
                     one measures again)
      config         what that recluster measured and gated under (_recluster_record_config)
      recorded_at    when (UTC, ISO 8601)
      history        its last decisions, oldest first (_recluster_history_length entries): at, decision,
                     reason, rounds, files_rewritten, bytes_rewritten, policy, expected_saving_bytes
      observed_queries          the cost policy: the queries the extension had counted on the table
                                at the last recluster (the next one's rate is what came since)
      expected_files_per_query  the cost policy: the files per query its last rewrite expected the
                                files it left to meet (the next run logs it beside what they meet)
      expected_rewritten_files_per_query, expected_at   the part of it among the files that rewrite
                                wrote, and when it ran
      estimate_checks           [{rewrite_at, ratio}], the last 5: what each rewrite's files met at
                                the next run against what it expected (_recluster_cost_correction)
      queries_at_last_rewrite, runs_since_rewrite   horizon_runs lost_reads: the count of observed
                                queries at the last rewrite, and the cost runs since it
      cost_runs, run_created    horizon_runs lost_reads: the cost runs so far, and per run the table
                                holds ({run id or build@<build>: {queries, runs}}) the count of
                                observed queries and cost_runs when it was written
    Other steps add their own fields through _save_maintenance_record; a reader ignores what it does
    not know. -#}

{#- The record of `relation` as a dict; {} when it has none or the extension lacks the function. -#}
{% macro _maintenance_record(relation) %}
    {%- if not spark_clustering._has_extension_function('maintenance_record') -%}{{ return({}) }}{%- endif -%}
    {%- set text = spark_clustering._call_extension('maintenance_record', {'table': relation}, ['record'])[0].record -%}
    {{ return(fromjson(text) if text else {}) }}
{% endmacro %}


{#- Merge `fields` (a dict) into the record of `relation` and write it whole (a reader sees the old
    record or the new one); returns the record written. `record`: the record as the caller just read
    it (saves reading it again). Read, merge and write are not one step: call it under the table's
    lease, as recluster() does, so two writers of the record do not interleave. -#}
{% macro _save_maintenance_record(relation, fields, record=none) %}
    {%- set record = record if record is not none else spark_clustering._maintenance_record(relation) -%}
    {%- do record.update(fields) -%}
    {%- do spark_clustering._call_extension('save_maintenance_record', {'table': relation, 'record': tojson(record)}) -%}
    {{ return(record) }}
{% endmacro %}


{#- How many decisions the record's history keeps. -#}
{% macro _recluster_history_length() %}
    {{ return(20) }}
{% endmacro %}


{#- What a recluster measures and gates under: a change of any of it must be measured again, even
    when the table's data did not change. -#}
{% macro _recluster_record_config(settings) %}
    {{ return({'cluster_by': settings.cfg.cluster_by, 'method': settings.cfg.method, 'layout': settings.cfg.layout,
               'gate': settings.cfg.gate, 'target_file_rows': settings.cfg.target_file_rows,
               'target_file_bytes': settings.cfg.target_file_bytes}) }}
{% endmacro %}


{#- Whether recluster() can stop before its lease: the table's data and the config are what the last
    settled recluster recorded, and no interrupted rewrite awaits recovery. Read-only (table_state and
    the record, in one statement), so it needs no lease: a writer that commits after it ran is seen by
    the next recluster, as one that commits just after a full recluster is. {skip, state, reason}. -#}
{% macro _recluster_unchanged(relation, settings) %}
    {#- one question: the jar that has table_state has maintenance_record (a run-operation keeps no
        memo of the answers, so each is a statement there) -#}
    {%- if not spark_clustering._has_extension_function('table_state') -%}
        {{ return({'skip': false, 'state': none, 'reason': ''}) }}
    {%- endif -%}
    {%- set table = spark_clustering._sql_literal(relation.schema ~ '.' ~ relation.identifier, 'recluster') -%}
    {%- set row = run_query('select s.state, s.pending, r.record from table_state(' ~ table ~ ') s cross join maintenance_record('
                            ~ table ~ ') r').rows[0] -%}
    {%- set record = fromjson(row[2]) if row[2] else {} -%}
    {%- set same = not row[1] and (record.get('state') or '') != '' and record.get('state') == row[0]
                   and record.get('config') == spark_clustering._recluster_record_config(settings) -%}
    {{ return({'skip': same, 'state': row[0],
               'reason': 'nothing changed since the last recluster (state ' ~ row[0] ~ ')' if same else ''}) }}
{% endmacro %}


{#- At the end of a recluster, after its commits and property writes (on Delta a property write is a
    version of its own): the table's state, the config, and the decision added to the history. The
    state is kept only when the recluster settled (the gate passed, or nothing is left to merge): one
    stopped by max_rounds or aborted by a concurrent writer has work left, so the next one measures.
    `record`: the record as this call read it under its lease (saves reading it again). -#}
{% macro _recluster_record_outcome(relation, settings, outcome, fields={}, record=none) %}
    {%- if not spark_clustering._has_extension_function('save_maintenance_record') -%}{{ return(none) }}{%- endif -%}
    {%- set settled = outcome.decision != 'aborted' and not (outcome.stopped or '').startswith('gate still fails') -%}
    {%- set state = spark_clustering._call_extension('table_state', {'table': relation}, ['state', 'pending'])[0] -%}
    {%- set ns = namespace(files=0, bytes=0) -%}
    {%- for r in outcome.rounds if r.status == 'committed' -%}
        {%- set ns.files = ns.files + r.files_replaced -%}
        {%- set ns.bytes = ns.bytes + r.bytes_removed -%}
    {%- endfor -%}
    {%- set now = modules.datetime.datetime.utcnow().isoformat() -%}
    {%- set record = record if record is not none else spark_clustering._maintenance_record(relation) -%}
    {%- set history = (record.get('history') or [])[1 - spark_clustering._recluster_history_length():] -%}
    {%- do history.append({'at': now, 'decision': outcome.decision, 'reason': outcome.reason,
                           'rounds': outcome.rounds | length, 'files_rewritten': ns.files, 'bytes_rewritten': ns.bytes,
                           'policy': outcome.get('policy'), 'expected_saving_bytes': outcome.get('expected_saving_bytes')}) -%}
    {%- set merged = {} -%}
    {%- do merged.update(fields) -%}
    {%- do merged.update({
            'state': state.state if settled and not state.pending else '',
            'config': spark_clustering._recluster_record_config(settings), 'recorded_at': now, 'history': history}) -%}
    {%- do spark_clustering._save_maintenance_record(relation, merged, record) -%}
{% endmacro %}
