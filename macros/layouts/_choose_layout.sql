{#- `cluster_method: auto`: every candidate layout (_layout_candidates) is simulated on rows of the
    sampling pass: each candidate's key orders the sampled rows, ntile cuts them into the files the
    write would make (a k-d tree's files are its leaves), and each workload box counts the
    simulated files whose min/max it intersects. With the extension (simulate_layouts) on the
    driver, over the rows collected once; without it in one query (~1 s at 64 files: one task
    sorts the rows once per candidate). The layout with the fewest files
    scanned is written; the uniform Hilbert curve stays unless another is at least 3 % better (the
    sample's min/max only estimate the files'). Without a workload on the clustering columns, the
    uniform Hilbert curve is written. -#}

{#- Returns {spec, name, key_sql, layout, ratio, hilbert_ratio, candidates: [{name, ratio}], seconds
    (the evaluation's wall time), reason}.
    `sample`: the cached view of the sampled clustering columns, `sample_rows` its rows (about);
    `cluster_cols`: describe_columns entries of the clustering columns; `recorded`: a spec to reuse
    as it is (recluster); `native`: simulate with the extension (none: when it is loaded). -#}
{% macro _choose_layout(sample, sample_rows, cluster_cols, boundaries, backend, num_files, workload, recorded=none, label=none, native=none) %}
    {%- set names = cluster_cols | map(attribute='name') | list -%}
    {%- set key_layout = spark_clustering._key_layout(names, boundaries, backend) -%}
    {#- every candidate key must be a BIGINT: a curve over all columns within 63 bits -#}
    {%- set bits = [key_layout.bits, 63 // (names | length)] | min -%}
    {%- set layout = {'bits': bits, 'max_value': 2 ** bits - 1} -%}
    {%- set ids = {} -%}
    {%- for col in names -%}
        {%- do ids.update({col: spark_clustering._column_ids([col], boundaries, layout, backend)[0]}) -%}
    {%- endfor -%}
    {%- set uniform = {'curve': 'hilbert', 'columns': names} -%}

    {%- set types = {} -%}
    {%- for col in cluster_cols -%}{%- do types.update({col.name | lower: col.type}) -%}{%- endfor -%}
    {#- clustering_config and _resolve_workload give a list of boxes (or none) -#}
    {%- set boxes = workload or [] -%}
    {%- set filtered = spark_clustering._workload_columns(boxes, names) -%}

    {%- if recorded is not none or not filtered -%}
        {%- set spec = recorded if recorded is not none else uniform -%}
        {{ return({'spec': spec, 'name': spark_clustering._layout_name(spec), 'layout': layout,
                   'key_sql': spark_clustering._layout_key(spec, ids, layout, backend), 'ratio': none,
                   'hilbert_ratio': none, 'candidates': [], 'seconds': 0,
                   'reason': 'the layout recorded on the table' if recorded is not none
                             else 'no cluster_workload box filters on the clustering columns: uniform Hilbert'}) }}
    {%- endif -%}

    {%- set started = modules.datetime.datetime.now() -%}
    {%- set specs = spark_clustering._layout_candidates(names, filtered, num_files, bits) -%}
    {%- set conditions = [] -%}
    {%- set checks = [] -%}
    {%- for box in boxes -%}
        {%- set c = spark_clustering._box_conditions(box, types, 'cluster_workload', only=types.keys() | list) -%}
        {%- do conditions.append('case when ' ~ c.file ~ ' then 1 else 0 end') -%}
        {%- do checks.extend(c.checks) -%}
    {%- endfor -%}
    {%- if checks -%}
        {#- try_cast: under ANSI mode a cast of a bad literal fails the query instead of giving NULL -#}
        {%- set tests = [] -%}
        {%- for check in checks -%}{%- do tests.append('try_' ~ check.sql) -%}{%- endfor -%}
        {%- set bad = run_query('select ' ~ tests | join(', ')).rows[0] -%}
        {%- for i in range(checks | length) if bad[i] -%}
            {%- set check = checks[i] -%}
            {{ spark_clustering._config_error('cluster_workload', check.box,
                "bound " ~ check.value ~ " of column '" ~ check.column ~ "' does not cast to its type " ~ check.type
                ~ "; write it as a valid " ~ check.type ~ " literal") }}
        {%- endfor -%}
    {%- endif -%}

    {#- The rows the search runs on, cached with each column's id computed once, in one partition
        (no query below shuffles): ~500 of the sample's rows a file. Half of them (__sc_fit) fit the
        k-d trees, ~250 rows a leaf (the leaves' sizes vary by a few percent); the other half score
        every candidate, ~250 rows a file (on lineitem the same ranking as on 1,000, at a quarter of
        the cost), so no tree is scored on the rows it was cut on. -#}
    {%- set quoted = spark_clustering._quoted_columns(names) -%}
    {%- set id_columns = {} -%}
    {%- set id_selects = [] -%}
    {%- for col in names -%}
        {%- do id_columns.update({col: '__sc_id_' ~ loop.index0}) -%}
        {%- do id_selects.append(ids[col] ~ ' as __sc_id_' ~ loop.index0) -%}
    {%- endfor -%}
    {%- set search_rows = sample ~ '_search' -%}
    {%- set fraction = [1.0, 500 * num_files / ([sample_rows, 1] | max)] | min -%}
    {%- set search_sql = 'select /*+ COALESCE(1) */ ' ~ quoted ~ ', ' ~ id_selects | join(', ')
                         ~ ', rand(11) < 0.5 as __sc_fit from ' ~ sample ~ ' where rand(7) < ' ~ fraction -%}
    {#- With the extension, up to ~250,000 rows (512 files), the rows are collected into a view of
        their own (collect_to_view): a cached query's view is its text, whose boundaries (literal
        arrays, 70-170 KB) Spark parses and analyses again in each query of the search -#}
    {%- if num_files <= 512 and spark_clustering._has_extension_function('collect_to_view') -%}
        {%- do spark_clustering._call_extension('collect_to_view', {'view': search_rows, 'rows_sql': search_sql}) -%}
    {%- else -%}
        {%- do run_query('cache lazy table ' ~ search_rows ~ ' as ' ~ search_sql) -%}
    {%- endif -%}
    {%- do specs.extend(spark_clustering._kdtree_layouts('(select * from ' ~ search_rows ~ ' where __sc_fit)',
                        cluster_cols, id_columns, num_files, boxes, types, ['widest', 'workload'])) -%}
    {%- set scanned = {} -%}
    {%- if native is none -%}{%- set native = spark_clustering._has_extension_function('simulate_layouts') -%}{%- endif -%}
    {%- if native -%}
        {%- do scanned.update(spark_clustering._simulate_layouts_native(search_rows, specs, cluster_cols, id_columns, layout, backend,
                                                                         num_files, boxes, types)) -%}
    {%- else -%}
    {%- set keys = [] -%}
    {%- set leaf_files = [] -%}
    {%- for spec in specs -%}
        {%- do keys.append(spark_clustering._layout_key(spec, id_columns, layout, backend)) -%}
        {#- a k-d tree's files are its leaves, as the write cuts them (ntile would cut inside leaves
            that ties left a little unequal) -#}
        {%- if spec.curve == 'kdtree' -%}
            {%- do leaf_files.append('when ' ~ loop.index0 ~ ' then ' ~ spark_clustering._kdtree_leaf_of_key(spec, layout, '__sc_key')) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set ntile_file = 'ntile(' ~ num_files ~ ') over (partition by __sc_candidate order by __sc_key)' -%}
    {%- set stats = [] -%}
    {%- for col in names -%}
        {%- do stats.append('min(' ~ spark_clustering._quoted_columns([col]) ~ ') as ' ~ spark_clustering._quoted_suffixed(col, '__min')) -%}
        {%- do stats.append('max(' ~ spark_clustering._quoted_columns([col]) ~ ') as ' ~ spark_clustering._quoted_suffixed(col, '__max')) -%}
    {%- endfor -%}
    {%- set sql -%}
        select __sc_candidate, sum({{ conditions | join(' + ') }}) as __sc_scanned
        from (
            select __sc_candidate, {{ stats | join(', ') }}
            from (
                select __sc_candidate, {{ quoted }},
                    {{ ('case __sc_candidate ' ~ leaf_files | join(' ') ~ ' else ' ~ ntile_file ~ ' end') if leaf_files else ntile_file }} as __sc_file
                from (select /*+ COALESCE(1) */ * from {{ search_rows }} where not __sc_fit) as __sc_ids
                lateral view posexplode(array({{ keys | join(', ') }})) __sc_candidates as __sc_candidate, __sc_key
            ) as __sc_keyed
            group by __sc_candidate, __sc_file
        ) as __sc_files
        group by __sc_candidate
    {%- endset -%}
    {%- for row in run_query(sql).rows -%}{%- do scanned.update({row[0] | int: row[1] | int}) -%}{%- endfor -%}
    {%- endif -%}
    {%- do run_query('drop view if exists ' ~ search_rows) -%}

    {%- set scored = [] -%}
    {%- for spec in specs -%}
        {%- do scored.append({'spec': spec, 'name': spark_clustering._layout_name(spec),
                              'ratio': (scanned.get(loop.index0, 0) / (num_files * (boxes | length))) | round(4)}) -%}
    {%- endfor -%}
    {%- set seconds = ((modules.datetime.datetime.now() - started).total_seconds()) | round(2) -%}
    {%- set hilbert_ratio = scored[0].ratio -%}
    {%- set best = (scored | sort(attribute='ratio'))[0] -%}
    {%- set chosen = best if best.ratio < 0.97 * hilbert_ratio else scored[0] -%}
    {%- set ranked = [] -%}
    {%- for c in scored | sort(attribute='ratio') -%}{%- do ranked.append(c.name ~ ' ' ~ c.ratio) -%}{%- endfor -%}
    {{ log('spark_clustering: ' ~ (label or model.name) ~ ': cluster_method auto chose ' ~ chosen.name
           ~ ' (simulated files scanned / all ' ~ chosen.ratio ~ ', uniform hilbert ' ~ hilbert_ratio ~ ', '
           ~ specs | length ~ ' candidates, ' ~ boxes | length ~ ' workload boxes, ' ~ seconds ~ ' s); best: ' ~ ranked[:5] | join(', '),
           info=true) }}
    {{ log('spark_clustering: ' ~ (label or model.name) ~ ': all candidates: ' ~ ranked | join(', ')) }}
    {%- set candidates = [] -%}
    {%- for c in scored -%}{%- do candidates.append({'name': c.name, 'ratio': c.ratio}) -%}{%- endfor -%}
    {{ return({'spec': chosen.spec, 'name': chosen.name, 'layout': layout,
               'key_sql': spark_clustering._layout_key(chosen.spec, ids, layout, backend),
               'ratio': chosen.ratio, 'hilbert_ratio': hilbert_ratio, 'candidates': candidates,
               'seconds': seconds, 'reason': 'simulated on the sample'}) }}
{% endmacro %}


{#- {candidate index: workload boxes meeting each of its files, summed} by the extension's
    simulate_layouts: the rows of `search_rows` the SQL simulation scores (not __sc_fit), with each
    candidate's key, or its file for a k-d tree (its leaf), as the SQL simulation computes them. -#}
{% macro _simulate_layouts_native(search_rows, specs, cluster_cols, id_columns, layout, backend, num_files, boxes, types) %}
    {%- set quoted = spark_clustering._quoted_columns(cluster_cols | map(attribute='name') | list) -%}
    {%- set keys = [] -%}
    {%- set placed = [] -%}
    {%- set placements = [] -%}
    {%- for spec in specs -%}
        {%- set key = '__sc_key_' ~ loop.index0 -%}
        {%- do keys.append(spark_clustering._layout_key(spec, id_columns, layout, backend) ~ ' as ' ~ key) -%}
        {%- if spec.curve == 'kdtree' -%}
            {%- do placed.append('cast(' ~ spark_clustering._kdtree_leaf_of_key(spec, layout, key) ~ ' as bigint)') -%}
            {%- do placements.append('file') -%}
        {%- else -%}
            {%- do placed.append('cast(' ~ key ~ ' as bigint)') -%}
            {%- do placements.append('key') -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set rows_sql = 'select ' ~ quoted ~ ', ' ~ placed | join(', ') ~ ' from (select ' ~ quoted ~ ', ' ~ keys | join(', ')
                       ~ ' from ' ~ search_rows ~ ' where not __sc_fit) as __sc_keyed' -%}
    {%- set scanned = {} -%}
    {%- for row in spark_clustering._call_extension('simulate_layouts', {'rows_sql': rows_sql,
            'boxes_sql': spark_clustering._layout_boxes_sql(spark_clustering._counted_boxes(boxes), cluster_cols, types),
            'files': num_files,
            'placements': placements}, ['candidate', 'scanned']) -%}
        {%- do scanned.update({row.candidate | int: row.scanned | int}) -%}
    {%- endfor -%}
    {{ return(scanned) }}
{% endmacro %}
