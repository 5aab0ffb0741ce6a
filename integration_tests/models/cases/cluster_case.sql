-- A configurable clustered model for the tests: source table and every clustering config from vars.
{{ config(
    materialized='clustered_table',
    cluster_by=var('case_cluster_by', ['a', 'b']),
    cluster_method=var('case_method', 'hilbert'),
    cluster_ranges=var('case_ranges', 1000),
    cluster_target_file_rows=var('case_file_rows', 1000000),
    cluster_num_files=var('case_num_files', none),
    cluster_target_file_bytes=var('case_file_bytes', none),
    file_format=var('case_format', 'parquet'),
    partition_by=var('case_partition_by', none),
    cluster_validate=var('case_validate', none),
    cluster_swap=var('case_swap', none),
    alias=var('case_alias', 'cluster_case'),
    location_root=var('case_location_root', none),
    cluster_file_stats=var('case_file_stats', none),
    cluster_workload=var('case_workload', none),
    recluster=var('case_recluster', none),
    tblproperties=var('case_tblproperties', none),
) }}

select * from {{ var('case_source', 'case_source') }}
