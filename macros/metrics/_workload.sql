{#- A workload: a list of boxes {column: [lo, hi]} (files_scanned_ratio, the model config
    `cluster_workload`), checked before anything is scanned. -#}

{#- The error text for a workload that is not a non-empty list of {column: [lo, hi]} boxes, or none. -#}
{% macro _workload_problem(workload, relation) %}
    {%- set example = "e.g. workload=[{'event_time': ['2024-01-01', '2024-01-31'], 'device_id': [100, null]}]" -%}
    {%- if workload is mapping -%}
        {%- set workload = [workload] -%}
    {%- endif -%}
    {%- if workload is string or workload is not iterable or (workload | list | length) == 0 -%}
        {{ return("files_scanned_ratio: argument `workload` must be a non-empty list of boxes (relation "
            ~ relation ~ ", got " ~ workload ~ "); " ~ example ~ ".") }}
    {%- endif -%}
    {%- for box in workload -%}
        {%- if box is not mapping -%}
            {{ return("files_scanned_ratio: box " ~ box ~ " in argument `workload` is not a mapping of column to "
                ~ "[lo, hi] (relation " ~ relation ~ "); " ~ example ~ ".") }}
        {%- endif -%}
        {%- for column_name, bounds in box.items()
            if bounds is string or bounds is mapping or bounds is not iterable or (bounds | list | length) != 2 -%}
            {{ return("files_scanned_ratio: box " ~ box ~ " in argument `workload` gives column '" ~ column_name
                ~ "' the bounds " ~ bounds ~ "; give a list [lo, hi] (inclusive, null for an open end) "
                ~ "(relation " ~ relation ~ "); " ~ example ~ ".") }}
        {%- endfor -%}
    {%- endfor -%}
    {{ return(none) }}
{% endmacro %}


{#- A box's conditions: `file`, on a file's `<column>__min` / `<column>__max` (true when the file may
    hold a row of the box), `row`, on the rows, and `checks`, one SQL test per bound that is true when
    the bound does not cast to the column's type. Bounds are cast to the column's type
    (`column_types`: {lower-case name: type}); with `only` (lower-case names) the other columns of
    the box are left out (no statistics to prune them). -#}
{% macro _box_conditions(box, column_types, caller_name, only=none) %}
    {%- set file_terms = [] -%}
    {%- set row_terms = [] -%}
    {%- set checks = [] -%}
    {%- for column_name, bounds in box.items() if only is none or column_name | lower in only -%}
        {%- set quoted = spark_clustering._quoted_columns([column_name]) -%}
        {%- set data_type = column_types[column_name | lower] -%}
        {%- for side, value in [('lo', bounds[0]), ('hi', bounds[1])] if value is not none -%}
            {%- set typed = spark_clustering._typed_literal(value, data_type, caller_name) -%}
            {%- do checks.append({"box": box, "column": column_name, "value": value, "type": data_type,
                                  "sql": typed ~ ' is null'}) -%}
            {%- if side == 'lo' -%}
                {%- do file_terms.append(spark_clustering._quoted_suffixed(column_name, '__max') ~ ' >= ' ~ typed) -%}
                {%- do row_terms.append(quoted ~ ' >= ' ~ typed) -%}
            {%- else -%}
                {%- do file_terms.append(spark_clustering._quoted_suffixed(column_name, '__min') ~ ' <= ' ~ typed) -%}
                {%- do row_terms.append(quoted ~ ' <= ' ~ typed) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- if bounds[0] is none and bounds[1] is none -%}
            {#- both ends open: any non-NULL value matches -#}
            {%- do file_terms.append(spark_clustering._quoted_suffixed(column_name, '__min') ~ ' is not null') -%}
            {%- do row_terms.append(quoted ~ ' is not null') -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return({'file': file_terms | join(' and ') if file_terms else 'true',
               'row': row_terms | join(' and ') if row_terms else 'true', 'checks': checks}) }}
{% endmacro %}


{#- A `cluster_workload` value as boxes: a list as it is; 'observed' (or 'auto'): the boxes the Spark
    extension recorded from the scans of `relation` (observed_workload, see docs/workload_layouts.md),
    each listed in proportion to its queries (the 200 most queried, ~400 entries in all); none when
    nothing was recorded or the extension is not loaded. -#}
{% macro _resolve_workload(workload, relation) %}
    {%- if workload is not string -%}{{ return(workload) }}{%- endif -%}
    {%- if relation is none or not spark_clustering._has_extension_function('observed_workload') -%}{{ return(none) }}{%- endif -%}
    {%- set rows = spark_clustering._call_extension('observed_workload', {'table': relation}, ['box', 'queries'],
                                                    'order by queries desc, box limit 200') -%}
    {%- set ns = namespace(total=0) -%}
    {%- for row in rows -%}{%- set ns.total = ns.total + row.queries | int -%}{%- endfor -%}
    {%- set boxes = [] -%}
    {%- for row in rows -%}
        {%- set box = fromjson(row.box) -%}
        {%- for _ in range([1, (400 * (row.queries | int) / ns.total) | round | int] | max) -%}{%- do boxes.append(box) -%}{%- endfor -%}
    {%- endfor -%}
    {{ return(boxes if boxes else none) }}
{% endmacro %}


{#- The columns of `columns` that some box of `workload` (a list of boxes, or none) filters on, in
    `columns` order (names match case-insensitively). -#}
{% macro _workload_columns(workload, columns) %}
    {%- set box_columns = [] -%}
    {%- for box in workload or [] -%}{%- for col in box -%}{%- do box_columns.append(col | lower) -%}{%- endfor -%}{%- endfor -%}
    {%- set found = [] -%}
    {%- for col in columns if col | lower in box_columns -%}{%- do found.append(col) -%}{%- endfor -%}
    {{ return(found) }}
{% endmacro %}
