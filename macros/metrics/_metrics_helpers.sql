{#- Private helpers shared by file_stats, clustering_information, files_scanned_ratio and the
    generic tests. Not part of the package's API. -#}

{#- `columns` as a non-empty list of names (one name is accepted), or a compiler error naming
    the macro that got it. -#}
{% macro _as_column_list(columns, macro_name, relation) %}
    {%- set problem = spark_clustering._column_list_problem(columns, macro_name, relation) -%}
    {%- if problem -%}{{ exceptions.raise_compiler_error(problem) }}{%- endif -%}
    {{ return([columns] if columns is string else columns | list) }}
{% endmacro %}


{#- The error text _as_column_list raises, or none: for callers that report instead of failing
    (the audit model goes on with the next table). -#}
{% macro _column_list_problem(columns, macro_name, relation) %}
    {%- if columns is string -%}
        {%- set column_list = [columns] -%}
    {%- elif columns is iterable and columns is not mapping -%}
        {%- set column_list = columns | list -%}
    {%- else -%}
        {%- set column_list = [] -%}
    {%- endif -%}
    {%- if column_list | length == 0 or (column_list | reject('string') | list | length) > 0 -%}
        {{ return(macro_name ~ ": argument `columns` must be a column name or a non-empty list of column names "
            ~ "(relation " ~ relation ~ ", got " ~ columns ~ "); pass e.g. columns=['event_time', 'device_id'].") }}
    {%- endif -%}
    {{ return(none) }}
{% endmacro %}


{#- A Relation from a Relation or from a string "table", "schema.table" or "database.schema.table"
    (looked up in the warehouse; a compiler error when it does not exist). -#}
{% macro _resolve_relation(relation, macro_name) %}
    {%- if relation is not string -%}
        {%- if relation is none or relation.identifier is not defined -%}
            {{ exceptions.raise_compiler_error(
                macro_name ~ ": argument `relation` must be a Relation (ref('my_model')) or a string "
                ~ "'schema.table', got " ~ relation ~ ". A generic test with a `where` config passes a "
                ~ "subquery, which has no data files: remove `where` from this test."
            ) }}
        {%- endif -%}
        {{ return(relation) }}
    {%- endif -%}
    {%- set parts = (relation | replace('`', '') | trim).split('.') -%}
    {%- if parts | length == 1 -%}
        {%- set found = adapter.get_relation(database=none, schema=target.schema, identifier=parts[0]) -%}
    {%- elif parts | length == 2 -%}
        {%- set found = adapter.get_relation(database=none, schema=parts[0], identifier=parts[1]) -%}
    {%- elif parts | length == 3 -%}
        {%- set found = adapter.get_relation(database=parts[0], schema=parts[1], identifier=parts[2]) -%}
    {%- else -%}
        {%- set found = none -%}
    {%- endif -%}
    {%- if found is none -%}
        {{ exceptions.raise_compiler_error(
            macro_name ~ ": argument `relation` '" ~ relation ~ "' does not name an existing table (looked up as "
            ~ "schema.table, schema defaulting to the target schema '" ~ target.schema ~ "'); build the model "
            ~ "first or pass the right 'schema.table'."
        ) }}
    {%- endif -%}
    {{ return(found) }}
{% endmacro %}


{#- A config value (e.g. `cluster_by`, `cluster_workload`) of the model/seed/snapshot whose relation
    this is, or none. Also read from `meta`, where dbt >= 1.10 wants custom keys set in YAML. -#}
{% macro _model_config_of(relation, key) %}
    {%- set node = spark_clustering._model_node_of(relation) -%}
    {{ return(spark_clustering._node_config(node, key) if node is not none else none) }}
{% endmacro %}


{#- The model/seed/snapshot node whose relation this is, or none. -#}
{% macro _model_node_of(relation) %}
    {%- for node in graph.nodes.values() if node.resource_type in ['model', 'seed', 'snapshot'] -%}
        {%- set same_schema = (node.schema or '') | lower == (relation.schema or '') | lower -%}
        {%- set same_name = (node.alias or node.name) | lower == (relation.identifier or '') | lower -%}
        {#- Spark relations often carry no database; compare it only when both sides have one -#}
        {%- set same_database = node.database is none or relation.database is none
            or node.database | lower == relation.database | lower -%}
        {%- if same_schema and same_name and same_database -%}
            {{ return(node) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(none) }}
{% endmacro %}


{% macro _node_config(node, key) %}
    {%- set value = node.config.get(key) -%}
    {%- if value is none -%}{%- set value = (node.config.get('meta') or {}).get(key) -%}{%- endif -%}
    {{ return(value) }}
{% endmacro %}


{#- The `cluster_by` config (a list) of the model whose relation this is, or none. -#}
{% macro _cluster_by_of(relation) %}
    {%- set cluster_by = spark_clustering._model_config_of(relation, 'cluster_by') -%}
    {{ return([cluster_by] if cluster_by is string else cluster_by) }}
{% endmacro %}


{#- {lower-case column name: Spark data type} of a relation. -#}
{% macro _column_types(relation) %}
    {%- set types = {} -%}
    {%- for column in adapter.get_columns_in_relation(relation) -%}
        {%- do types.update({column.name | lower: column.data_type}) -%}
    {%- endfor -%}
    {{ return(types) }}
{% endmacro %}


{#- Every name in column_list must be a column of the relation (Spark names are case-insensitive). -#}
{% macro _check_columns_exist(column_list, column_types, macro_name, argument_name, relation) %}
    {%- set problem = spark_clustering._missing_columns_problem(column_list, column_types, macro_name, argument_name, relation) -%}
    {%- if problem -%}{{ exceptions.raise_compiler_error(problem) }}{%- endif -%}
{% endmacro %}


{#- The error text _check_columns_exist raises, or none. -#}
{% macro _missing_columns_problem(column_list, column_types, macro_name, argument_name, relation) %}
    {%- for column_name in column_list if column_name | lower not in column_types -%}
        {{ return(macro_name ~ ": column '" ~ column_name ~ "' in argument `" ~ argument_name ~ "` is not a column of "
            ~ relation ~ " (its columns: " ~ (column_types.keys() | list | join(', ')) ~ "); fix the name.") }}
    {%- endfor -%}
    {{ return(none) }}
{% endmacro %}


{#- Per-file statistics read the hidden file-metadata column of a table's files: a view has none
    (Spark would answer UNRESOLVED_COLUMN). The error text, or none. -#}
{% macro _file_source_problem(relation, macro_name) %}
    {%- if relation.is_view -%}
        {{ return(macro_name ~ ": " ~ relation ~ " is a view; per-file statistics need the data files of a table "
            ~ "(Spark's _metadata column, which a view does not expose): measure the parquet/orc table the view reads, "
            ~ "or materialize the model as a table.") }}
    {%- endif -%}
    {{ return(none) }}
{% endmacro %}


{#- Whether tests and the audit model may measure tables now: while dbt runs, tests, builds or
    shows, not while it compiles or generates docs (both set `execute` too, and on a fresh
    checkout no table exists yet). -#}
{% macro _measure_now() %}
    {{ return(execute and (flags.WHICH | string) in ['run', 'test', 'build', 'retry', 'show']) }}
{% endmacro %}


{#- total / count rounded to `digits` decimals, half away from zero, as Databend rounds its
    averages ((10000.0 * sum / count).round() / 10000.0 in Rust). Jinja's round is Python's, half
    to even: 37 / 32 = 1.15625 would give 1.1562 where Databend reports 1.1563. 0.0 when count is 0. -#}
{% macro _rounded_average(total, count=1, digits=4) %}
    {%- if not count -%}{{ return(0.0) }}{%- endif -%}
    {%- set scale = 10 ** digits -%}
    {%- set scaled = scale * 1.0 * total / count -%}
    {%- set magnitude = scaled | abs -%}
    {%- set whole = magnitude | round(0, 'floor') -%}
    {%- if magnitude - whole >= 0.5 -%}{%- set whole = whole + 1 -%}{%- endif -%}
    {{ return((whole if scaled >= 0 else -whole) / scale) }}
{% endmacro %}


{#- A Python value from YAML/JSON/Jinja as a Spark SQL literal. Dates become ISO strings. -#}
{% macro _sql_literal(value, macro_name) %}
    {%- if value is none -%}
        {{ return('null') }}
    {%- elif value is boolean -%}
        {{ return('true' if value else 'false') }}
    {%- elif value is number -%}
        {{ return(value | string) }}
    {%- elif value is string -%}
        {{ return("'" ~ value | replace('\\', '\\\\') | replace("'", "\\'") ~ "'") }}
    {%- elif value.isoformat is defined -%}
        {{ return("'" ~ value.isoformat() ~ "'") }}
    {%- else -%}
        {{ exceptions.raise_compiler_error(
            macro_name ~ ": bound " ~ value ~ " is not a number, string, date or null; write it as one "
            ~ "of those (dates and timestamps as 'YYYY-MM-DD[ HH:MM:SS]' strings)."
        ) }}
    {%- endif -%}
{% endmacro %}


{#- A value as JSON-safe Python: dates/timestamps as ISO strings, decimals as floats. -#}
{% macro _json_safe(value) %}
    {%- if value is none or value is boolean or value is string -%}
        {{ return(value) }}
    {%- elif value is number -%}
        {{ return(value if value is integer or value is float else value | float) }}
    {%- elif value.isoformat is defined -%}
        {{ return(value.isoformat()) }}
    {%- else -%}
        {{ return(value | string) }}
    {%- endif -%}
{% endmacro %}


{#- Under `dbt run-operation <macro_name>`, print the result as one JSON line
    `<macro_name>: {...}`; called from anywhere else (models, tests, other macros) it stays quiet. -#}
{% macro _print_if_run_operation(macro_name, result) %}
    {%- set invoked = (invocation_args_dict.get('macro') or '') | string -%}
    {%- if invocation_args_dict.get('which') == 'run-operation' and invoked.split('.')[-1] == macro_name -%}
        {{ print(macro_name ~ ': ' ~ tojson(result)) }}
    {%- endif -%}
{% endmacro %}


{#- The workload as a list of {column: [lo, hi]} (validated), or a compiler error. -#}
{% macro _workload_boxes(workload, relation) %}
    {%- set problem = spark_clustering._workload_problem(workload, relation) -%}
    {%- if problem -%}{{ exceptions.raise_compiler_error(problem) }}{%- endif -%}
    {{ return([workload] if workload is mapping else workload | list) }}
{% endmacro %}


{#- The error text _workload_boxes raises, or none. -#}
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
