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
