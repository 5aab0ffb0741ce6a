{#- Validating a written copy against its source before it replaces anything: its row count (the
    default, cluster_validate 'count'), or also an order-independent checksum of every row
    ('checksum'). -#}

{#- The staging table must hold the model's rows: the same count ('count': a lost, duplicated or
    truncated file changes it) or the same count and checksum ('checksum': the same rows). Only
    then is it marked validated (what recover_swap relies on to roll forward). `file_stats`: the
    result of write_file_stats on the staging table, whose row and byte totals make the count. -#}
{% macro _validate_staging(staging, plan, cfg, file_stats=none) %}
    {%- if cfg.validate == 'checksum' -%}
        {%- set staged = spark_clustering._staged_check(staging, plan.column_names) -%}
    {%- elif file_stats is not none -%}
        {#- the statistics sidecar just written holds every file's row count (from its footer) -#}
        {%- set staged = {'row_count': file_stats.rows, 'file_bytes': file_stats.bytes} -%}
    {%- else -%}
        {%- set staged = spark_clustering._staged_count(staging, plan.column_names) -%}
    {%- endif -%}
    {%- set bytes_per_row = (staged.file_bytes / staged.row_count) | round(2) if staged.row_count else 0 -%}
    {%- set expected = plan.source_check -%}
    {%- if cfg.validate and not spark_clustering._checks_match(staged, expected) -%}
        {%- do spark_clustering._drop_sidecar(staging) -%}
        {%- do run_query('drop view if exists ' ~ plan.source_view) -%}
        {{ exceptions.raise_compiler_error(
            "spark_clustering: model '" ~ model.name ~ "': the clustered copy does not match the model query "
            ~ "(rows " ~ staged.row_count ~ " vs " ~ expected.row_count
            ~ ((", checksum " ~ staged.hash_sum ~ "/" ~ staged.hash_xor ~ " vs " ~ expected.hash_sum ~ "/" ~ expected.hash_xor)
               if cfg.validate == 'checksum' else '')
            ~ "); the existing table was left untouched. "
            ~ "If the model is nondeterministic (rand(), current_timestamp(), unordered limit), make it deterministic "
            ~ "or set cluster_validate=false.") }}
    {%- endif -%}
    {%- set build_write_id = spark_clustering._write_id_of_files(staging) -%}
    {#- cluster_by as JSON through one escaping helper: a column `it's` or `x,y` stays intact -#}
    {% call statement('spark_clustering_mark_validated') -%}
        {{ spark_clustering._set_tblproperties_sql(staging, {
            'spark_clustering.validated': true,
            'spark_clustering.cluster_by': plan.cluster_by,
            'spark_clustering.method': cfg.method,
            'spark_clustering.bits': plan.layout.bits if plan.layout else '',
            'spark_clustering.row_count': staged.row_count,
            'spark_clustering.num_files': plan.num_files,
            'spark_clustering.bytes_per_row': bytes_per_row,
            'spark_clustering.layout': plan.layout_choice.spec if plan.layout_choice else '',
            'spark_clustering.layout_name': plan.layout_choice.name if plan.layout_choice else '',
            'spark_clustering.layout_simulated_ratio': plan.layout_choice.ratio if plan.layout_choice else '',
            'spark_clustering.layout_seconds': plan.layout_choice.seconds if plan.layout_choice else '',
            'spark_clustering.build_write_id': build_write_id or '',
        }) }}
    {%- endcall %}
{% endmacro %}


{#- The id of the one Spark write job that wrote every data file of `relation` (Spark names them
    part-<task>-<job uuid>-c<n>.<ext>), or none (the extension's listing missing, no file, files of
    several jobs). clustered_table records it as spark_clustering.build_write_id: recluster() takes
    the files with it in their name for the build's one clustered run, not for new files. -#}
{% macro _write_id_of_files(relation) %}
    {%- if not spark_clustering._has_extension_function('table_data_files') -%}{{ return(none) }}{%- endif -%}
    {%- set ids = [] -%}
    {%- for row in spark_clustering._call_extension('table_data_files', {'table': relation}, ['file_path']) -%}
        {%- set found = modules.re.match('^part-[0-9]+-([0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12})', row.file_path.split('/') | last) -%}
        {%- do ids.append(found.group(1) if found else none) -%}
    {%- endfor -%}
    {{ return(ids[0] if ids and none not in ids and ids | unique | list | length == 1 else none) }}
{% endmacro %}


{#- Row count + checksum of a written table, and its bytes on disk, in one scan: the checksum is
    summed per file so the file sizes come out of the same scan. -#}
{% macro _staged_check(relation, column_names) %}
    {%- set meta = spark_clustering._metadata_column(column_names) -%}
    {%- set row = run_query('select coalesce(sum(row_count), 0), coalesce(sum(hash_sum), 0), coalesce(bit_xor(hash_xor), 0), '
        ~ 'coalesce(sum(file_size), 0) from (select ' ~ spark_clustering._row_checksum_expressions(column_names)
        ~ ', max(' ~ meta ~ '.file_size) as file_size from ' ~ relation ~ ' group by ' ~ meta ~ '.file_path)').rows[0] -%}
    {{ return({'row_count': row[0] | int, 'hash_sum': row[1] | int, 'hash_xor': row[2] | int, 'file_bytes': row[3] | int}) }}
{% endmacro %}


{#- Row count and bytes on disk of a written table without reading its columns: parquet and orc
    count rows from their footers, and only the file-metadata column is read. -#}
{% macro _staged_count(relation, column_names) %}
    {%- set meta = spark_clustering._metadata_column(column_names) -%}
    {%- set row = run_query('select coalesce(sum(row_count), 0), coalesce(sum(file_size), 0) from (select count(*) as row_count, max('
        ~ meta ~ '.file_size) as file_size from ' ~ relation ~ ' group by ' ~ meta ~ '.file_path)').rows[0] -%}
    {{ return({'row_count': row[0] | int, 'file_bytes': row[1] | int}) }}
{% endmacro %}


{#- A staged copy's check from what its write observed (_plan_clustered_write's written_check): the
    row count its files hold (`counted`: {row_count, file_bytes}, from footers or the format's log),
    and the checksum of the rows the writer received. A file lost, truncated or doubled after the
    write changes the count; a row lost or doubled between the read and the writer, the checksum. -#}
{% macro _written_check(counted, written_check) %}
    {%- set written = spark_clustering._observed_check({'observed_token': written_check.observed_token}) -%}
    {{ return({'row_count': counted.row_count, 'file_bytes': counted.file_bytes,
               'hash_sum': written.hash_sum if written.row_count == counted.row_count else none,
               'hash_xor': written.hash_xor}) }}
{% endmacro %}


{#- Whether a check of the copy matches the source's: the row count, and the checksum when both have one. -#}
{% macro _checks_match(a, b) %}
    {%- do spark_clustering._observed_check(b) -%}
    {%- set hashed = a.hash_sum is defined and b.hash_sum is defined and b.hash_sum is not none -%}
    {{ return(a.row_count == b.row_count and (not hashed or (a.hash_sum == b.hash_sum and a.hash_xor == b.hash_xor))) }}
{% endmacro %}


{#- A check the write observed (_plan_clustered_write's observe_source: {'observed_token': t}) filled
    in with the rows that write read (observed_row_checksum takes them once); any other check as it is. -#}
{% macro _observed_check(check) %}
    {%- if check is mapping and 'observed_token' in check and 'row_count' not in check -%}
        {%- set row = spark_clustering._call_extension('observed_row_checksum', {'token': check.observed_token},
                                                       ['row_count', 'hash_sum', 'hash_xor'])[0] -%}
        {%- do check.update({'row_count': row.row_count | int, 'hash_sum': row.hash_sum | int, 'hash_xor': row.hash_xor | int}) -%}
    {%- endif -%}
    {{ return(check) }}
{% endmacro %}


{#- Whether a staging table carries the mark _validate_staging sets after its check passed. -#}
{% macro _is_validated(relation) %}
    {{ return(spark_clustering._table_properties(relation).get('spark_clustering.validated') == 'true') }}
{% endmacro %}
