{#- Test-only: cluster_method auto's choice among its candidates on the rows of `relation` over
    `files` files, simulated twice: on the driver (simulate_layouts) and by the SQL simulation (the
    k-d trees fit alike, with the extension when it is loaded), printed as one JSON line
    "layout_choices: {native: {name, ratio, candidates: [{name, ratio}]}, sql: {...}}". -#}
{% macro layout_choices(relation, columns, files, workload) %}
    {%- set cluster_cols = [] -%}
    {%- for name in columns -%}
        {%- for col in spark_clustering.describe_columns('select * from ' ~ relation) if col.name | lower == name | lower -%}
            {%- do cluster_cols.append(col) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- set names = cluster_cols | map(attribute='name') | list -%}
    {%- set backend = spark_clustering.udf_backend() -%}
    {%- do run_query('create or replace temporary view layout_choice_rows as select * from ' ~ relation) -%}
    {%- set rows = run_query('select count(*) from layout_choice_rows').rows[0][0] | int -%}
    {%- set ranges = {} -%}
    {%- for name in names -%}{%- do ranges.update({name: 100}) -%}{%- endfor -%}
    {%- set boundaries = spark_clustering.range_boundaries('layout_choice_rows', cluster_cols, names, ranges, 1.0, checksum=false) -%}
    {%- set result = {} -%}
    {%- for native in [true, false] -%}
        {%- set choice = spark_clustering._choose_layout('layout_choice_rows', rows, cluster_cols, boundaries, backend, files,
                                                         workload, label='the simulation test', native=native) -%}
        {%- do result.update({'native' if native else 'sql': {'name': choice.name, 'ratio': choice.ratio,
                                                              'candidates': choice.candidates}}) -%}
    {%- endfor -%}
    {%- do run_query('drop view if exists layout_choice_rows') -%}
    {{ print('layout_choices: ' ~ tojson(result)) }}
{% endmacro %}


{#- Test-only: print the depth each clustering column has in a fresh write of a recorded layout
    into `files` files, as recluster()'s gate assumes it (_fresh_depth), as one JSON line
    "fresh_depths: {...}". -#}
{% macro fresh_depths(layout, files) %}
    {%- set depths = {} -%}
    {%- for column in layout.columns -%}
        {%- do depths.update({column: spark_clustering._fresh_depth(layout, column, files)}) -%}
    {%- endfor -%}
    {{ print('fresh_depths: ' ~ tojson(depths)) }}
{% endmacro %}


{#- Test-only: the k-d trees of `cluster_method: auto` fit twice on the rows of `relation` (ids:
    each column's dense rank, NULL first), by the one-pass native fit (kdtree_fit) and by the SQL
    fit (a query a level), printed as one JSON line "kdtree_fits: {native: [cuts...], sql: [...],
    seconds: {...}}". -#}
{% macro kdtree_fits(relation, columns, files, workload) %}
    {%- set cluster_cols = [] -%}
    {%- for col in spark_clustering.describe_columns('select * from ' ~ relation) if col.name | lower in columns | map('lower') | list -%}
        {%- do cluster_cols.append(col) -%}
    {%- endfor -%}
    {%- set types = {} -%}
    {%- set ids = {} -%}
    {%- set ranks = [] -%}
    {%- for col in cluster_cols -%}
        {%- do types.update({col.name | lower: col.type}) -%}
        {%- do ids.update({col.name: '__id_' ~ loop.index0}) -%}
        {%- do ranks.append('dense_rank() over (order by ' ~ spark_clustering._quoted_columns([col.name]) ~ ' asc nulls first) as __id_' ~ loop.index0) -%}
    {%- endfor -%}
    {%- set sample = '(select *, ' ~ ranks | join(', ') ~ ' from ' ~ relation ~ ') as __fit_rows' -%}
    {%- set result = {'seconds': {}} -%}
    {%- for native in [true, false] -%}
        {%- set started = modules.datetime.datetime.now() -%}
        {%- set specs = spark_clustering._kdtree_layouts(sample, cluster_cols, ids, files, workload, types,
                                                         ['widest', 'workload'], native=native) -%}
        {%- set name = 'native' if native else 'sql' -%}
        {%- do result.update({name: specs}) -%}
        {%- do result.seconds.update({name: ((modules.datetime.datetime.now() - started).total_seconds()) | round(2)}) -%}
    {%- endfor -%}
    {{ print('kdtree_fits: ' ~ tojson(result)) }}
{% endmacro %}


{#- Test-only: the slabs recluster()'s cost policy takes a rewrite of `files` files under the k-d
    tree `layout` to cut each clustering column into (_recluster_cost_curve_columns), as one JSON
    line "cost_slabs: {column: slabs}". -#}
{% macro cost_slabs(layout, cluster_by, files) %}
    {%- set columns = spark_clustering._recluster_cost_curve_columns({'cfg': {'method': 'auto', 'layout': layout, 'cluster_by': cluster_by}}) -%}
    {%- set slabs = {} -%}
    {%- for name in cluster_by -%}{%- do slabs.update({name: files ** columns.kdtree.get(loop.index0, 0)}) -%}{%- endfor -%}
    {{ print('cost_slabs: ' ~ tojson(slabs)) }}
{% endmacro %}


{#- Test-only: what recluster()'s cost policy charges a call that rewrites one selection of `files`
    files of `file_bytes` bytes and `rows` rows in all (_recluster_cost_scope, no workload box: only
    its `cost` is asked; then _recluster_cost_call), as one JSON line "cost_of_rewrite: {cost, bytes}". -#}
{% macro cost_of_rewrite(method, cluster_by, ranges, partition_by, target_file_rows, files, file_bytes, rows,
                         read_whole_bytes=0, rewrite_metadata_bytes=0, cache_bytes=67108864) %}
    {%- set chosen = [] -%}
    {%- for i in range(files) -%}{%- do chosen.append({'size': file_bytes}) -%}{%- endfor -%}
    {%- set bytes = files * file_bytes -%}
    {%- set sweep = {'groups': [{'files': chosen, 'rows': rows, 'bytes': bytes}], 'per_box': [],
                     'now': {'bytes': bytes, 'files': files, 'settled_files': 0}} -%}
    {%- set settings = {'cfg': {'method': method, 'cluster_by': cluster_by, 'ranges': ranges, 'partition_by': partition_by,
                                'target_file_rows': target_file_rows, 'target_file_bytes': none, 'layout': none},
                        'kind': {'read_whole_bytes': read_whole_bytes, 'rewrite_metadata_bytes': rewrite_metadata_bytes},
                        'cache_bytes': cache_bytes} -%}
    {%- set call = spark_clustering._recluster_cost_call([spark_clustering._recluster_cost_scope(sweep, settings, 1).best], settings) -%}
    {{ print('cost_of_rewrite: ' ~ tojson({'cost': call.cost, 'bytes': call.bytes})) }}
{% endmacro %}


{#- Test-only: a call's rewrite of scopes whose best candidates have these `savings` and `costs` (one
    each per scope), with the kind's `rewrite_metadata_bytes` (_recluster_cost_call), as one JSON line
    "cost_call: {pays, cost, saving}". -#}
{% macro cost_call(savings, costs, rewrite_metadata_bytes) %}
    {%- set candidates = [] -%}
    {%- for i in range(savings | length) -%}
        {%- do candidates.append({'files': 1, 'bytes': costs[i] / 2, 'cost': costs[i], 'saving': savings[i], 'queries': 1}) -%}
    {%- endfor -%}
    {%- set call = spark_clustering._recluster_cost_call(candidates, {'kind': {'rewrite_metadata_bytes': rewrite_metadata_bytes}}) -%}
    {{ print('cost_call: ' ~ tojson({'pays': call.pays, 'cost': call.cost, 'saving': call.saving})) }}
{% endmacro %}
