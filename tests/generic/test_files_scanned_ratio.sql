{#- Fails with one row when the workload's mean files-scanned ratio is over max_mean_ratio.
    workload: list of boxes {column: [lo, hi]} as for the files_scanned_ratio macro; default: the
    model's `cluster_workload` config (the one the audit model measures). Measured when
    the test runs, so the failing row (and the log line) carry the measured numbers. -#}
{% test files_scanned_ratio(model, workload=none, max_mean_ratio=none) %}
    {%- if max_mean_ratio is none -%}
        {{ exceptions.raise_compiler_error(
            "files_scanned_ratio test on " ~ model ~ ": give max_mean_ratio (the largest acceptable mean "
            ~ "fraction of files a workload box reads, 0..1), e.g. "
            ~ "data_tests: [{spark_clustering.files_scanned_ratio: {workload: [{a: [0, 10]}], max_mean_ratio: 0.25}}]."
        ) }}
    {%- endif -%}
    {%- if workload is none and execute -%}
        {%- set workload = spark_clustering._model_config_of(model, 'cluster_workload') -%}
    {%- endif -%}
    {%- if workload is not none or execute -%}
        {%- do spark_clustering._workload_boxes(workload, model) -%}
    {%- endif -%}
    {#- measured when the test runs, not when it compiles: `dbt compile` / `docs generate` on a fresh
        checkout must not need the table -#}
    {%- if spark_clustering._measure_now() -%}
        {%- set info = spark_clustering.files_scanned_ratio(model, workload) -%}
        {%- if info.mean_ratio > max_mean_ratio -%}
            {{ log("files_scanned_ratio: " ~ model ~ ": mean_ratio " ~ info.mean_ratio ~ " (max_mean_ratio "
                ~ max_mean_ratio ~ "), mean_scanned_over_ideal " ~ info.mean_scanned_over_ideal
                ~ " over " ~ info.boxes | length ~ " boxes", info=true) }}
        {%- endif -%}
select mean_ratio, max_mean_ratio, mean_scanned_over_ideal, box_count, total_files
from values
    (
        cast({{ info.mean_ratio }} as double),
        cast({{ max_mean_ratio }} as double),
        cast({{ info.mean_scanned_over_ideal }} as double),
        cast({{ info.boxes | length }} as bigint),
        cast({{ info.total_files }} as bigint)
    )
    as measured (mean_ratio, max_mean_ratio, mean_scanned_over_ideal, box_count, total_files)
where mean_ratio > max_mean_ratio
    {%- else -%}
{#- not measured (parsing, compiling): same columns, no rows -#}
select
    cast(null as double) as mean_ratio,
    cast(null as double) as max_mean_ratio,
    cast(null as double) as mean_scanned_over_ideal,
    cast(null as bigint) as box_count,
    cast(null as bigint) as total_files
where false
    {%- endif -%}
{% endtest %}
