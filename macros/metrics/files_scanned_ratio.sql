{#- How many files a workload of box predicates reads when files are skipped on min/max.
    workload: list of boxes {column: [lo, hi], ...}; bounds inclusive, null = open end, compared in
    the column's type (numbers, strings, dates/timestamps as strings). Per box: scanned_files
    (files whose [min, max] intersect the box on every listed column; a file whose column is all
    NULL never matches), total_files, matching_rows (rows of the table in the box), ideal_files =
    ceil(matching_rows / (total_rows / total_files)), ratio = scanned / total and
    scanned_over_ideal = max(scanned, 1) / max(ideal, 1); plus mean_ratio and
    mean_scanned_over_ideal over the boxes. workload none: the model's `cluster_workload`.
    raise_errors=false returns a mistake (a bad box, no such column, a view, a bound that does not
    cast) as {"relation", "error": text} instead of failing. Returns a dict ({} while dbt compiles
    or generates docs); under `dbt run-operation files_scanned_ratio` also prints it as
    `files_scanned_ratio: {...}`. -#}
{% macro files_scanned_ratio(relation, workload=none, raise_errors=true) %}
    {#- no workload: the model's `cluster_workload` (config or meta), looked up when measuring -#}
    {%- if workload is none -%}
        {%- if not execute or (relation is string and not spark_clustering._measure_now()) -%}{{ return({}) }}{%- endif -%}
        {%- set relation = spark_clustering._resolve_relation(relation, 'files_scanned_ratio') -%}
        {%- set declared = spark_clustering._setting_of(relation, 'cluster_workload') -%}
        {%- set workload = spark_clustering._resolve_workload(declared, relation) -%}
        {%- if workload is none and declared is string -%}
            {{ exceptions.raise_compiler_error("files_scanned_ratio: " ~ relation ~ " has cluster_workload: " ~ declared
                ~ " and no scans of it were recorded yet (or the Spark extension is not loaded); pass the boxes, "
                ~ "e.g. workload=[{'event_time': ['2024-01-01', '2024-01-31']}].") }}
        {%- endif -%}
        {%- if workload is none -%}
            {%- set msg -%}
                files_scanned_ratio: no `workload` given and {{ relation }} is not a model with a `cluster_workload` config (or meta key); pass the boxes, e.g. workload=[{'event_time': ['2024-01-01', '2024-01-31']}].
            {%- endset -%}
            {{ exceptions.raise_compiler_error(msg | trim) }}
        {%- endif -%}
    {%- endif -%}
    {%- set problem = spark_clustering._workload_problem(workload, relation) -%}
    {%- if problem and raise_errors -%}{{ exceptions.raise_compiler_error(problem) }}{%- endif -%}
    {#- a bad workload fails at compile time too; the table is measured only when dbt runs it -#}
    {%- if not spark_clustering._measure_now() -%}
        {{ return({}) }}
    {%- endif -%}
    {%- set relation = spark_clustering._resolve_relation(relation, 'files_scanned_ratio') -%}
    {%- if problem -%}{{ return({"relation": relation | string, "error": problem}) }}{%- endif -%}
    {%- set boxes = [workload] if workload is mapping else workload | list -%}
    {%- set column_types = spark_clustering._column_types(relation) -%}
    {%- set workload_columns = [] -%}
    {%- for box in boxes -%}
        {%- for column_name in box if column_name not in workload_columns -%}
            {%- do workload_columns.append(column_name) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- set problem = spark_clustering._file_source_problem(relation, 'files_scanned_ratio')
                      or spark_clustering._missing_columns_problem(workload_columns, column_types, 'files_scanned_ratio', 'workload', relation) -%}
    {%- if problem -%}
        {%- if raise_errors -%}{{ exceptions.raise_compiler_error(problem) }}{%- endif -%}
        {{ return({"relation": relation | string, "error": problem}) }}
    {%- endif -%}

    {#- one statement, two scans: per-file stats (aggregated over files) x rows in each box -#}
    {%- set file_conditions = [] -%}
    {%- set row_conditions = [] -%}
    {%- set bound_checks = [] -%}
    {%- for box in boxes -%}
        {%- set conditions = spark_clustering._box_conditions(box, column_types, 'files_scanned_ratio') -%}
        {%- do file_conditions.append(conditions.file) -%}
        {%- do row_conditions.append(conditions.row) -%}
        {%- do bound_checks.extend(conditions.checks) -%}
    {%- endfor -%}
    {%- set sql -%}
with file_stats as (
    {{ spark_clustering.file_stats(relation, workload_columns) }}
),

files as (
    select
        count(*) as total_files,
        coalesce(sum(row_count), 0) as total_rows
        {%- for condition in file_conditions %},
        coalesce(sum(case when {{ condition }} then 1 else 0 end), 0) as scanned_files_{{ loop.index0 }}
        {%- endfor %}
    from file_stats
),

matching as (
    select
        {%- for condition in row_conditions %}
        coalesce(sum(case when {{ condition }} then 1 else 0 end), 0) as matching_rows_{{ loop.index0 }}
        {%- if not loop.last %},{% endif %}
        {%- endfor %}
    from {{ relation }}
)

select
    files.*,
    matching.*
    {%- for check in bound_checks %},
    {{ check.sql }} as invalid_bound_{{ loop.index0 }}
    {%- endfor %}
from files cross join matching
    {%- endset -%}
    {%- set row = run_query(sql).rows[0] -%}
    {%- set box_count = boxes | length -%}
    {%- for check in bound_checks -%}
        {%- if row[2 + 2 * box_count + loop.index0] -%}
            {%- set problem = "files_scanned_ratio: in argument `workload`, box " ~ check.box ~ " bound " ~ check.value
                ~ " of column '" ~ check.column ~ "' does not cast to its type " ~ check.type ~ " (relation "
                ~ relation ~ "); write it as a valid " ~ check.type ~ " literal." -%}
            {%- if raise_errors -%}{{ exceptions.raise_compiler_error(problem) }}{%- endif -%}
            {{ return({"relation": relation | string, "error": problem}) }}
        {%- endif -%}
    {%- endfor -%}

    {%- set total_files = row[0] | int -%}
    {%- set total_rows = row[1] | int -%}
    {%- set results = [] -%}
    {%- set sums = namespace(ratio=0.0, over_ideal=0.0) -%}
    {%- for box in boxes -%}
        {%- set scanned = row[2 + loop.index0] | int -%}
        {%- set matching_rows = row[2 + box_count + loop.index0] | int -%}
        {#- ceil(matching / (total_rows / total_files)) in integers -#}
        {%- set ideal = ((matching_rows * total_files + total_rows - 1) // total_rows) if total_rows > 0 else 0 -%}
        {%- set ratio = (scanned / total_files) if total_files > 0 else 0.0 -%}
        {%- set over_ideal = ([scanned, 1] | max) / ([ideal, 1] | max) -%}
        {%- set sums.ratio = sums.ratio + ratio -%}
        {%- set sums.over_ideal = sums.over_ideal + over_ideal -%}
        {%- set box_json = {} -%}
        {%- for column_name, bounds in box.items() -%}
            {%- do box_json.update({column_name: [spark_clustering._json_safe(bounds[0]), spark_clustering._json_safe(bounds[1])]}) -%}
        {%- endfor -%}
        {%- do results.append({
            "box": box_json, "scanned_files": scanned, "total_files": total_files,
            "matching_rows": matching_rows, "ideal_files": ideal,
            "ratio": spark_clustering._rounded_average(scanned, total_files),
            "scanned_over_ideal": spark_clustering._rounded_average([scanned, 1] | max, [ideal, 1] | max),
        }) -%}
    {%- endfor -%}
    {%- set result = {
        "relation": relation | string, "total_files": total_files, "total_rows": total_rows,
        "boxes": results, "mean_ratio": spark_clustering._rounded_average(sums.ratio, box_count),
        "mean_scanned_over_ideal": spark_clustering._rounded_average(sums.over_ideal, box_count),
    } -%}
    {%- do spark_clustering._print_if_run_operation('files_scanned_ratio', result) -%}
    {{ return(result) }}
{% endmacro %}

