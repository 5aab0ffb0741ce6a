{#- Private helpers of the curve keys: argument checks, the SQL fallback's building blocks, and how
    many bits a column gets. -#}

{#- The backend to emit for: the given one (checked) or udf_backend(). -#}
{% macro _curve_backend(macro_name, backend) %}
    {%- if backend is none -%}
        {{ return(spark_clustering.udf_backend()) }}
    {%- endif -%}
    {%- if backend not in ['native', 'python', 'sql'] -%}
        {{ exceptions.raise_compiler_error(
            'spark_clustering.' ~ macro_name ~ ": argument 'backend' must be one of native, python, sql (or none for "
            ~ 'spark_clustering.udf_backend()), but got ' ~ (backend | string | tojson)) }}
    {%- endif -%}
    {{ return(backend) }}
{% endmacro %}

{#- Compile-time checks of bits and ids; returns {'bits': int, 'ids': [sql, ...]}. -#}
{% macro _curve_key_args(macro_name, bits, id_sqls, backend) %}
    {%- set example = 'spark_clustering.' ~ macro_name ~ "(10, ['id_a', 'id_b'])" -%}
    {%- if bits is string and modules.re.match('^\s*[0-9]+\s*$', bits) -%}
        {%- set bits = bits | trim | int -%}
    {%- endif -%}
    {%- if bits is not number or bits is sameas true or bits is sameas false
           or bits != bits | int or bits < 1 or bits > 31 -%}
        {{ exceptions.raise_compiler_error(
            'spark_clustering.' ~ macro_name ~ ": argument 'bits' must be an integer between 1 and 31, but got "
            ~ (bits | string | tojson) ~ '; pass the bits per id, e.g. ' ~ example) }}
    {%- endif -%}
    {%- if id_sqls is string or id_sqls is mapping or id_sqls is not iterable -%}
        {{ exceptions.raise_compiler_error(
            'spark_clustering.' ~ macro_name ~ ": argument 'id_sqls' must be a list of SQL expressions, but got "
            ~ (id_sqls | string | tojson) ~ '; wrap a single id in a list, e.g. ' ~ example) }}
    {%- endif -%}
    {%- set ids = id_sqls | list -%}
    {%- if ids | length < 1 or ids | length > 32 -%}
        {{ exceptions.raise_compiler_error(
            'spark_clustering.' ~ macro_name ~ ": argument 'id_sqls' must hold 1 to 32 id expressions, but got "
            ~ ids | length ~ '; cluster on 1 to 32 columns') }}
    {%- endif -%}
    {%- set bits = bits | int -%}
    {%- if backend == 'sql' and ids | length * bits > 63 -%}
        {{ exceptions.raise_compiler_error(
            'spark_clustering.' ~ macro_name ~ ': the SQL fallback builds BIGINT keys only, so ids * bits must be <= 63, but got '
            ~ ids | length ~ ' ids * ' ~ bits ~ ' bits = ' ~ ids | length * bits
            ~ '; lower bits to ' ~ (63 // (ids | length)) ~ ' or less, or enable the native functions '
            ~ '(spark.jars=<path to spark-clustering-udfs_<spark line>_<scala>.jar> and '
            ~ 'spark.sql.extensions=org.apache.spark.sql.sparkclustering.SparkClusteringExtensions)') }}
    {%- endif -%}
    {{ return({'bits': bits, 'ids': ids}) }}
{% endmacro %}

{#- Evaluate each id once. Column names and integer literals are used as they are (codegen keeps
    the key straight-line bit arithmetic); any other expression goes, cast to BIGINT, into an array
    bound to the lambda variable __sc_ids, so it is not repeated `bits` times in the SQL text.
    Returns {'xs': [per-id SQL], 'open': prefix, 'close': suffix} to wrap around the key. -#}
{% macro _curve_bind_ids(ids, always=false) %}
    {%- set name = '(`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)' -%}
    {%- set simple = [] -%}
    {%- for sql in ids -%}
        {%- set text = sql | string | trim -%}
        {%- if modules.re.match('^' ~ name ~ '(\.' ~ name ~ ')*$', text) or modules.re.match('^[0-9]+L?$', text) -%}
            {%- do simple.append(text) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if simple | length == ids | length and not always -%}
        {{ return({'xs': simple, 'open': '', 'close': ''}) }}
    {%- endif -%}
    {%- set cast_ids = [] -%}
    {%- set xs = [] -%}
    {%- for sql in ids -%}
        {%- do cast_ids.append('cast(' ~ sql ~ ' as bigint)') -%}
        {%- do xs.append('__sc_ids[' ~ loop.index0 ~ ']') -%}
    {%- endfor -%}
    {{ return({'xs': xs, 'open': 'transform(array(array(' ~ cast_ids | join(', ') ~ ')), __sc_ids -> ', 'close': ')[0]'}) }}
{% endmacro %}

{#- CASE that is NULL when any id is NULL, fails like the native functions (same text) on the first
    id outside [0, 2^bits), and otherwise evaluates `key_sql`. -#}
{% macro _curve_checked(function, bits, xs, key_sql) %}
    {%- set top = 2 ** bits - 1 -%}
    {%- set nulls = [] -%}
    {%- for x in xs -%}{%- do nulls.append(x ~ ' is null') -%}{%- endfor -%}
    {%- set sql -%}
        case when {{ nulls | join(' or ') }} then cast(null as bigint)
        {%- for x in xs %}
            when {{ x }} < 0 or {{ x }} > {{ top }} then raise_error(concat('{{ function }}: argument {{ loop.index + 1 }} = ', cast({{ x }} as string), ' is outside [0, {{ top }}] for bits = {{ bits }} (ids must be range_id results and bits must cover the number of ranges)'))
        {%- endfor %}
            else {{ key_sql }}
        end
    {%- endset -%}
    {{ return(sql) }}
{% endmacro %}

{#- Z-order interleave as straight-line bit arithmetic: bit L of xs[i] (0-based i) moves to
    position L*n + (n-1-i), i.e. (x & 2^L) << (L*(n-1) + n-1-i). -#}
{% macro _curve_interleave(bits, xs) %}
    {%- set n = xs | length -%}
    {%- if n == 1 -%}
        {{ return('cast(' ~ xs[0] ~ ' as bigint)') }}
    {%- endif -%}
    {%- set terms = [] -%}
    {%- for level in range(bits - 1, -1, -1) -%}
        {%- for i in range(n) -%}
            {%- set shift = level * (n - 1) + (n - 1 - i) -%}
            {%- set masked = '(cast(' ~ xs[i] ~ ' as bigint) & ' ~ 2 ** level ~ 'L)' -%}
            {%- do terms.append(('shiftleft(' ~ masked ~ ', ' ~ shift ~ ')') if shift > 0 else masked) -%}
        {%- endfor -%}
    {%- endfor -%}
    {{ return('(' ~ terms | join(' | ') ~ ')') }}
{% endmacro %}


{#- Bits per column that hold range ids up to `max_id` (at most 31). -#}
{% macro _key_bits(max_id) %}
    {%- set ns = namespace(bits=1) -%}
    {%- for _ in range(31) if 2 ** ns.bits - 1 < max_id -%}{%- set ns.bits = ns.bits + 1 -%}{%- endfor -%}
    {{ return([ns.bits, 31] | min) }}
{% endmacro %}


{#- Bits per column: enough for the column with the most ranges, at most 31 (ids are ints); the SQL
    backend produces bigint keys only, so there d * bits <= 63 (coarser cells, the raw column
    tie-break still orders rows inside them). -#}
{% macro _key_layout(columns, boundaries, backend) %}
    {%- set ns = namespace(max_id=1) -%}
    {%- for col in columns -%}
        {%- set ns.max_id = [ns.max_id, boundaries['columns'][col]['literals'] | length + 1] | max -%}
    {%- endfor -%}
    {%- set bits = spark_clustering._key_bits(ns.max_id) -%}
    {%- if backend == 'sql' -%}
        {%- set bits = [bits, (63 // (columns | length))] | min -%}
    {%- endif -%}
    {{ return({'bits': bits, 'max_value': 2 ** bits - 1}) }}
{% endmacro %}


{#- Per column of `columns`, the SQL of its id in [0, layout.max_value]: 0 for NULL, the range ids
    stretched over offset .. max_value (see cluster_key). -#}
{% macro _column_ids(columns, boundaries, layout, backend) %}
    {%- set ids = [] -%}
    {%- for col in columns -%}
        {%- set b = boundaries['columns'][col] -%}
        {%- set arr = ('array(' ~ b['literals'] | join(', ') ~ ')') if b['literals'] else ('cast(array() as array<' ~ b['type'] ~ '>)') -%}
        {%- set rid = spark_clustering.range_id(spark_clustering._quoted_columns([col]), arr, backend) -%}
        {#- range ids: 0 for NULL, 1 .. k + 1 for values (k boundaries) -> 0, then offset .. max_value. -#}
        {%- set k = [b['literals'] | length, 1] | max -%}
        {%- set offset = [[(b['null_fraction'] * (layout.max_value + 1)) | round | int, 1] | max, layout.max_value] | min -%}
        {%- do ids.append('cast(case when ' ~ spark_clustering._quoted_columns([col]) ~ ' is null then 0 else ' ~ offset ~ ' + (cast(' ~ rid ~ ' as bigint) - 1) * '
                          ~ (layout.max_value - offset) ~ ' div ' ~ k ~ ' end as int)') -%}
    {%- endfor -%}
    {{ return(ids) }}
{% endmacro %}
