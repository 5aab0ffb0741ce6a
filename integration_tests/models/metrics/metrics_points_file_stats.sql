{{ config(materialized='view') }}

-- file_stats used in a model: one row per data file of metrics_points_clustered.
{{ spark_clustering.file_stats(ref('metrics_points_clustered'), ['a', 'b']) }}
