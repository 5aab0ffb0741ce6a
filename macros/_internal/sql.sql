{#- Spark SQL text: quoting, literals, and names the package puts next to the user's columns. -#}

{#- `a`, `b` quoted as Spark identifiers (a backtick doubled), comma-separated. -#}
{% macro _quoted_columns(column_names) %}
    {%- set quoted = [] -%}
    {%- for name in column_names -%}{%- do quoted.append('`' ~ name | replace('`', '``') ~ '`') -%}{%- endfor -%}
    {{ return(quoted | join(', ')) }}
{% endmacro %}


{#- `<column><suffix>` quoted as one identifier: the per-column statistic names of file_stats
    (`a__min`), whatever the column is called. -#}
{% macro _quoted_suffixed(column_name, suffix) %}
    {{ return(spark_clustering._quoted_columns([column_name ~ suffix])) }}
{% endmacro %}


{#- A Python value from YAML/JSON/Jinja as a Spark SQL literal. Dates become ISO strings. -#}
{% macro _sql_literal(value, macro_name) %}
    {%- if value is none -%}
        {{ return('null') }}
    {%- elif value is boolean -%}
        {{ return('true' if value else 'false') }}
    {%- elif value is number -%}
        {{ return(value | string) }}
    {%- elif value is string -%}
        {{ return("'" ~ value | replace('\\', '\\\\') | replace("'", "\\'") ~ "'") }}
    {%- elif value.isoformat is defined -%}
        {{ return("'" ~ value.isoformat() ~ "'") }}
    {%- else -%}
        {%- set msg -%}
            {{ macro_name }}: bound {{ value }} is not a number, string, date or null; write it as one of those (dates and timestamps as 'YYYY-MM-DD[ HH:MM:SS]' strings).
        {%- endset -%}
        {{ exceptions.raise_compiler_error(msg | trim) }}
    {%- endif -%}
{% endmacro %}


{#- A Python value (a workload bound) as a SQL literal cast to the column type `data_type`. -#}
{% macro _typed_literal(value, data_type, macro_name) %}
    {{ return('cast(' ~ spark_clustering._sql_literal(value, macro_name) ~ ' as ' ~ data_type ~ ')') }}
{% endmacro %}


{#- A SQL expression that renders value `x` of Spark type `type` as an exact SQL literal of that
    type: strings through their UTF-8 hex (no escaping to get wrong), timestamps through epoch
    micros (no time zone to get wrong), integers and dates as typed literals (1000 boundaries of
    cast('..' as bigint) cost the analyzer ~0.1 s per query that carries them), the rest through
    cast(string) which round-trips. -#}
{% macro _sql_literal_expression(x, type, column_name) %}
    {%- set t = type | lower -%}
    {%- if t == 'string' or t.startswith('varchar') or t.startswith('char') or t.startswith('string collate') -%}
        {{ return("concat('cast(X', chr(39), hex(" ~ x ~ "), chr(39), ' as string)')") }}
    {%- elif t == 'binary' -%}
        {{ return("concat('X', chr(39), hex(" ~ x ~ "), chr(39))") }}
    {%- elif t == 'timestamp' -%}
        {{ return("concat('timestamp_micros(', cast(unix_micros(" ~ x ~ ") as string), ')')") }}
    {%- elif t in ['tinyint', 'smallint', 'int', 'bigint'] -%}
        {{ return("concat(cast(" ~ x ~ " as string), '" ~ {'tinyint': 'Y', 'smallint': 'S', 'int': '', 'bigint': 'L'}[t] ~ "')") }}
    {%- elif t == 'date' -%}
        {{ return("concat('DATE', chr(39), cast(" ~ x ~ " as string), chr(39))") }}
    {%- elif t in ['boolean', 'float', 'double', 'timestamp_ntz']
            or t.startswith('decimal') -%}
        {{ return("concat('cast(', chr(39), cast(" ~ x ~ " as string), chr(39), ' as " ~ t ~ ")')") }}
    {%- else -%}
        {%- set fix -%}
            column '{{ column_name }}' has type {{ type }}, which has no total order to cluster on; cluster on a numeric, string, date, timestamp, boolean or binary column (or an expression of one in the model)
        {%- endset -%}
        {{ spark_clustering._config_error('cluster_by', column_name, fix | trim) }}
    {%- endif -%}
{% endmacro %}


{#- A value as JSON-safe Python: dates/timestamps as ISO strings, decimals as floats. -#}
{% macro _json_safe(value) %}
    {%- if value is none or value is boolean or value is string -%}
        {{ return(value) }}
    {%- elif value is number -%}
        {{ return(value if value is integer or value is float else value | float) }}
    {%- elif value.isoformat is defined -%}
        {{ return(value.isoformat()) }}
    {%- else -%}
        {{ return(value | string) }}
    {%- endif -%}
{% endmacro %}


{#- `base`, or `base` with '_' appended until it is none of `column_names` (Spark compares names
    case-insensitively). For the package's helper columns (the key, the sample flag): a user
    column of the same name would make the reference ambiguous. -#}
{% macro _unused_column_name(base, column_names) %}
    {%- set taken = column_names | map('lower') | list -%}
    {%- set ns = namespace(name=base) -%}
    {#- at most one step per column: a loop with a bound instead of a while -#}
    {%- for _ in range(taken | length + 1) -%}
        {%- if ns.name | lower in taken -%}{%- set ns.name = ns.name ~ '_' -%}{%- endif -%}
    {%- endfor -%}
    {{ return(ns.name) }}
{% endmacro %}


{#- The name under which Spark exposes the hidden file-metadata struct (`<name>.file_path`,
    `<name>.file_size`) of a file-source table with these columns: `_metadata`, unless a data column
    takes that name, then Spark prefixes '_' until the name is free (LogicalPlan
    metadataOutputWithOutConflicts): a column `_metadata` -> `__metadata`. -#}
{% macro _metadata_column(column_names) %}
    {%- set taken = column_names | map('lower') | list -%}
    {%- set ns = namespace(name='_metadata') -%}
    {%- for _ in range(taken | length + 1) -%}
        {%- if ns.name in taken -%}{%- set ns.name = '_' ~ ns.name -%}{%- endif -%}
    {%- endfor -%}
    {{ return(ns.name) }}
{% endmacro %}


{#- _metadata_column of a relation's own columns (DESCRIBE QUERY, nothing is scanned). `_metadata`
    at parse time and while the table does not exist yet (compiling a model that reads it must not
    need it; the query fails on the missing table when it runs anyway). -#}
{% macro _metadata_column_of(relation) %}
    {%- if not execute -%}{{ return('_metadata') }}{%- endif -%}
    {%- if relation is not string and relation.identifier is defined
            and adapter.get_relation(relation.database, relation.schema, relation.identifier) is none -%}
        {{ return('_metadata') }}
    {%- endif -%}
    {%- set names = spark_clustering.describe_columns('select * from ' ~ relation) | map(attribute='name') | list -%}
    {{ return(spark_clustering._metadata_column(names)) }}
{% endmacro %}
