{#- A write's rows with NULLs in a clustering column, in files of their own.

    Readers that prune row groups on footer statistics without the format's log (pyarrow datasets)
    keep every row group that holds a NULL in the filtered column, whatever its min/max; a row group
    whose column is all NULL they drop. A curve gives NULL the lowest id of its column, and crosses
    that slab of the grid in many pieces, so a column's NULL rows landed in 5-6 of 16 files, mixed
    with values, each kept by such a reader for every filter on the column.

    The key below puts the row's NULL pattern (a bit per column whose NULLs fill at least half a
    file) above the curve's bits, so each pattern's rows are contiguous in key order, still on the
    curve of their other columns, and _file_routing starts a file at each pattern's first key. A
    file then holds one pattern (or, for patterns too small for a file of their own, the previous
    one's rows too, which share its highest NULL column): a column is all NULL in a file or has no
    NULL there. Spark's skipping drops an all-NULL file on any comparison of the column, as before.
    A key that has no bits to spare (more than 63 with them) or rows without sampled NULLs is
    unchanged, and so are the write's files. -#}

{#- The pattern a write keys on, or none: {key_sql (the key with the pattern above it), shift (the
    curve key's bits), columns (those with a pattern bit, lowest bit first)}. `key_bits` is the
    width of `key_sql` (a BIGINT of at most that many low bits), none where it is not a curve key. -#}
{% macro _null_pattern_key(key_sql, key_bits, columns, boundaries, num_files) %}
    {%- if key_sql is none or key_bits is none or num_files < 2 -%}{{ return(none) }}{%- endif -%}
    {%- set nullable = [] -%}
    {%- for col in columns if boundaries['columns'][col]['null_fraction'] * num_files >= 0.5 -%}
        {%- do nullable.append(col) -%}
    {%- endfor -%}
    {%- if not nullable or key_bits + (nullable | length) > 63 -%}{{ return(none) }}{%- endif -%}
    {%- set bits = [] -%}
    {%- for col in nullable -%}
        {%- do bits.append('case when ' ~ spark_clustering._quoted_columns([col]) ~ ' is null then ' ~ 2 ** loop.index0 ~ 'L else 0L end') -%}
    {%- endfor -%}
    {{ return({'key_sql': '(shiftleft(' ~ bits | join(' | ') ~ ', ' ~ key_bits ~ ') | ' ~ key_sql ~ ')',
               'shift': key_bits, 'columns': nullable}) }}
{% endmacro %}


{#- The width in bits of an `auto` layout's key (_layout_key), none for a k-d tree (its files are
    its leaves, whatever the key). -#}
{% macro _layout_key_bits(spec, layout) %}
    {%- if spec.curve == 'kdtree' -%}{{ return(none) }}{%- endif -%}
    {%- set curve = layout.bits * (spec.columns | length) -%}
    {%- if spec.curve != 'slabs' -%}{{ return(curve) }}{%- endif -%}
    {{ return(spark_clustering._key_bits(spec.slabs - 1) + curve) }}
{% endmacro %}


{#- Where a write of `num_files` files cuts a key with a NULL pattern, from the sampled keys per
    pattern (`counts`: [[pattern, keys]] ascending): every pattern of at least a quarter of a file's
    share of the keys starts a run of files at its first key (a smaller one joins the run before it),
    each run takes files by its share of the keys (at least one), and inside a run the files are cut
    at equal shares. Returns {starts: the runs' first keys but the first's, positions: the 1-based
    ranks in the sorted sampled keys of the cuts inside runs} or none when there is one run. -#}
{% macro _null_pattern_runs(counts, shift, num_files) %}
    {%- set ns = namespace(total=0) -%}
    {%- for c in counts -%}{%- set ns.total = ns.total + c[1] -%}{%- endfor -%}
    {%- if ns.total == 0 -%}{{ return(none) }}{%- endif -%}
    {%- set runs = [] -%}
    {%- set ns.seen = 0 -%}
    {%- for c in counts -%}
        {%- if not runs or c[1] >= 0.25 * ns.total / num_files -%}
            {%- do runs.append({'pattern': c[0], 'start': ns.seen, 'keys': c[1]}) -%}
        {%- else -%}
            {%- do runs[-1].update({'keys': runs[-1]['keys'] + c[1]}) -%}
        {%- endif -%}
        {%- set ns.seen = ns.seen + c[1] -%}
    {%- endfor -%}
    {%- if runs | length < 2 or runs | length > num_files -%}{{ return(none) }}{%- endif -%}
    {#- files by share: the floor (at least 1), then the largest remainders; taken back from the
        runs with the most files where the floors of 1 overshoot -#}
    {%- set ns.given = 0 -%}
    {%- for run in runs -%}
        {%- set share = num_files * run['keys'] / ns.total -%}
        {%- do run.update({'files': [share | int, 1] | max, 'rest': share - ([share | int, 1] | max)}) -%}
        {%- set ns.given = ns.given + run['files'] -%}
    {%- endfor -%}
    {%- for _ in range(num_files) if ns.given < num_files -%}
        {%- set run = (runs | sort(attribute='rest', reverse=true))[0] -%}
        {%- do run.update({'files': run['files'] + 1, 'rest': run['rest'] - 1}) -%}
        {%- set ns.given = ns.given + 1 -%}
    {%- endfor -%}
    {%- for _ in range(num_files) if ns.given > num_files -%}
        {%- set run = (runs | sort(attribute='files', reverse=true))[0] -%}
        {%- do run.update({'files': run['files'] - 1}) -%}
        {%- set ns.given = ns.given - 1 -%}
    {%- endfor -%}
    {%- set starts = [] -%}
    {%- set positions = [] -%}
    {%- for run in runs -%}
        {%- if not loop.first -%}{%- do starts.append(run['pattern'] * 2 ** shift) -%}{%- endif -%}
        {%- for j in range(1, run['files']) -%}
            {%- do positions.append(run['start'] + ((j * run['keys'] + run['files'] - 1) // run['files'])) -%}
        {%- endfor -%}
    {%- endfor -%}
    {{ return({'starts': starts, 'positions': positions, 'runs': runs | length}) }}
{% endmacro %}
