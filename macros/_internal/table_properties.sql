{#- What the package writes into a table's metadata and reads back: table properties
    (spark_clustering.cluster_by, .method, .validated, ...) and DESCRIBE TABLE EXTENDED. -#}

{#- {key: value} of `show tblproperties` (the one parser of it); Spark raises for a missing table. -#}
{% macro _table_properties(relation) %}
    {%- set properties = {} -%}
    {%- for row in run_query('show tblproperties ' ~ relation).rows -%}
        {%- do properties.update({row[0]: row[1]}) -%}
    {%- endfor -%}
    {{ return(properties) }}
{% endmacro %}


{#- `alter table <relation> set tblproperties ('key' = 'value', ...)` for a dict of properties.
    Lists and dicts are stored as JSON, so a column `x,y` stays one name; booleans as true/false;
    every key and value goes through _sql_literal, so a quote, backslash or non-ASCII character in a
    column name cannot break the statement. -#}
{% macro _set_tblproperties_sql(relation, properties) %}
    {{ return('alter table ' ~ relation ~ ' set tblproperties ' ~ spark_clustering._tblproperties_list(properties)) }}
{% endmacro %}


{#- `('key' = 'value', ...)` of a dict of properties, as _set_tblproperties_sql stores them; also the
    TBLPROPERTIES clause of a CREATE TABLE. -#}
{% macro _tblproperties_list(properties) %}
    {%- set pairs = [] -%}
    {%- for key, value in properties.items() -%}
        {%- do pairs.append(spark_clustering._sql_literal(key | string, 'tblproperties') ~ ' = '
                            ~ spark_clustering._sql_literal(spark_clustering._tblproperty_text(value), 'tblproperties')) -%}
    {%- endfor -%}
    {{ return('(' ~ pairs | join(', ') ~ ')') }}
{% endmacro %}


{#- A property's value as the table stores it (_tblproperties_list), so it compares with SHOW
    TBLPROPERTIES' text. -#}
{% macro _tblproperty_text(value) %}
    {%- if value is none -%}
        {{ return('') }}
    {%- elif value is boolean -%}
        {{ return('true' if value else 'false') }}
    {%- elif value is mapping -%}
        {{ return(tojson(value)) }}
    {%- elif value is iterable and value is not string -%}
        {{ return(tojson(value | list)) }}
    {%- endif -%}
    {{ return(value | string) }}
{% endmacro %}


{#- The properties of `properties` whose value differs from the table's `current` ones (a dict of
    SHOW TBLPROPERTIES; a property it lacks reads as ''): what an ALTER still has to write. A list or
    dict compares with the JSON the table holds by value, not by its text (a layout read back and
    written again may order its keys otherwise). -#}
{% macro _changed_tblproperties(properties, current) %}
    {%- set changed = {} -%}
    {%- for key, value in properties.items() -%}
        {%- set text = (current or {}).get(key) or '' -%}
        {%- set structured = value is mapping or (value is iterable and value is not string) -%}
        {%- set differs = fromjson(text, none) != value if structured else text != spark_clustering._tblproperty_text(value) -%}
        {%- if differs -%}
            {%- do changed.update({key: value}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(changed) }}
{% endmacro %}


{#- A list property written by _set_tblproperties_sql (JSON), or by earlier versions of the package
    (comma-separated, when the text does not start with '['); none when empty or unset. -#}
{% macro _list_property(text) %}
    {%- if text is none or text | trim == '' -%}{{ return(none) }}{%- endif -%}
    {%- if (text | trim).startswith('[') -%}
        {{ return(fromjson(text | trim)) }}
    {%- endif -%}
    {{ return(text.split(',')) }}
{% endmacro %}


{#- Location, provider, type (MANAGED / EXTERNAL / VIEW), columns, partition columns and properties
    from DESCRIBE TABLE EXTENDED and _table_properties. -#}
{% macro _table_detail(relation) %}
    {%- set ns = namespace(section='columns', location=none, provider=none, type=none) -%}
    {%- set columns = [] -%}
    {%- set partition_by = [] -%}
    {%- for row in run_query('describe table extended ' ~ relation).rows -%}
        {%- set name = (row[0] or '') | trim -%}
        {%- if name == '# Partition Information' -%}
            {%- set ns.section = 'partitions' -%}
        {%- elif name == '# Detailed Table Information' -%}
            {%- set ns.section = 'detail' -%}
        {%- elif ns.section == 'columns' and name and not name.startswith('#') -%}
            {%- do columns.append(name) -%}
        {%- elif ns.section == 'partitions' and name and not name.startswith('#') -%}
            {%- do partition_by.append(name) -%}
        {%- elif ns.section == 'detail' and name == 'Location' -%}
            {%- set ns.location = row[1] -%}
        {%- elif ns.section == 'detail' and name == 'Provider' -%}
            {%- set ns.provider = (row[1] or '') | lower -%}
        {%- elif ns.section == 'detail' and name == 'Type' -%}
            {%- set ns.type = (row[1] or '') | upper -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return({'location': ns.location, 'provider': ns.provider, 'type': ns.type, 'columns': columns,
               'partition_by': partition_by, 'properties': spark_clustering._table_properties(relation)}) }}
{% endmacro %}
