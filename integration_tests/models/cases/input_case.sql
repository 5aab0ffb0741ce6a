-- A model for the user-input tests: its whole config from the var input_case_config (any key, any
-- value type, as a user might write it: cluster_by=5, cluster_validate='false', a post_hook), its
-- rows from the table named by the var input_case_source.
{%- set case_config = {'materialized': 'clustered_table', 'alias': 'input_case'} -%}
{%- do case_config.update(var('input_case_config', {})) -%}
{{ config(**case_config) }}

select * from {{ var('input_case_source', 'input_case_source') }}
