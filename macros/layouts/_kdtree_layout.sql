{#- The k-d tree layouts, `cluster_method: auto` candidates. The sampled rows are cut in two, and
    each half again, until every part is one file: a part of n files is cut at the row quantile
    (n // 2) / n, on one column chosen per part. Two ways to choose it, two candidates:
    - 'widest': the column with the widest range of range ids in the part (ids spread evenly over
      the rows), so the parts stay near cubes in row space: every column pruned alike, as a curve
      does, but without the curve's overlapping files;
    - 'workload': the column where the fewest workload boxes meet both halves' min/max (on a tie,
      the widest), so the cuts go where the queries are narrow, and on correlated columns along
      the rows.
    Unlike a curve cut into files, the files' min/max boxes do not overlap. The cuts are values,
    not range ids: a recluster quantizes its own rows, and still routes each row to the same leaf. -#}

{#- Up to this many files a tree is fit (one query per level: 8 levels at 256), and its spec must
    fit a table property (Spark splits its own long properties at 4000 characters: some Hive
    metastore schemas keep no more). -#}
{% macro _kdtree_limits() %}
    {{ return({'max_files': 256, 'max_spec_chars': 3500}) }}
{% endmacro %}


{#- Files below `node` of the tree over `files` files: the root (node 1) has them all, node i's
    children 2i and 2i+1 take n // 2 and the rest. {node: files} for every node. -#}
{% macro _kdtree_shape(files) %}
    {%- set shape = {1: files} -%}
    {%- set ns = namespace(level=[1]) -%}
    {%- for _ in range(12) if ns.level -%}
        {%- set next = [] -%}
        {%- for node in ns.level if shape[node] > 1 -%}
            {%- do shape.update({2 * node: shape[node] // 2, 2 * node + 1: shape[node] - shape[node] // 2}) -%}
            {%- do next.extend([2 * node, 2 * node + 1]) -%}
        {%- endfor -%}
        {%- set ns.level = next -%}
    {%- endfor -%}
    {{ return(shape) }}
{% endmacro %}


{#- The condition "a row goes to the lower child" of a cut [column index, SQL literal or null]:
    NULL sorts first, as range ids put it. -#}
{% macro _kdtree_cut_sql(cut, columns) %}
    {%- set col = spark_clustering._quoted_columns([columns[cut[0]]]) -%}
    {%- if cut[1] is none -%}{{ return(col ~ ' is null') }}{%- endif -%}
    {{ return('(' ~ col ~ ' is null or ' ~ col ~ ' <= ' ~ cut[1] ~ ')') }}
{% endmacro %}


{#- SQL of the node at `depth` below `node` that a row falls in (a leaf above that depth stays). -#}
{% macro _kdtree_node_sql(cuts, shape, columns, node, depth) %}
    {%- if depth == 0 or shape[node] == 1 -%}{{ return(node | string) }}{%- endif -%}
    {{ return('case when ' ~ spark_clustering._kdtree_cut_sql(cuts[node | string], columns)
              ~ ' then ' ~ spark_clustering._kdtree_node_sql(cuts, shape, columns, 2 * node, depth - 1)
              ~ ' else ' ~ spark_clustering._kdtree_node_sql(cuts, shape, columns, 2 * node + 1, depth - 1) ~ ' end') }}
{% endmacro %}


{#- SQL of the leaf (0 .. files - 1, in key order) a row falls in. -#}
{% macro _kdtree_leaf_sql(spec, node, files, offset) %}
    {%- if files == 1 -%}{{ return(offset | string) }}{%- endif -%}
    {%- set low = files // 2 -%}
    {{ return('case when ' ~ spark_clustering._kdtree_cut_sql(spec.cuts[node | string], spec.columns)
              ~ ' then ' ~ spark_clustering._kdtree_leaf_sql(spec, 2 * node, low, offset)
              ~ ' else ' ~ spark_clustering._kdtree_leaf_sql(spec, 2 * node + 1, files - low, offset + low) ~ ' end') }}
{% endmacro %}


{#- The depth column `column` (an index into spec.columns) has in a fresh write of the tree below
    `node` (`files` leaves): a leaf 1; a cut on the column puts its halves side by side (the
    deeper one), a cut on another column stacks them (their sum). -#}
{% macro _kdtree_depth(spec, column, node=1, files=none) %}
    {%- set files = spec.files if files is none else files -%}
    {%- if files == 1 -%}{{ return(1) }}{%- endif -%}
    {%- set low = spark_clustering._kdtree_depth(spec, column, 2 * node, files // 2) -%}
    {%- set high = spark_clustering._kdtree_depth(spec, column, 2 * node + 1, files - files // 2) -%}
    {{ return([low, high] | max if spec.cuts[node | string][0] == column else low + high) }}
{% endmacro %}


{#- Per column (an index into spec.columns) the leaves whose path from the root has a cut on it,
    counted once per such cut, and under 'all' every cut of every path: a node of f leaves cut on c
    adds f to c's count. {'all': n, index: n, ...}. -#}
{% macro _kdtree_cut_weights(spec, node=1, files=none) %}
    {%- set files = spec.files if files is none else files -%}
    {%- set weights = {'all': 0} -%}
    {%- if files > 1 -%}
        {%- set column = spec.cuts[node | string][0] -%}
        {%- do weights.update({'all': files, column: files}) -%}
        {%- for child in [spark_clustering._kdtree_cut_weights(spec, 2 * node, files // 2),
                          spark_clustering._kdtree_cut_weights(spec, 2 * node + 1, files - files // 2)] -%}
            {%- for key, value in child.items() -%}{%- do weights.update({key: weights.get(key, 0) + value}) -%}{%- endfor -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return(weights) }}
{% endmacro %}


{#- Bits per id of the curve that orders the rows within a leaf: the leaf takes the high bits of
    the BIGINT key, the ids as many of their high bits as fit below it. -#}
{% macro _kdtree_inner_bits(spec, layout) %}
    {{ return([layout.bits, (63 - spark_clustering._key_bits(spec.files - 1)) // (spec.columns | length)] | min) }}
{% endmacro %}


{#- SQL of the leaf of a row from its key `key_sql` (the key's high bits). -#}
{% macro _kdtree_leaf_of_key(spec, layout, key_sql) %}
    {{ return('shiftright(' ~ key_sql ~ ', ' ~ spark_clustering._kdtree_inner_bits(spec, layout) * (spec.columns | length) ~ ')') }}
{% endmacro %}


{#- The BIGINT key: the leaf in the high bits, then the Hilbert curve of the ids within the leaf. -#}
{% macro _kdtree_key(spec, ids, layout, backend) %}
    {%- set bits = spark_clustering._kdtree_inner_bits(spec, layout) -%}
    {%- set shifted = [] -%}
    {%- for col in spec.columns -%}
        {%- do shifted.append(ids[col] if bits == layout.bits else 'shiftright(' ~ ids[col] ~ ', ' ~ (layout.bits - bits) ~ ')') -%}
    {%- endfor -%}
    {{ return('(shiftleft(cast(' ~ spark_clustering._kdtree_leaf_sql(spec, 1, spec.files, 0) ~ ' as bigint), '
              ~ bits * (spec.columns | length) ~ ') | ' ~ spark_clustering.hilbert_key(bits, shifted, backend) ~ ')') }}
{% endmacro %}


{#- SQL of the file (1 .. files) a row of the tree's write goes to: its leaf + 1, so each file is
    one leaf (cut on the sample's keys instead, a file boundary could land inside a leaf when ties
    made the leaves a few percent unequal); the same leaf expression _kdtree_key puts in the key's
    high bits, so the write evaluates it once for both. -#}
{% macro _kdtree_file_sql(spec) %}
    {{ return('(' ~ spark_clustering._kdtree_leaf_sql(spec, 1, spec.files, 0) ~ ' + 1)') }}
{% endmacro %}


{#- SQL of the file (1 .. files) a row goes to when a write of fewer files than the tree has leaves
    (a recluster's rewrite of part of the table) cuts the tree into whole subtrees: the files are
    handed out from the root down, each child taking its share of the files by the rows of `sample`
    (the write's sampled clustering columns) below it, and a subtree given one file is one file. A
    file is then a node of the tree, whose [min, max] stay inside that node's box; cut at sampled
    keys instead, a file could hold leaves on both sides of a cut high in the tree, and span the
    table on the cut's column. A child with no sampled rows takes no file, so a write may make
    fewer files than it planned. none when the tree has no fewer leaves than `files`. -#}
{% macro _kdtree_subtree_file_sql(spec, sample, files) %}
    {%- if files >= spec.files or files < 2 -%}{{ return(none) }}{%- endif -%}
    {%- set leaf_sql = spark_clustering._kdtree_leaf_sql(spec, 1, spec.files, 0) -%}
    {%- set counts = {} -%}
    {%- for row in run_query('select ' ~ leaf_sql ~ ' as leaf, count(*) as n from ' ~ sample ~ ' group by 1') -%}
        {%- do counts.update({row[0] | int: row[1] | int}) -%}
    {%- endfor -%}
    {%- set file_of_leaf = [] -%}
    {%- set ns = namespace(next=0) -%}
    {#- [first leaf, leaves, files, 'low' or 'high' child] of each node still to cut, depth first in key order. A node of 0
        files (no sampled row below it) joins a neighbour's file: a lower child the file after it
        (its sibling's first), a higher child the file before it. -#}
    {%- set stack = [[0, spec.files, files, 'low']] -%}
    {%- for _ in range(4 * spec.files + 4) if stack -%}
        {%- set node = stack.pop() -%}
        {%- set first, leaves, want = node[0], node[1], node[2] -%}
        {%- if want <= 1 or leaves == 1 -%}
            {%- set file = ns.next + 1 if want != 0 or node[3] == 'low' else ns.next -%}
            {%- set ns.next = ns.next + (1 if want != 0 else 0) -%}
            {%- for _ in range(leaves) -%}{%- do file_of_leaf.append([file, 1] | max) -%}{%- endfor -%}
        {%- else -%}
            {%- set low = leaves // 2 -%}
            {%- set nsr = namespace(low=0, high=0) -%}
            {%- for leaf in range(first, first + leaves) -%}
                {%- if leaf < first + low -%}{%- set nsr.low = nsr.low + counts.get(leaf, 0) -%}
                {%- else -%}{%- set nsr.high = nsr.high + counts.get(leaf, 0) -%}{%- endif -%}
            {%- endfor -%}
            {%- set share = (want * nsr.low / [nsr.low + nsr.high, 1] | max) | round | int -%}
            {%- set want_low = [[share, 1 if nsr.low > 0 else 0] | max, want - (1 if nsr.high > 0 else 0)] | min -%}
            {#- the higher child onto the stack first, so the lower one comes off first -#}
            {%- do stack.append([first + low, leaves - low, want - want_low, 'high']) -%}
            {%- do stack.append([first, low, want_low, 'low']) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return('element_at(array(' ~ file_of_leaf | join(', ') ~ '), ' ~ leaf_sql ~ ' + 1)') }}
{% endmacro %}


{#- The specs {'curve': 'kdtree', 'split', 'columns', 'files', 'cuts': {node: [column index, SQL literal
    or null]}} fit on `sample` (the clustering columns' rows), one per way of choosing a cut in
    `splits` ('widest', 'workload': for `boxes`); none when no tree applies (one column, one file,
    more files than _kdtree_limits); a tree whose spec is too long is left out. With the extension
    (kdtree_fit, `native`: none = when it is loaded) the trees are fit on the driver in one pass
    over the collected rows. Without it, in SQL, the trees fit together, one query per level: every
    node of the level of every tree cut on every column, the two halves' min/max, and the boxes
    meeting them (each query costs ~0.4 s, mostly Spark's own start-up of it, whatever the trees).
    Both cut the same trees (test_auto_layout fits them both ways). -#}
{% macro _kdtree_layouts(sample, cluster_cols, ids, num_files, boxes, types, splits, native=none) %}
    {%- set names = cluster_cols | map(attribute='name') | list -%}
    {%- set limits = spark_clustering._kdtree_limits() -%}
    {%- if names | length < 2 or num_files < 2 or num_files > limits.max_files or not splits -%}{{ return([]) }}{%- endif -%}
    {#- the boxes meeting a half, each distinct box once with its count -#}
    {%- set counted = spark_clustering._counted_boxes(boxes) -%}
    {%- set cuts = [] -%}
    {%- for split in splits -%}{%- do cuts.append({}) -%}{%- endfor -%}
    {%- if native is none -%}{%- set native = spark_clustering._has_extension_function('kdtree_fit') -%}{%- endif -%}
    {%- if native -%}
        {#- the same trees, fit on the driver in one pass (KdTreeFit.scala): one query instead of one a level -#}
        {%- set fit = spark_clustering._kdtree_fit_native(sample, cluster_cols, ids, num_files, counted, types, splits) -%}
        {%- for row in fit -%}
            {%- do cuts[row.tree | int].update({row.node | string: [row.column | int, row.literal]}) -%}
        {%- endfor -%}
    {%- else -%}
    {%- set hits = [] -%}
    {%- for key, count in counted.items() if 'workload' in splits -%}
        {%- set c = spark_clustering._box_conditions(fromjson(key), types, 'cluster_workload', only=types.keys() | list) -%}
        {%- do hits.append('case when ' ~ c.file ~ ' then ' ~ count ~ ' else 0 end') -%}
    {%- endfor -%}
    {%- set shape = spark_clustering._kdtree_shape(num_files) -%}
    {%- set id_selects = [] -%}
    {%- for col in names -%}{%- do id_selects.append(ids[col] ~ ' as __sc_id_' ~ loop.index0) -%}{%- endfor -%}
    {#- per column: its id as the sort key, its lower half's largest value as a literal, its min/max -#}
    {%- set keys = [] -%}
    {%- set literals = [] -%}
    {%- set bounds = [] -%}
    {%- for col in cluster_cols -%}
        {%- set i = loop.index0 -%}
        {%- do keys.append('when ' ~ i ~ ' then __sc_id_' ~ i) -%}
        {%- do literals.append('when ' ~ i ~ ' then ' ~ spark_clustering._sql_literal_expression(
            spark_clustering._quoted_suffixed(col.name, '__max'), col.type, col.name)) -%}
        {%- do bounds.append('min(' ~ spark_clustering._quoted_columns([col.name]) ~ ') as ' ~ spark_clustering._quoted_suffixed(col.name, '__min')) -%}
        {%- do bounds.append('max(' ~ spark_clustering._quoted_columns([col.name]) ~ ') as ' ~ spark_clustering._quoted_suffixed(col.name, '__max')) -%}
    {%- endfor -%}
    {%- for depth in range(12) -%}
        {%- set level = [] -%}
        {%- for node in shape if node >= 2 ** depth and node < 2 ** (depth + 1) and shape[node] > 1 -%}{%- do level.append(node) -%}{%- endfor -%}
        {%- if level -%}
            {#- each row once per tree, in the node of that tree it falls in at this depth; one
                partition: the windows and groups below then need no shuffle, and the query runs
                as one task (each shuffle of a few thousand rows costs more than the rows) -#}
            {%- set tree_nodes = [] -%}
            {%- for split in splits -%}
                {%- do tree_nodes.append(spark_clustering._kdtree_node_sql(cuts[loop.index0], shape, names, 1, depth)) -%}
            {%- endfor -%}
            {%- set rows_sql = '(select * from (select /*+ COALESCE(1) */ ' ~ spark_clustering._quoted_columns(names) ~ ', ' ~ id_selects | join(', ') ~ ', '
                ~ '__sc_tree, element_at(array(' ~ tree_nodes | join(', ') ~ '), __sc_tree + 1) as __sc_node from ' ~ sample
                ~ ' lateral view explode(sequence(0, ' ~ (splits | length - 1) ~ ')) __sc_trees as __sc_tree'
                ~ ') where __sc_node in (' ~ level | join(', ') ~ ')) as __sc_rows' -%}
            {#- Per tree, node and column, the node cut there: the lower half = the rows whose id is
                at most the id of the row at the node's cut quantile (rank (n // 2) / n of its rows);
                the boxes meeting either half (the files' min/max test of the simulation); the cut
                as a value, the largest of the lower half (later rows, quantized on their own, fall
                on the same side); the width of the node's ids (to break a tie). -#}
            {%- set share_low = [] -%}
            {%- set share_all = [] -%}
            {%- for node in level -%}
                {%- do share_low.append('when ' ~ node ~ ' then ' ~ shape[node] // 2) -%}
                {%- do share_all.append('when ' ~ node ~ ' then ' ~ shape[node]) -%}
            {%- endfor -%}
            {%- set sql -%}
                select __sc_tree, __sc_node, __sc_dim, sum({{ hits | join(' + ') if hits else '0' }}), max(__sc_width),
                    max(case when __sc_low then case __sc_dim {{ literals | join(' ') }} end end)
                from (
                    select __sc_tree, __sc_node, __sc_dim, __sc_low, max(__sc_width) as __sc_width, {{ bounds | join(', ') }}
                    from (
                        select *, coalesce(__sc_key <= max(case when __sc_rank <= __sc_cut then __sc_key end) over __sc_part, false) as __sc_low,
                            max(__sc_key) over __sc_part - min(__sc_key) over __sc_part as __sc_width
                        from (
                            select *, row_number() over (partition by __sc_tree, __sc_node, __sc_dim order by __sc_key) as __sc_rank,
                                count(*) over __sc_part * (case __sc_node {{ share_low | join(' ') }} end)
                                    div (case __sc_node {{ share_all | join(' ') }} end) as __sc_cut
                            from (
                                select *, case __sc_dim {{ keys | join(' ') }} end as __sc_key
                                from {{ rows_sql }} lateral view explode(sequence(0, {{ names | length - 1 }})) __sc_dims as __sc_dim
                            ) as __sc_keyed
                            window __sc_part as (partition by __sc_tree, __sc_node, __sc_dim)
                        ) as __sc_ranked
                        window __sc_part as (partition by __sc_tree, __sc_node, __sc_dim)
                    ) as __sc_split
                    group by __sc_tree, __sc_node, __sc_dim, __sc_low
                ) as __sc_halves
                group by __sc_tree, __sc_node, __sc_dim
            {%- endset -%}
            {%- set tried = {} -%}
            {%- for row in run_query(sql).rows -%}
                {%- do tried.update({(row[0] | int, row[1] | int, row[2] | int): {'hits': row[3] | int, 'width': row[4] | float, 'literal': row[5]}}) -%}
            {%- endfor -%}
            {#- the cut that fewest boxes meet both halves of ('workload'); on a tie, and always for
                'widest' (whose hits count nothing), the column widest in the node -#}
            {%- for split in splits -%}
                {%- set t = loop.index0 -%}
                {%- for node in level -%}
                    {%- set ns = namespace(best=none) -%}
                    {%- for i in range(names | length) if (t, node, i) in tried -%}
                        {%- set found = tried[(t, node, i)] -%}
                        {%- set candidate = {'column': i, 'hits': found.hits if split == 'workload' else 0,
                                             'width': found.width, 'literal': found.literal} -%}
                        {%- if ns.best is none or candidate.hits < ns.best.hits
                               or (candidate.hits == ns.best.hits and candidate.width > ns.best.width) -%}
                            {%- set ns.best = candidate -%}
                        {%- endif -%}
                    {%- endfor -%}
                    {#- a node the sample left empty keeps every row on one side -#}
                    {%- do cuts[t].update({node | string: [ns.best.column, ns.best.literal] if ns.best is not none else [0, none]}) -%}
                {%- endfor -%}
            {%- endfor -%}
        {%- endif -%}
    {%- endfor -%}
    {%- endif -%}
    {%- set specs = [] -%}
    {%- for split in splits -%}
        {%- set spec = {'curve': 'kdtree', 'split': split, 'columns': names, 'files': num_files, 'cuts': cuts[loop.index0]} -%}
        {%- if tojson(spec) | length > limits.max_spec_chars -%}
            {{ log('spark_clustering: the kdtree layout over ' ~ num_files ~ ' files takes ' ~ tojson(spec) | length
                   ~ ' characters, more than a table property holds; not a candidate') }}
        {%- else -%}
            {%- do specs.append(spec) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(specs) }}
{% endmacro %}


{#- The rows of kdtree_fit (tree, node, column, literal) for `sample`: its rows as the fit reads
    them (the clustering columns' values, their ids, and the SQL literal of each value: a cut
    records the literal of the lower half's largest value), and the distinct boxes of `counted`
    ({box JSON: count}) with their bounds cast to the columns' types, as _box_conditions tests them. -#}
{% macro _kdtree_fit_native(sample, cluster_cols, ids, num_files, counted, types, splits) %}
    {%- set values = [] -%}
    {%- set id_sqls = [] -%}
    {%- set literals = [] -%}
    {%- for col in cluster_cols -%}
        {%- set quoted = spark_clustering._quoted_columns([col.name]) -%}
        {%- do values.append(quoted) -%}
        {%- do id_sqls.append('cast(' ~ ids[col.name] ~ ' as bigint)') -%}
        {%- do literals.append(spark_clustering._sql_literal_expression(quoted, col.type, col.name)) -%}
    {%- endfor -%}
    {%- set rows_sql = 'select ' ~ (values + id_sqls + literals) | join(', ') ~ ' from ' ~ sample -%}
    {%- set boxes_sql = spark_clustering._layout_boxes_sql(counted if 'workload' in splits else {}, cluster_cols, types) -%}
    {{ return(spark_clustering._call_extension('kdtree_fit', {'rows_sql': rows_sql, 'boxes_sql': boxes_sql, 'files': num_files,
                                                              'splits': splits}, ['tree', 'node', 'column', 'literal'])) }}
{% endmacro %}


{#- {box JSON (keys sorted): how many times `boxes` holds it}: each distinct workload box once. -#}
{% macro _counted_boxes(boxes) %}
    {%- set counted = {} -%}
    {%- for box in boxes -%}
        {%- set key = tojson(box, sort_keys=true) -%}
        {%- do counted.update({key: counted.get(key, 0) + 1}) -%}
    {%- endfor -%}
    {{ return(counted) }}
{% endmacro %}


{#- The workload boxes as the extension's layout functions (kdtree_fit, simulate_layouts) read them:
    one row per distinct box of `counted` ({box JSON: count}), its count, then per clustering column
    whether it filters on it and its bounds cast to the column's type (NULL = open), as
    _box_conditions tests them; '' for no box. -#}
{% macro _layout_boxes_sql(counted, cluster_cols, types) %}
    {%- set box_rows = [] -%}
    {%- for key, count in counted.items() -%}
        {%- set box = {} -%}
        {%- for name, bounds in fromjson(key).items() if name | lower in types -%}
            {%- do box.update({name | lower: bounds}) -%}
        {%- endfor -%}
        {%- set fields = [count ~ 'L'] -%}
        {%- for col in cluster_cols -%}
            {%- set bounds = box.get(col.name | lower) -%}
            {%- do fields.append('true' if bounds is not none else 'false') -%}
            {%- for value in (bounds if bounds is not none else [none, none]) -%}
                {%- do fields.append(spark_clustering._typed_literal(value, col.type, 'cluster_workload')) -%}
            {%- endfor -%}
        {%- endfor -%}
        {%- do box_rows.append('(' ~ fields | join(', ') ~ ')') -%}
    {%- endfor -%}
    {{ return(('select * from values ' ~ box_rows | join(', ')) if box_rows else '') }}
{% endmacro %}
