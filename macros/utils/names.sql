{#- Names the package puts into a query next to the user's columns: never one of theirs. -#}

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
