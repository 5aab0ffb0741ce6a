{#- The layouts `cluster_method: auto` chooses among, as small JSON-able specs, and the key of each.

    A spec is {'curve': 'hilbert' | 'zorder', 'columns': [...]} (a curve over those columns' ids) or
    {'curve': 'slabs', 'lead': column, 'slabs': m, 'columns': [...]}: the lead column cut into m
    slabs of equal rows, each slab ordered by the Hilbert curve of `columns` (the others). Slabs
    favour the lead column as much as m says (m = the file count: a linear order on it); a curve
    over fewer columns drops what the workload never filters on. The specs fit on the data,
    {'curve': 'kdtree', 'split', 'columns', 'files', 'cuts'}, are in _kdtree_layout.sql. All keys are BIGINT. -#}

{#- The candidates for `columns` (the clustering columns), `filtered` (those the workload filters
    on, in `columns` order), `num_files` and `bits` per id. -#}
{% macro _layout_candidates(columns, filtered, num_files, bits) %}
    {%- set specs = [{'curve': 'hilbert', 'columns': columns}] -%}
    {%- if columns | length > 1 -%}
        {%- do specs.append({'curve': 'zorder', 'columns': columns}) -%}
    {%- endif -%}
    {#- curves over a subset: every subset of 2+ filtered columns (up to 4 of them) -#}
    {%- if filtered | length <= 4 -%}
        {%- for mask in range(1, 2 ** (filtered | length)) -%}
            {%- set subset = [] -%}
            {%- for i in range(filtered | length) if (mask // 2 ** i) % 2 == 1 -%}{%- do subset.append(filtered[i]) -%}{%- endfor -%}
            {%- if subset | length >= 2 and subset | length < columns | length -%}
                {%- do specs.append({'curve': 'hilbert', 'columns': subset}) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {#- slabs on each filtered column: m = 2, 4, ... up to the file count -#}
    {%- set counts = [] -%}
    {%- for p in range(1, 18) if 2 ** p < num_files -%}{%- do counts.append(2 ** p) -%}{%- endfor -%}
    {%- if num_files > 1 -%}{%- do counts.append(num_files) -%}{%- endif -%}
    {%- for lead in filtered if columns | length > 1 -%}
        {%- set others = columns | reject('equalto', lead) | list -%}
        {%- for m in counts if spark_clustering._key_bits(m - 1) + bits * (others | length) <= 63 -%}
            {%- do specs.append({'curve': 'slabs', 'lead': lead, 'slabs': m, 'columns': others}) -%}
        {%- endfor -%}
    {%- endfor -%}
    {{ return(specs) }}
{% endmacro %}


{#- "hilbert(a, b)", "zorder(a, b, c)", "slabs(a, 16) then hilbert(b, c)": what logs, table
    properties and the audit show. -#}
{% macro _layout_name(spec) %}
    {%- if spec.curve == 'kdtree' -%}
        {{ return('kdtree(' ~ spec.columns | join(', ') ~ ')' ~ (' by workload' if spec.get('split') == 'workload' else '')) }}
    {%- endif -%}
    {%- set curve = (spec.curve if spec.curve != 'slabs' else 'hilbert') ~ '(' ~ spec.columns | join(', ') ~ ')' -%}
    {%- if spec.curve == 'slabs' -%}
        {{ return('slabs(' ~ spec.lead ~ ', ' ~ spec.slabs ~ ')' ~ (' then ' ~ curve if spec.columns else '')) }}
    {%- endif -%}
    {{ return(curve) }}
{% endmacro %}


{#- The BIGINT key of `spec`, from `ids` ({column: SQL of its id in [0, layout.max_value]}). -#}
{% macro _layout_key(spec, ids, layout, backend) %}
    {%- if spec.curve == 'kdtree' -%}{{ return(spark_clustering._kdtree_key(spec, ids, layout, backend)) }}{%- endif -%}
    {%- set id_sqls = [] -%}
    {%- for col in spec.columns -%}{%- do id_sqls.append(ids[col]) -%}{%- endfor -%}
    {%- if id_sqls | length == 1 -%}
        {%- set curve = 'cast(' ~ id_sqls[0] ~ ' as bigint)' -%}
    {%- elif id_sqls and spec.curve == 'zorder' -%}
        {%- set curve = spark_clustering.zorder_key(layout.bits, id_sqls, backend) -%}
    {%- elif id_sqls -%}
        {%- set curve = spark_clustering.hilbert_key(layout.bits, id_sqls, backend) -%}
    {%- endif -%}
    {%- if spec.curve != 'slabs' -%}{{ return(curve) }}{%- endif -%}
    {#- slab = id * m div (max_value + 1): ids are spread evenly over [0, max_value] by rows -#}
    {%- set slab = '(cast(' ~ ids[spec.lead] ~ ' as bigint) * ' ~ spec.slabs ~ ' div ' ~ (layout.max_value + 1) ~ ')' -%}
    {%- if not id_sqls -%}{{ return(slab) }}{%- endif -%}
    {{ return('(shiftleft(' ~ slab ~ ', ' ~ layout.bits * (id_sqls | length) ~ ') | ' ~ curve ~ ')') }}
{% endmacro %}


{#- The spec recorded in the table property spark_clustering.layout, if it still fits `columns`
    (lower-case match); none otherwise. -#}
{% macro _recorded_layout(text, columns) %}
    {%- if not text -%}{{ return(none) }}{%- endif -%}
    {%- set spec = fromjson(text) -%}
    {%- set known = columns | map('lower') | list -%}
    {%- if spec is not mapping or spec.get('curve') not in ['hilbert', 'zorder', 'slabs', 'kdtree'] or not spec.get('columns') is iterable -%}
        {{ return(none) }}
    {%- endif -%}
    {%- if spec['curve'] == 'kdtree' and (spec.get('cuts') is not mapping or spec.get('files') is not number) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- for col in spec['columns'] + ([spec['lead']] if spec['curve'] == 'slabs' else []) if col | lower not in known -%}
        {{ return(none) }}
    {%- endfor -%}
    {#- the model's own spelling of each column -#}
    {%- set named = {} -%}
    {%- for col in columns -%}{%- do named.update({col | lower: col}) -%}{%- endfor -%}
    {%- set canonical = {'curve': spec['curve'], 'columns': []} -%}
    {%- for col in spec['columns'] -%}{%- do canonical['columns'].append(named[col | lower]) -%}{%- endfor -%}
    {%- if spec['curve'] == 'slabs' -%}
        {%- do canonical.update({'lead': named[spec['lead'] | lower], 'slabs': spec['slabs'] | int}) -%}
    {%- elif spec['curve'] == 'kdtree' -%}
        {%- do canonical.update({'split': spec.get('split', 'widest'), 'files': spec['files'] | int, 'cuts': spec['cuts']}) -%}
    {%- endif -%}
    {{ return(canonical) }}
{% endmacro %}
