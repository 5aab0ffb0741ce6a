{#- Fails with one row when the workload's mean files-scanned ratio is over max_mean_ratio.
    workload: list of boxes {column: [lo, hi]} as for the files_scanned_ratio macro; default: the
    model's `cluster_workload` config (the one the audit model measures). Measured when the test
    runs, so the failing row (and the log line) carry the measured numbers. -#}
{% test files_scanned_ratio(model, workload=none, max_mean_ratio=none) %}
    {%- if max_mean_ratio is none -%}
        {%- set msg -%}
            files_scanned_ratio test on {{ model }}: give max_mean_ratio (the largest acceptable mean fraction of files a workload box reads, 0..1), e.g. data_tests: [{spark_clustering.files_scanned_ratio: {workload: [{a: [0, 10]}], max_mean_ratio: 0.25}}].
        {%- endset -%}
        {{ exceptions.raise_compiler_error(msg | trim) }}
    {%- endif -%}
    {#- a bad workload fails when the test compiles; {} until the test runs -#}
    {%- set info = spark_clustering.files_scanned_ratio(model, workload) -%}
    {%- set measured = [] -%}
    {%- if info -%}
        {%- if info.mean_ratio > max_mean_ratio -%}
            {{ log("files_scanned_ratio: " ~ model ~ ": mean_ratio " ~ info.mean_ratio ~ " (max_mean_ratio "
                ~ max_mean_ratio ~ "), mean_scanned_over_ideal " ~ info.mean_scanned_over_ideal
                ~ " over " ~ info.boxes | length ~ " boxes", info=true) }}
        {%- endif -%}
        {%- do measured.append([info.mean_ratio, max_mean_ratio, info.mean_scanned_over_ideal, info.boxes | length, info.total_files]) -%}
    {%- endif -%}
select *
from (
    {{ spark_clustering.typed_values(measured, [
        ['mean_ratio', 'double'], ['max_mean_ratio', 'double'], ['mean_scanned_over_ideal', 'double'],
        ['box_count', 'bigint'], ['total_files', 'bigint']]) }}
) as measured
where mean_ratio > max_mean_ratio
{% endtest %}
