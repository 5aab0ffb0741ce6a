{#- Maintenance outside the run: `dbt run-operation spark_clustering.maintain` reclusters every model
    that has the recluster() post-hook or a `recluster` config (in config() or under meta), or the
    ones `select` names, by the same policy as the post-hook (_recluster_run, one table after the
    other), and ends with one summary: a table in the log and, under run-operation, one JSON line
    `maintain: {...}`. A table whose lease another writer holds is reported as failed and the others
    go on; the run-operation then fails naming the failed tables. Returns the summary. -#}
{% macro maintain(select=none, exclude=none, final=false) %}
    {{ return(adapter.dispatch('maintain', 'spark_clustering')(select, exclude, final)) }}
{% endmacro %}


{% macro spark__maintain(select, exclude, final) %}
    {%- if not execute -%}{{ return({}) }}{%- endif -%}
    {%- do spark_clustering._require_bool('final', final, 'maintain', 'argument') -%}
    {%- set nodes = spark_clustering._maintain_nodes(select, exclude) -%}
    {%- set rows = [] -%}
    {%- for node in nodes -%}
        {%- do rows.append(spark_clustering._maintain_table(node, final)) -%}
    {%- endfor -%}
    {%- set failed = rows | selectattr('decision', 'equalto', 'failed') | list -%}
    {%- set summary = {'final': final, 'tables': rows, 'failed': failed | map(attribute='model') | list} -%}
    {{ log(spark_clustering._maintain_summary_table(rows), info=true) }}
    {%- do spark_clustering._print_if_run_operation('maintain', summary) -%}
    {%- if failed -%}
        {%- set named = [] -%}
        {%- for row in failed -%}{%- do named.append(row.model ~ ' (' ~ row.table ~ '): ' ~ row.reason) -%}{%- endfor -%}
        {{ exceptions.raise_compiler_error("maintain: " ~ failed | length ~ " of " ~ rows | length ~ " table(s) failed, "
            ~ "the others ran (see the summary above): " ~ named | join('; ')) }}
    {%- endif -%}
    {{ return(summary) }}
{% endmacro %}


{% macro default__maintain(select, exclude, final) %}
    {{ spark_clustering._unsupported_adapter('maintain', 'rewrites data files of parquet, orc, Delta Lake and Iceberg tables through the Spark extension') }}
{% endmacro %}


{#- The project's models that recluster: enabled, materialized as a table (not a view, ephemeral or
    materialized view: no data files of their own), with the recluster() post-hook or a `recluster`
    config (config() or meta). -#}
{% macro _maintain_candidates() %}
    {%- set candidates = [] -%}
    {%- for node in graph.nodes.values() if node.resource_type == 'model' and node.package_name == project_name -%}
        {%- set config = node.config or {} -%}
        {%- set hooks = (config.get('post-hook') or config.get('post_hook') or []) -%}
        {%- set hooked = [] -%}
        {%- for hook in hooks -%}
            {%- set sql = hook.sql if hook is mapping else hook | string -%}
            {%- if modules.re.search('\\brecluster\\s*\\(', sql) -%}{%- do hooked.append(sql) -%}{%- endif -%}
        {%- endfor -%}
        {%- set configured = config.get('recluster') is not none or (config.get('meta') or {}).get('recluster') is not none -%}
        {%- if config.get('enabled', true) and config.get('materialized') not in ['view', 'ephemeral', 'materialized_view']
              and (hooked or configured) -%}
            {%- do candidates.append(node) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(candidates | sort(attribute='name')) }}
{% endmacro %}


{#- The candidates `select` picks (all when none), less those `exclude` picks. Each item is a model
    name, `tag:<tag>` or `path:<folder or file>` (relative to the project, as dbt's --select); an
    item that picks no candidate is an error naming it and the candidates. -#}
{% macro _maintain_nodes(select, exclude) %}
    {%- set candidates = spark_clustering._maintain_candidates() -%}
    {%- set ns = namespace(picked=candidates) -%}
    {%- for argument, items in [('select', select), ('exclude', exclude)] if items is not none -%}
        {%- set items = [items] if items is string else items -%}
        {%- if items is mapping or items is not iterable -%}
            {{ exceptions.raise_compiler_error("maintain: argument `" ~ argument ~ "` must be a list of model names, "
                ~ "'tag:<tag>' or 'path:<folder>', e.g. --args '{" ~ argument ~ ": [my_model, \"tag:nightly\"]}'; got " ~ items) }}
        {%- endif -%}
        {%- set matched = [] -%}
        {%- for item in items -%}
            {%- set hits = spark_clustering._maintain_match(candidates, item | string) -%}
            {%- if not hits -%}
                {{ exceptions.raise_compiler_error("maintain: " ~ argument ~ " '" ~ item ~ "' matches no model with the "
                    ~ "recluster() post-hook or a recluster config (a table model of this project); those models are: "
                    ~ (candidates | map(attribute='name') | join(', ') or 'none')) }}
            {%- endif -%}
            {%- for node in hits if node.unique_id not in matched -%}{%- do matched.append(node.unique_id) -%}{%- endfor -%}
        {%- endfor -%}
        {%- if argument == 'select' -%}
            {%- set ns.picked = ns.picked | selectattr('unique_id', 'in', matched) | list -%}
        {%- else -%}
            {%- set ns.picked = ns.picked | rejectattr('unique_id', 'in', matched) | list -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(ns.picked) }}
{% endmacro %}


{% macro _maintain_match(candidates, item) %}
    {%- set hits = [] -%}
    {%- set folder = item[5:].strip('/') if item.startswith('path:') else none -%}
    {%- for node in candidates -%}
        {%- if item.startswith('tag:') -%}
            {%- set hit = item[4:] in (node.tags or []) -%}
        {%- elif folder is not none -%}
            {%- set hit = node.original_file_path == folder or node.original_file_path.startswith(folder ~ '/') -%}
        {%- else -%}
            {%- set hit = node.name == item -%}
        {%- endif -%}
        {%- if hit -%}{%- do hits.append(node) -%}{%- endif -%}
    {%- endfor -%}
    {{ return(hits) }}
{% endmacro %}


{#- One candidate: its summary row {model, table, decision, reason, files_rewritten, bytes_rewritten,
    rounds, seconds, expected_saving_bytes}. A table not built yet is a row, not an error; a lease
    another writer still holds after the wait is a failed row (a Jinja macro cannot catch an error,
    so the lease is probed first with table_lease_try_acquire, which answers instead of raising). -#}
{% macro _maintain_table(node, final) %}
    {%- set started = modules.datetime.datetime.utcnow() -%}
    {%- set identifier = node.alias or node.name -%}
    {%- set row = {'model': node.name, 'table': node.schema ~ '.' ~ identifier, 'decision': '', 'reason': '',
                   'files_rewritten': 0, 'bytes_rewritten': 0, 'rounds': 0, 'seconds': 0, 'expected_saving_bytes': none} -%}
    {%- set relation = adapter.get_relation(database=node.database, schema=node.schema, identifier=identifier) -%}
    {%- if relation is none -%}
        {%- do row.update({'decision': 'not built', 'reason': 'the table does not exist yet (dbt run builds it)'}) -%}
    {%- elif relation.is_view -%}
        {%- do row.update({'decision': 'skipped', 'reason': 'the relation is a view'}) -%}
    {%- else -%}
        {%- set busy = spark_clustering._maintain_lease_busy(relation) -%}
        {%- if busy -%}
            {%- do row.update({'decision': 'failed', 'reason': busy}) -%}
        {%- else -%}
            {{ log('spark_clustering: maintain, table ' ~ node.name ~ ' (' ~ row.table ~ ')', info=true) }}
            {%- set outcome = spark_clustering._recluster_run(relation, final, none, none) -%}
            {%- set committed = outcome.rounds | selectattr('status', 'equalto', 'committed') | list -%}
            {%- do row.update({'decision': outcome.decision,
                               'reason': outcome.reason ~ ('; stopped: ' ~ outcome.stopped if outcome.stopped and outcome.stopped != outcome.reason else ''),
                               'files_rewritten': committed | sum(attribute='files_replaced'),
                               'bytes_rewritten': committed | sum(attribute='bytes_written'),
                               'rounds': outcome.rounds | length,
                               'expected_saving_bytes': outcome.get('expected_saving_bytes')}) -%}
        {%- endif -%}
    {%- endif -%}
    {%- do row.update({'seconds': ((modules.datetime.datetime.utcnow() - started).total_seconds()) | round(1)}) -%}
    {{ return(row) }}
{% endmacro %}


{#- '' when the table's lease can be taken within the model's cluster_lease_wait_seconds (it is given
    up at once: _recluster_run takes it itself), else the holder as the lease error names it. Without
    the extension '' (recluster() then says what is missing). -#}
{% macro _maintain_lease_busy(relation) %}
    {%- if not spark_clustering._has_extension_function('table_lease_try_acquire') -%}{{ return('') }}{%- endif -%}
    {%- set wait = spark_clustering._setting_of(relation, 'cluster_lease_wait_seconds') -%}
    {%- set probe = spark_clustering._call_extension('table_lease_try_acquire',
            {'table': relation, 'owner': 'dbt ' ~ invocation_id ~ ' maintain probe', 'wait_seconds': wait if wait is number else 0,
             'scope': 'table'}, ['lease_token', 'busy'])[0] -%}
    {%- if probe.lease_token is none -%}
        {{ return(probe.busy) }}
    {%- endif -%}
    {%- do spark_clustering._table_lease_release(probe.lease_token) -%}
    {{ return('') }}
{% endmacro %}


{#- The summary as a fixed-width table for the log: one line per table. -#}
{% macro _maintain_summary_table(rows) %}
    {%- set header = ['model', 'table', 'decision', 'files', 'bytes', 'rounds', 'seconds', 'expected_saving', 'reason'] -%}
    {%- set lines = [header] -%}
    {%- for row in rows -%}
        {%- do lines.append([row.model, row.table, row.decision, row.files_rewritten | string, row.bytes_rewritten | string,
                             row.rounds | string, row.seconds | string,
                             '-' if row.expected_saving_bytes is none else row.expected_saving_bytes | string, row.reason]) -%}
    {%- endfor -%}
    {%- set widths = [] -%}
    {%- for i in range(header | length) -%}
        {%- do widths.append(lines | map(attribute=i) | map('length') | max) -%}
    {%- endfor -%}
    {%- set text = ['spark_clustering: maintain summary, ' ~ rows | length ~ ' table(s):'] -%}
    {%- for line in lines -%}
        {%- set cells = [] -%}
        {%- for i in range(line | length) -%}
            {%- do cells.append(line[i] if loop.last else line[i].ljust(widths[i])) -%}
        {%- endfor -%}
        {%- do text.append('  ' ~ cells | join('  ')) -%}
    {%- endfor -%}
    {{ return(text | join('\n')) }}
{% endmacro %}
