{#- Test-only: evaluate the package's metric core on synthetic per-file ranges in ONE dbt call.
    cases: list of {"columns": [...], "files": [[[lo, hi] or null per column], ...]}.
    Prints `metrics_core_cases: <json list of results>`; each result carries its Jinja seconds. -#}
{% macro metrics_core_cases(cases) %}
    {%- set results = [] -%}
    {%- for case in cases -%}
        {%- set started = modules.datetime.datetime.now() -%}
        {%- set result = spark_clustering._clustering_metrics(case['files'], case['columns']) -%}
        {%- do result.update({"seconds": (modules.datetime.datetime.now() - started).total_seconds()}) -%}
        {%- do results.append(result) -%}
    {%- endfor -%}
    {{ print("metrics_core_cases: " ~ tojson(results)) }}
{% endmacro %}


{#- Test-only: the file_stats SELECT of each schema.table (no query run), printed as a JSON
    object table -> SQL. -#}
{% macro metrics_file_stats_sql(schema, tables, columns) %}
    {%- set sql_by_table = {} -%}
    {%- for table in tables -%}
        {%- set relation = api.Relation.create(schema=schema, identifier=table) -%}
        {%- do sql_by_table.update({table: spark_clustering.file_stats(relation, columns)}) -%}
    {%- endfor -%}
    {{ print("metrics_file_stats_sql: " ~ tojson(sql_by_table)) }}
{% endmacro %}


{#- Test-only: per table, the rows spark_clustering._file_stats_rows measures (what recluster's
    measure and clustering_information read), every value as text: {table: [[file_path, row_count,
    c__min, c__max, c__null_count, ...], ...]} (a trailing inexact_files left out). -#}
{% macro metrics_file_stats_rows(schema, tables, columns) %}
    {%- set rows_by_table = {} -%}
    {%- for table in tables -%}
        {%- set relation = api.Relation.create(schema=schema, identifier=table) -%}
        {%- set stats = spark_clustering._file_stats_rows(relation, columns, spark_clustering._existing_table_detail(relation)) -%}
        {%- set rows = [] -%}
        {%- for row in stats.rows -%}
            {%- set values = [] -%}
            {%- for value in row[:2 + 3 * (columns | length)] -%}{%- do values.append(value | string) -%}{%- endfor -%}
            {%- do rows.append(values) -%}
        {%- endfor -%}
        {%- do rows_by_table.update({table: rows}) -%}
    {%- endfor -%}
    {{ print("metrics_file_stats_rows: " ~ tojson(rows_by_table)) }}
{% endmacro %}


{#- Test-only: the whole clustering_information path after the SQL (run_query -> agate -> ranges
    -> metrics) on `file_count` synthetic file_stats rows made by Spark, timed. -#}
{% macro metrics_timed_synthetic_stats(file_count) %}
    {%- set sql -%}
        select
            concat('file-', id) as file_path,
            cast(1000 as bigint) as row_count,
            cast(floor(id / 100) * 1000 + pmod(hash(id, 1), 10) as bigint) as a__min,
            cast(floor(id / 100) * 1000 + 999 as bigint) as a__max,
            cast(0 as bigint) as a__null_count,
            cast(pmod(id, 100) * 1000 + pmod(hash(id, 2), 10) as bigint) as b__min,
            cast(pmod(id, 100) * 1000 + 999 as bigint) as b__max,
            cast(0 as bigint) as b__null_count
        from range(0, {{ file_count }})
    {%- endset -%}
    {%- set started = modules.datetime.datetime.now() -%}
    {%- set stats = run_query(sql) -%}
    {%- set collected = modules.datetime.datetime.now() -%}
    {%- set metrics = spark_clustering._clustering_metrics(spark_clustering._file_ranges_from_stats(stats, 2), ['a', 'b']) -%}
    {%- set finished = modules.datetime.datetime.now() -%}
    {%- do metrics.update({
        "query_and_agate_seconds": (collected - started).total_seconds(),
        "metrics_seconds": (finished - collected).total_seconds(),
    }) -%}
    {{ print("metrics_timed_synthetic_stats: " ~ tojson(metrics)) }}
{% endmacro %}
