{#- Order-independent fingerprint of a relation or query: row count, the sum of 32-bit row hashes
    (cannot overflow a bigint below 2^32 rows) and the xor of 64-bit row hashes. Two inputs with the
    same rows in any order and any file layout give the same three numbers. -#}
{% macro row_checksum(from_sql, column_names) %}
    {{ return(adapter.dispatch('row_checksum', 'spark_clustering')(from_sql, column_names)) }}
{% endmacro %}

{% macro spark__row_checksum(from_sql, column_names) %}
    {%- set rows = run_query('select ' ~ spark_clustering._row_checksum_expressions(column_names) ~ ' from ' ~ from_sql).rows -%}
    {{ return({'row_count': rows[0][0] | int, 'hash_sum': rows[0][1] | int, 'hash_xor': rows[0][2] | int}) }}
{% endmacro %}

{% macro default__row_checksum(from_sql, column_names) %}
    {{ spark_clustering._unsupported_adapter('row_checksum', 'hashes rows with Spark SQL hash() and xxhash64()') }}
{% endmacro %}


{#- The same three expressions, for a query that computes them alongside other aggregates. -#}
{% macro _row_checksum_expressions(column_names) %}
    {%- set row = spark_clustering._row_hashes(column_names) -%}
    {{ return('count(*) as row_count, coalesce(sum(' ~ row.hash ~ '), 0) as hash_sum, coalesce(bit_xor(' ~ row.xxhash ~ '), 0) as hash_xor') }}
{% endmacro %}


{#- The two hashes of one row the checksum sums and xors ({hash, xxhash}: SQL), for every place that
    takes a part of it (a sampling pass's per-task sums, the write's observe_row_checksum), so all
    of them hash a row alike. -#}
{% macro _row_hashes(column_names) %}
    {%- set cols = spark_clustering._quoted_columns(column_names) -%}
    {{ return({'hash': 'cast(hash(' ~ cols ~ ') as bigint)', 'xxhash': 'xxhash64(' ~ cols ~ ')'}) }}
{% endmacro %}
