{#- Quantile boundaries of every clustering column in ONE pass over the source (Delta spends a pass
    per column), plus the source's row checksum from the same pass.

    Sample, then cut: a `rand() < fraction` sample of ~sample_rows is collected per column, sorted
    by Spark's own ordering (full strings, NaN last, NULLs dropped) and cut at i/ranges. Repeated
    cuts (a heavy hitter) are kept: range_id then leaves a gap before the value as wide as its share
    of the rows, so the curve gives it room of its own instead of one thin slice. Returns
    {'row_count', 'hash_sum', 'hash_xor', 'columns': {name: {'type', 'literals', 'null_fraction'}}}
    where `literals` are SQL literals of the ascending boundaries. checksum=false leaves the two
    hashes none and reads only the clustering columns. -#}
{% macro range_boundaries(from_sql, columns, all_columns, ranges, sample_fraction, seed=42, checksum=true) %}
    {{ return(adapter.dispatch('range_boundaries', 'spark_clustering')(from_sql, columns, all_columns, ranges, sample_fraction, seed, checksum)) }}
{% endmacro %}

{% macro spark__range_boundaries(from_sql, columns, all_columns, ranges, sample_fraction, seed, checksum) %}
    {%- set sampled = [] -%}
    {%- set cuts = [] -%}
    {#- the sample flag's alias must not be (or shadow) a column of the source -#}
    {%- set in_sample = spark_clustering._unused_column_name('__sc_in_sample', all_columns) -%}
    {%- for col in columns -%}
        {%- set q = spark_clustering._quoted_columns([col.name]) -%}
        {%- set r = ranges[col.name] -%}
        {#- collect_list drops NULLs: NULL gets range id 0 of its own, never a boundary. -#}
        {%- do sampled.append('sort_array(collect_list(' ~ q ~ ') filter (where ' ~ in_sample ~ ')) as s_' ~ loop.index0) -%}
        {#- Cut i of r at the ceil(i * m / r)-th of m sorted sample values. -#}
        {%- do cuts.append(
            'transform(case when size(s_' ~ loop.index0 ~ ') = 0 then array() else transform(sequence(1, ' ~ (r - 1) ~ '), '
            ~ 'i -> element_at(s_' ~ loop.index0 ~ ', cast(ceil(i * size(s_' ~ loop.index0 ~ ') / ' ~ r ~ '.0D) as int))) end, '
            ~ 'x -> ' ~ spark_clustering._sql_literal_expression('x', col.type, col.name) ~ ') as b_' ~ loop.index0
            ~ ', 1 - size(s_' ~ loop.index0 ~ ') / greatest(sample_rows, 1) as null_fraction_' ~ loop.index0) -%}
    {%- endfor -%}
    {%- set sql -%}
        select row_count, hash_sum, hash_xor, {{ cuts | join(', ') }}
        from (
            {#- without the checksum only the clustering columns are read (parquet/orc prune the rest) #}
            select {{ spark_clustering._row_checksum_expressions(all_columns) if checksum
                      else 'count(*) as row_count, null as hash_sum, null as hash_xor' }},
                count_if({{ in_sample }}) as sample_rows, {{ sampled | join(', ') }}
            from (select *, rand({{ seed }}) < {{ sample_fraction }} as {{ in_sample }} from {{ from_sql }})
        )
    {%- endset -%}
    {%- set row = run_query(sql).rows[0] -%}
    {%- set result = {'row_count': row[0] | int, 'hash_sum': (row[1] | int) if checksum else none,
                      'hash_xor': (row[2] | int) if checksum else none, 'columns': {}} -%}
    {%- for col in columns -%}
        {%- set literals = row[3 + 2 * loop.index0] -%}
        {#- Over Thrift an array arrives as JSON text; over the session as a list. -#}
        {%- if literals is string -%}{%- set literals = fromjson(literals) -%}{%- endif -%}
        {%- do result['columns'].update({col.name: {'type': col.type, 'literals': literals | list,
                                                     'null_fraction': row[4 + 2 * loop.index0] | float}}) -%}
    {%- endfor -%}
    {{ return(result) }}
{% endmacro %}


{% macro default__range_boundaries(from_sql, columns, all_columns, ranges, sample_fraction, seed, checksum) %}
    {{ spark_clustering._unsupported_adapter('range_boundaries', 'samples with Spark SQL (rand, collect_list, sort_array, transform)') }}
{% endmacro %}
