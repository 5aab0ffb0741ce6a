{#- SQL expression of the range id of `value_sql` against `boundaries_sql` (an ARRAY sorted
    ascending by Spark's ordering, duplicates allowed): 0 when the value is NULL, else
    1 + the number of boundaries <= value (1 .. size + 1). A NULL array or a NULL element fails the
    query, as the native function does. `backend` defaults to udf_backend(). -#}
{% macro range_id(value_sql, boundaries_sql, backend=none) %}
    {{ return(adapter.dispatch('range_id', 'spark_clustering')(value_sql, boundaries_sql, backend)) }}
{% endmacro %}

{% macro spark__range_id(value_sql, boundaries_sql, backend) %}
    {%- set backend = spark_clustering._curve_backend('range_id', backend) -%}
    {%- for arg, sql in [('value_sql', value_sql), ('boundaries_sql', boundaries_sql)] -%}
        {%- if sql is not string or sql | trim == '' -%}
            {{ exceptions.raise_compiler_error(
                "spark_clustering.range_id: argument '" ~ arg ~ "' must be a SQL expression string, but got "
                ~ (sql | string | tojson) ~ "; e.g. spark_clustering.range_id('price', 'array(10.0D, 20.0D)')") }}
        {%- endif -%}
    {%- endfor -%}
    {%- if backend in ['native', 'python'] -%}
        {{ return('range_id(' ~ value_sql ~ ', ' ~ boundaries_sql ~ ')') }}
    {%- endif -%}
    {%- set v = '(' ~ value_sql ~ ')' -%}
    {%- set b = '(' ~ boundaries_sql ~ ')' -%}
    {#- Lambda variables shadow columns inside the lambda, where the value is read: their names must
        not occur in the value's SQL (a column named __sc_r). -#}
    {%- set ns = namespace(suffix='') -%}
    {%- for _ in range(8) -%}
        {%- if ('__sc_r' ~ ns.suffix) in (value_sql | lower) or ('__sc_i' ~ ns.suffix) in (value_sql | lower) -%}
            {%- set ns.suffix = ns.suffix ~ '_' -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set r = '__sc_r' ~ ns.suffix -%}
    {%- set i = '__sc_i' ~ ns.suffix -%}
    {%- set mid = 'shiftright(' ~ r ~ '.lo + ' ~ r ~ '.hi, 1)' -%}
    {%- set sql -%}
        case
            when {{ b }} is null then raise_error('range_id: the boundaries array is NULL; pass a non-NULL ARRAY of sorted boundaries (an empty array() puts every non-NULL value in range 1)')
            {#- For a literal array the optimizer folds this test away; otherwise it is one O(size) pass per row, like the native check. #}
            when size(array_compact({{ b }})) < size({{ b }}) then raise_error(concat('range_id: boundaries[', cast(array_position(transform({{ b }}, __sc_e -> __sc_e is null), true) - 1 as string), '] (0-based) is NULL; boundaries must not contain NULLs (drop NULLs when computing the boundaries, NULL values get range 0 anyway)'))
            when {{ v }} is null then 0
            {#- Upper-bound binary search on [lo, hi): bit_length(size) halvings always suffice; finished steps keep the state. #}
            else 1 + aggregate(
                sequence(1, length(bin(size({{ b }})))),
                named_struct('lo', 0, 'hi', size({{ b }})),
                ({{ r }}, {{ i }}) -> if({{ r }}.lo < {{ r }}.hi,
                    if({{ b }}[{{ mid }}] <= {{ v }},
                        named_struct('lo', {{ mid }} + 1, 'hi', {{ r }}.hi),
                        named_struct('lo', {{ r }}.lo, 'hi', {{ mid }})),
                    {{ r }}),
                {{ r }} -> {{ r }}.lo)
        end
    {%- endset -%}
    {{ return(sql) }}
{% endmacro %}

{% macro default__range_id(value_sql, boundaries_sql, backend) %}
    {{ spark_clustering._unsupported_adapter('range_id', 'emits Spark SQL higher-order functions or the native range_id') }}
{% endmacro %}
