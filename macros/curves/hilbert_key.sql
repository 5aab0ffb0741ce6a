{#- SQL expression of the Hilbert key of `id_sqls` (a list of 1..32 SQL expressions giving ids in
    [0, 2^bits)): Skilling's AxesToTranspose of [id_1..id_n], then the Z-order interleave of the
    transposed axes (n = 1: the id itself). BIGINT when n * bits <= 63, else (native / python
    backends only) BINARY of ceil(n*bits/8) big-endian bytes. NULL if any id is NULL; an id outside
    [0, 2^bits) fails the query. `backend` defaults to udf_backend(). The SQL fallback packs the
    ids into one BIGINT and runs Skilling's loops as scalar `aggregate` steps. -#}
{% macro hilbert_key(bits, id_sqls, backend=none) %}
    {{ return(adapter.dispatch('hilbert_key', 'spark_clustering')(bits, id_sqls, backend)) }}
{% endmacro %}

{% macro spark__hilbert_key(bits, id_sqls, backend) %}
    {%- set backend = spark_clustering._curve_backend('hilbert_key', backend) -%}
    {%- set args = spark_clustering._curve_key_args('hilbert_key', bits, id_sqls, backend) -%}
    {%- if backend in ['native', 'python'] -%}
        {{ return('hilbert_key(' ~ args.bits ~ ', ' ~ args.ids | join(', ') ~ ')') }}
    {%- endif -%}
    {%- set bits = args.bits -%}
    {%- set n = args.ids | length -%}
    {%- set bound = spark_clustering._curve_bind_ids(args.ids) -%}
    {%- if n == 1 -%}
        {{ return(bound.open ~ spark_clustering._curve_checked('hilbert_key', bits, bound.xs, 'cast(' ~ bound.xs[0] ~ ' as bigint)') ~ bound.close) }}
    {%- endif -%}
    {#- n * bits <= 63, so the whole id vector X fits one BIGINT: X[i] at bits [i*bits, (i+1)*bits).
        Every loop below then updates a scalar state (no array per step). -#}
    {%- set fields = [] -%}
    {%- for x in bound.xs -%}
        {%- do fields.append('shiftleft(cast(' ~ x ~ ' as bigint), ' ~ loop.index0 * bits ~ ')') -%}
    {%- endfor -%}
    {%- set state = '(' ~ fields | join(' | ') ~ ')' -%}
    {%- if bits > 1 -%}
        {#- Skilling's first loop, one aggregate step k per (Q, i): Q = 2^(bits-1) .. 2, i = 0 .. n-1
            in order, so Q = 2^(bits-1 - k div n) and X[i] sits at shift (k mod n) * bits. If X[i] & Q
            then X[0] ^= Q-1, else t = (X[0] ^ X[i]) & (Q-1) swaps those low bits: X[0] ^= t, X[i] ^= t. -#}
        {%- set q = 'shiftleft(1L, ' ~ (bits - 1) ~ ' - cast(__sc_k div ' ~ n ~ ' as int))' -%}
        {%- set sh = '((__sc_k % ' ~ n ~ ') * ' ~ bits ~ ')' -%}
        {%- set t = '((__sc_s ^ shiftright(__sc_s, ' ~ sh ~ ')) & (' ~ q ~ ' - 1L))' -%}
        {%- set state = 'aggregate(sequence(0, ' ~ ((bits - 1) * n - 1) ~ '), ' ~ state ~ ', (__sc_s, __sc_k) -> '
            ~ 'if((shiftright(__sc_s, ' ~ sh ~ ') & ' ~ q ~ ') != 0L, __sc_s ^ (' ~ q ~ ' - 1L), '
            ~ '__sc_s ^ ' ~ t ~ ' ^ shiftleft(' ~ t ~ ', ' ~ sh ~ ')))' -%}
    {%- endif -%}
    {#- Gray encode X[i] ^= X[i-1] (in order) = prefix XOR over the fields: ceil(log2 n) doublings. -#}
    {%- set ns = namespace(levels=0) -%}
    {%- for _ in range(6) -%}
        {%- if 2 ** ns.levels < n -%}{%- set ns.levels = ns.levels + 1 -%}{%- endif -%}
    {%- endfor -%}
    {%- set full = 2 ** (n * bits) - 1 -%}
    {#- t = XOR of (Q-1) over the bits Q = 2^(bits-1) .. 2 set in G[n-1] = XOR of G[n-1] >> k, k >= 1. -#}
    {%- set top = 'shiftright(__sc_g, ' ~ (n - 1) * bits ~ ')' -%}
    {%- set undo = [] -%}
    {%- for k in range(1, bits) -%}
        {%- do undo.append('shiftright(' ~ top ~ ', ' ~ k ~ ')') -%}
    {%- endfor -%}
    {%- set ns2 = namespace(replicate=0) -%}
    {%- for i in range(n) -%}{%- set ns2.replicate = ns2.replicate + 2 ** (i * bits) -%}{%- endfor -%}
    {#- X[i] ^= t for every field at once: t * (1 + 2^bits + 2^2bits + ...) copies t into each field. -#}
    {%- set final = ('__sc_g ^ ((' ~ undo | join(' ^ ') ~ ') * ' ~ ns2.replicate ~ 'L)') if undo else '__sc_g' -%}
    {#- Interleave straight from the packed fields: bit L of field i moves to L*n + (n-1-i). -#}
    {%- set terms = [] -%}
    {%- for level in range(bits - 1, -1, -1) -%}
        {%- for i in range(n) -%}
            {%- set src = i * bits + level -%}
            {%- set dst = level * n + (n - 1 - i) -%}
            {%- set masked = '(__sc_y & ' ~ 2 ** src ~ 'L)' -%}
            {%- if dst > src -%}
                {%- do terms.append('shiftleft(' ~ masked ~ ', ' ~ (dst - src) ~ ')') -%}
            {%- elif dst < src -%}
                {%- do terms.append('shiftright(' ~ masked ~ ', ' ~ (src - dst) ~ ')') -%}
            {%- else -%}
                {%- do terms.append(masked) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endfor -%}
    {#- transform(array(e), v -> body)[0] evaluates e once and names it v inside body. -#}
    {%- set key = 'transform(array(' ~ final ~ '), __sc_y -> (' ~ terms | join(' | ') ~ '))[0]' -%}
    {%- set key = 'aggregate(sequence(0, ' ~ (ns.levels - 1) ~ '), ' ~ state ~ ', (__sc_g, __sc_l) -> __sc_g ^ (shiftleft(__sc_g, '
        ~ bits ~ ' * shiftleft(1, __sc_l)) & ' ~ full ~ 'L), __sc_g -> ' ~ key ~ ')' -%}
    {{ return(bound.open ~ spark_clustering._curve_checked('hilbert_key', bits, bound.xs, key) ~ bound.close) }}
{% endmacro %}

{% macro default__hilbert_key(bits, id_sqls, backend) %}
    {{ spark_clustering._unsupported_adapter('hilbert_key', 'emits Spark SQL bit functions or the native hilbert_key') }}
{% endmacro %}
