{#- The package's Spark extension (the jar): its functions are how a session says it is loaded. -#}

{#- Whether the session knows the function `name` (a native curve function, a table function of the
    extension). False on other adapters. A build asks this five times or more (lease, key, stats,
    swap), each a Spark round trip: the first question looks up every function of the jar in one
    `show functions` and keeps the answer in the model's context for the rest of its run (a
    session's functions do not change during a build). -#}
{% macro _has_extension_function(name) %}
    {%- if target.type not in ['spark', 'databricks'] -%}{{ return(false) }}{%- endif -%}
    {%- set names = spark_clustering._extension_function_names() -%}
    {%- set memo = model if (model is defined and model is mapping) else {} -%}
    {%- if name not in names -%}
        {{ return(run_query("show functions like '" ~ name ~ "'").rows | length > 0) }}
    {%- endif -%}
    {%- if '_spark_clustering_functions' not in memo -%}
        {%- set found = [] -%}
        {%- for row in run_query("show functions like '" ~ names | join('|') ~ "'").rows -%}
            {%- do found.append((row[0] | string).split('.') | last | lower) -%}
        {%- endfor -%}
        {%- do memo.update({'_spark_clustering_functions': found}) -%}
    {%- endif -%}
    {{ return(name in memo['_spark_clustering_functions']) }}
{% endmacro %}


{#- The extension's functions the package asks about: every table function it calls (declared in
    _extension_table_functions), the native curve functions and observe_row_checksum. -#}
{% macro _extension_function_names() %}
    {{ return((spark_clustering._extension_table_functions().keys() | list) + ['hilbert_key', 'observe_row_checksum', 'range_id', 'zorder_key']) }}
{% endmacro %}


{#- The boundary to the jar, declared once: every table function of the extension the package calls
    (udfs/scala/.../SparkClusteringInjections.scala), with its arguments in the jar's order. The jar
    reads every argument as a constant string (a list: an array of strings), so a value is passed
    as a literal of its text; _call_extension adds the call id after them. -#}
{% macro _extension_table_functions() %}
    {{ return({
        'collect_to_view': ['view', 'rows_sql'],
        'drop_sidecar_table': ['table'],
        'kdtree_fit': ['rows_sql', 'boxes_sql', 'files', 'splits'],
        'maintenance_record': ['table'],
        'observed_row_checksum': ['token'],
        'observed_workload': ['table'],
        'recluster_stage_pending': ['table', 'lease_token', 'staging_dir', 'file_prefix', 'select_sql', 'columns',
                                    'partition_columns', 'format'],
        'save_maintenance_record': ['table', 'record'],
        'simulate_layouts': ['rows_sql', 'boxes_sql', 'files', 'placements'],
        'swap_staging_table': ['table', 'lease_token', 'what'],
        'table_committed_rows': ['table', 'version'],
        'table_data_files': ['table'],
        'table_file_rows': ['table', 'version', 'files', 'view'],
        'table_file_stats': ['table', 'columns'],
        'table_lease_acquire': ['table', 'owner', 'wait_seconds', 'scope'],
        'table_lease_check': ['lease_token', 'what'],
        'table_lease_release': ['token_or_owner_prefix', 'by_owner'],
        'table_lease_try_acquire': ['table', 'owner', 'wait_seconds', 'scope'],
        'table_rewrite_commit': ['table', 'lease_token', 'staging_table', 'staging_dir', 'file_prefix', 'read_version',
                                 'validated_rows', 'validated_bytes', 'cluster_by', 'replaced_files'],
        'table_rewrite_recover': ['table', 'lease_token', 'staging_table'],
        'table_state': ['table'],
        'write_file_stats': ['table', 'rebuild', 'own_write'],
    }) }}
{% endmacro %}


{#- Call the extension's table function `name` with its arguments by name (`arguments`: every
    declared one; a relation passes as schema.table, a list as an array of strings, a boolean as
    true/false) and return its rows as dicts by column name. `columns`: what to select (default
    all); `tail`: SQL after the call (order by, limit). A session without the function stops with
    an error naming it, before the call. Every call ends with a call id, so that it acts once
    however often Spark analyses its statement. -#}
{% macro _call_extension(name, arguments, columns=none, tail='') %}
    {%- set declared = spark_clustering._extension_table_functions()[name] -%}
    {%- for key in arguments if key not in declared -%}
        {{ exceptions.raise_compiler_error("spark_clustering: " ~ name ~ " has no argument '" ~ key ~ "' (its arguments: " ~ declared | join(', ') ~ ")") }}
    {%- endfor -%}
    {%- if not spark_clustering._has_extension_function(name) -%}
        {{ spark_clustering._missing_extension('spark_clustering', [name]) }}
    {%- endif -%}
    {%- set literals = [] -%}
    {%- for key in declared -%}
        {%- if key not in arguments -%}
            {{ exceptions.raise_compiler_error("spark_clustering: " ~ name ~ " called without its argument '" ~ key ~ "'") }}
        {%- endif -%}
        {%- set value = arguments[key] -%}
        {%- if value is boolean -%}
            {%- do literals.append("'" ~ (value | string | lower) ~ "'") -%}
        {%- elif value is string or value is number -%}
            {%- do literals.append(spark_clustering._sql_literal(value | string, name)) -%}
        {%- elif value.identifier is defined -%}
            {#- a relation -#}
            {%- do literals.append(spark_clustering._sql_literal(value.schema ~ '.' ~ value.identifier, name)) -%}
        {%- else -%}
            {%- set items = [] -%}
            {%- for item in value -%}{%- do items.append(spark_clustering._sql_literal(item | string, name)) -%}{%- endfor -%}
            {%- do literals.append('array(' ~ items | join(', ') ~ ')') -%}
        {%- endif -%}
    {%- endfor -%}
    {#- The call id (CallOnce in the jar): over Spark Connect the statement is analysed up to three
        times, and a function that acts must act once. Unique per call: within a dbt thread calls
        follow each other, each a Spark round trip, so no two share a microsecond. -#}
    {%- do literals.append(spark_clustering._sql_literal(invocation_id ~ '/' ~ thread_id ~ '/'
                           ~ modules.datetime.datetime.now().strftime('%Y%m%dT%H%M%S.%f'), name)) -%}
    {%- set result = run_query('select ' ~ (columns | join(', ') if columns else '*') ~ ' from ' ~ name ~ '('
                               ~ literals | join(', ') ~ ')' ~ ((' ' ~ tail) if tail else '')) -%}
    {%- set rows = [] -%}
    {%- for row in result.rows -%}
        {%- set named = {} -%}
        {%- for column in result.column_names -%}{%- do named.update({column: row[loop.index0]}) -%}{%- endfor -%}
        {%- do rows.append(named) -%}
    {%- endfor -%}
    {{ return(rows) }}
{% endmacro %}


{#- The error of a step that needs a table function of the extension, naming how to load it. -#}
{% macro _missing_extension(what, functions, alternative=none) %}
    {%- set msg -%}
        {{ what }}: the spark_clustering Spark extension is not loaded, and this needs its table functions ({{ functions | join(', ') }}). Start Spark with spark.jars=<path>/spark-clustering-udfs_<spark line>_<scala>.jar (the jar for its Spark line) and spark.sql.extensions=org.apache.spark.sql.sparkclustering.SparkClusteringExtensions (scripts/setup builds the jar; see docs/deployment.md){{ (', or ' ~ alternative) if alternative else '' }}.
    {%- endset -%}
    {{ exceptions.raise_compiler_error(msg | trim) }}
{% endmacro %}
