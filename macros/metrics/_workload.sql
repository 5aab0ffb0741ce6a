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
