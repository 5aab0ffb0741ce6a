{#- Everything a clustered write decides before it writes: columns, file count, boundaries, key,
    the SELECT and the CREATE TABLE AS. clustered_table and recluster both write through it. -#}

{#- Everything decided before the write: columns, file count, boundaries, key, the SELECT, and the
    source fingerprint the staging table must match. `observe_source` (recluster: its source is the
    table's files, read once by the write): with cluster_validate checksum and the extension, the
    write takes the checksum of the rows it reads itself (observe_row_checksum), so the sampling pass
    reads only the clustering columns; the check then reads it (_checks_match). -#}
{% macro _plan_clustered_write(source_view, cfg, existing=none, label=none, row_count=none, observe_source=false) %}
    {%- set columns = spark_clustering.describe_columns('select * from ' ~ source_view) -%}
    {%- set cluster_cols = spark_clustering._returned_columns('cluster_by', cfg.cluster_by, columns) -%}
    {%- set partition_by = spark_clustering._returned_columns('partition_by', cfg.partition_by, columns) | map(attribute='name') | list -%}
    {%- set column_names = columns | map(attribute='name') | list -%}
    {%- set cluster_names = cluster_cols | map(attribute='name') | list -%}
    {%- set ranges = {} -%}
    {%- for col in cluster_cols -%}{%- do ranges.update({col.name: cfg.ranges[cfg.cluster_by[loop.index0]]}) -%}{%- endfor -%}

    {%- set backend = none if cfg.method == 'linear' else spark_clustering.udf_backend() -%}
    {%- set observe = observe_source and cfg.validate == 'checksum' and cfg.method != 'linear'
                      and spark_clustering._has_extension_function('observe_row_checksum') -%}
    {%- set key_fits = spark_clustering._write_key_fits(cfg.method, partition_by | length > 0, cluster_names | length,
                                                        ranges.values() | max, backend) -%}
    {%- set rebuild = existing is not none and not existing.is_view -%}
    {#- A rebuild of a query whose count(*) is a whole evaluation (a join, an aggregate) sizes its
        sample on the row count the previous build recorded and counts the rows in the sampling
        pass itself. A first build, or a query a scan counts (asked first: then the recorded count
        is not needed), counts first. -#}
    {%- set count_in_pass = rebuild and row_count is none and key_fits and not spark_clustering._count_is_cheap(source_view) -%}
    {#- What the previous build of this table recorded, read once: its row count (for count_in_pass)
        and its bytes per row (cluster_target_file_bytes). -#}
    {%- set recorded = {} -%}
    {%- if rebuild and (count_in_pass or (cfg.target_file_bytes and not cfg.num_files)) -%}
        {%- set recorded = spark_clustering._table_properties(existing) -%}
    {%- endif -%}
    {%- set bytes_per_row = (recorded['spark_clustering.bytes_per_row'] | float) if recorded.get('spark_clustering.bytes_per_row') else none -%}
    {%- set sample_pass = none -%}
    {%- if count_in_pass -%}
        {%- set previous = recorded.get('spark_clustering.row_count') -%}
        {%- if previous -%}
            {%- set previous = previous | int -%}
            {%- set planned = spark_clustering._presample_rows(cfg, ranges, cfg.num_files or spark_clustering._files_for_target(previous, cfg, bytes_per_row)) -%}
            {#- only well below all the rows: a table that grew 100x since caches ~100x its sample -#}
            {%- if 1.25 * planned <= 0.5 * previous -%}
                {%- set sample_pass = spark_clustering._sample_and_count(source_view, cluster_names, 1.25 * planned / previous,
                        check_columns=column_names if cfg.validate == 'checksum' else none) -%}
                {%- set row_count = sample_pass.row_count -%}
            {%- endif -%}
        {%- endif -%}
    {%- endif -%}
    {%- if row_count is none -%}
        {%- set row_count = run_query('select count(*) from ' ~ source_view).rows[0][0] | int -%}
    {%- endif -%}
    {%- set num_files = cfg.num_files or spark_clustering._files_for_target(row_count, cfg, bytes_per_row) -%}
    {#- Tiny files cost more in per-file overhead (footers, listing, tasks) than their min/max save. -#}
    {%- if num_files > 1 and row_count < 1000 * num_files -%}
        {{ exceptions.warn('spark_clustering: ' ~ (label or model.name) ~ ': ' ~ row_count ~ ' rows in ' ~ num_files
            ~ ' files is about ' ~ (row_count // num_files) ~ ' rows per file (fewer than 1000); fewer, larger files '
            ~ 'prune as well and read faster: lower cluster_num_files or raise cluster_target_file_rows') }}
    {%- endif -%}

    {%- if cfg.method == 'linear' -%}
        {%- set boundaries = none -%}
        {%- set source_check = spark_clustering._source_check(source_view, column_names, cfg, row_count) -%}
        {%- set key_sql = none -%}
        {%- set layout = none -%}
    {%- else -%}
        {%- set first_pass = spark_clustering._write_first_pass(cfg.method, key_fits, num_files, observe) -%}
        {%- set presample = first_pass == 'sampled_keys' -%}
        {%- set method = cfg.method -%}
        {%- if method == 'auto' and not presample -%}
            {#- the candidates are simulated as the sampled files of one unpartitioned write -#}
            {{ log('spark_clustering: ' ~ (label or model.name) ~ ': cluster_method auto simulates layouts for an '
                   ~ 'unpartitioned table of 2 or more files; writing the uniform hilbert layout', info=true) }}
            {%- set method = 'hilbert' -%}
        {%- endif -%}
        {%- set boundary_rows = cfg.sample_rows_per_range * (ranges.values() | max) -%}
        {%- set sample_rows = spark_clustering._presample_rows(cfg, ranges, num_files) if presample else boundary_rows -%}
        {%- set fraction = [1.0, sample_rows / ([row_count, 1] | max)] | min -%}
        {#- a checksum the counting pass took already covers every row, whichever sample is used -#}
        {%- set pass_check = sample_pass.check if (sample_pass is not none and sample_pass.check is defined) else none -%}
        {%- if presample and sample_pass is none and cfg.validate == 'checksum' and not observe -%}
            {#- the sample and the checksum of the rows read in one pass (the checksum reads every
                column either way), where a pass for the sample and one for the checksum read the
                source twice -#}
            {%- set sample_pass = spark_clustering._sample_and_count(source_view, cluster_names, fraction, check_columns=column_names) -%}
            {%- set pass_check = sample_pass.check -%}
        {%- endif -%}
        {%- if presample and sample_pass is not none and sample_pass.sampled >= 0.5 * sample_rows -%}
            {#- the pass sampled enough (the table did not shrink to under half); more than twice
                enough (it grew) is thinned to ~1.25x, which the file cuts sort on one task -#}
            {%- set sample = spark_clustering._sampled_rows(sample_pass, cluster_names, 1.25 * sample_rows) -%}
        {%- else -%}
            {%- do spark_clustering._drop_sample(sample_pass) -%}
            {%- if presample -%}
                {%- set sample = spark_clustering._sample_clustering_columns(source_view, cluster_names, fraction, sample_rows) -%}
            {%- endif -%}
        {%- endif -%}
        {%- if presample -%}
            {#- the quantiles need only their ~20 rows per range of the sample the file cuts need -#}
            {%- set boundaries = spark_clustering.range_boundaries(sample.name, cluster_cols, cluster_names, ranges,
                                                                   [1.0, boundary_rows / ([sample.rows, 1] | max)] | min, checksum=false) -%}
            {#- observed by the write itself: decided below, once the file routing is known -#}
            {%- set source_check = pass_check if (pass_check is not none or observe)
                                   else spark_clustering._source_check(source_view, column_names, cfg, row_count) -%}
        {%- elif first_pass == 'quantiles_observed' -%}
            {#- one file: the quantiles read the clustering columns only, and the write, which reads the
                source once (a range partitioner of one partition samples nothing), observes the checksum -#}
            {%- set boundaries = spark_clustering.range_boundaries(source_view, cluster_cols, column_names, ranges, fraction,
                                                                   checksum=false) -%}
            {%- set source_check = none -%}
        {%- else -%}
            {%- set boundaries = spark_clustering.range_boundaries(source_view, cluster_cols, column_names, ranges, fraction,
                                                                   checksum=(cfg.validate == 'checksum')) -%}
            {%- set source_check = {'row_count': boundaries.row_count, 'hash_sum': boundaries.hash_sum, 'hash_xor': boundaries.hash_xor} -%}
        {%- endif -%}
        {%- if method == 'auto' -%}
            {%- set choice = spark_clustering._choose_layout(sample.name, sample.rows, cluster_cols, boundaries, backend, num_files,
                                                             cfg.workload, cfg.layout, label) -%}
            {%- set layout = choice.layout -%}
            {%- set key_sql = choice.key_sql -%}
        {%- else -%}
            {%- set layout = spark_clustering._key_layout(cluster_names, boundaries, backend) -%}
            {%- set key_sql = spark_clustering.cluster_key(method, cluster_names, boundaries, backend) -%}
        {%- endif -%}
        {%- if presample -%}
            {%- set kdtree = method == 'auto' and choice.spec.curve == 'kdtree' -%}
            {#- a k-d tree's files are its leaves, or, in a write of fewer files (a recluster's part of
                the table), whole subtrees of it: no cuts on the sampled keys to find -#}
            {%- set tree_file_sql = none -%}
            {%- if kdtree and choice.spec.files == num_files -%}
                {%- set tree_file_sql = spark_clustering._kdtree_file_sql(choice.spec) -%}
            {%- elif kdtree -%}
                {%- set tree_file_sql = spark_clustering._kdtree_subtree_file_sql(choice.spec, sample.name, num_files) -%}
            {%- endif -%}
            {%- set file_routing = spark_clustering._file_routing(sample.name, key_sql if tree_file_sql is none else none, num_files, backend) -%}
            {%- if file_routing is not none and tree_file_sql is not none -%}
                {%- do file_routing.update({'file_sql': tree_file_sql}) -%}
            {%- endif -%}
            {%- do spark_clustering._drop_sample(sample) -%}
        {%- endif -%}
    {%- endif -%}

    {%- set file_routing = file_routing if file_routing is defined else none -%}
    {%- set from_sql = source_view -%}
    {%- if observe and source_check is none -%}
        {%- if file_routing is not none or num_files == 1 -%}
            {#- each row goes straight to its file's task (or to the one file's), so the write reads the
                source once (a range partitioner's sampling job would read it, and count it, twice) -#}
            {%- set token = invocation_id ~ ':' ~ source_view ~ ':' ~ modules.datetime.datetime.utcnow().isoformat() -%}
            {%- set from_sql = '(' ~ spark_clustering._observed_rows_sql(source_view, token, column_names) ~ ') as __sc_observed' -%}
            {%- set source_check = {'observed_token': token} -%}
        {%- else -%}
            {%- set source_check = spark_clustering._source_check(source_view, column_names, cfg, row_count) -%}
        {%- endif -%}
    {%- endif -%}
    {%- set select_sql = spark_clustering.clustered_select(from_sql, column_names, cluster_names, key_sql, num_files, partition_by,
                                                           file_routing) -%}
    {#- The rows the writer receives, observed in the write's last stage (after the shuffle), where the
        source's are observed as they are read: the staged copy is then checked by its row count,
        which its files' footers (or the format's log) hold, and by the checksum of the rows the
        writer got, so it is not read back whole (a recluster read its files twice otherwise).
        Accumulators of a job's last stage count each task once, retries and speculation included. -#}
    {%- set written_check = none -%}
    {%- if source_check is mapping and 'observed_token' in source_check -%}
        {%- set written_token = source_check.observed_token ~ ':written' -%}
        {%- set written_check = {'observed_token': written_token, 'select_sql':
            spark_clustering._observed_rows_sql('(' ~ select_sql ~ ') as __sc_written', written_token, column_names)} -%}
    {%- endif -%}
    {%- set choice = choice if choice is defined else none -%}
    {%- set summary = (('auto: ' ~ choice.name) if choice is not none else cfg.method) ~ ' on [' ~ cluster_names | join(', ') ~ ']' -%}
    {%- if layout is not none -%}
        {%- set per_col = [] -%}
        {%- for name in cluster_names -%}
            {%- do per_col.append(name ~ '=' ~ (boundaries['columns'][name]['literals'] | unique | list | length + 1)) -%}
        {%- endfor -%}
        {%- set summary = summary ~ ', ' ~ layout.bits ~ ' bits/column, value ranges ' ~ per_col | join(' ') ~ ', backend ' ~ backend -%}
    {%- endif -%}
    {{ log('spark_clustering: ' ~ (label or model.name) ~ ': ' ~ row_count ~ ' rows -> ' ~ num_files ~ ' files, ' ~ summary, info=true) }}
    {{ return({
        'columns': columns, 'column_names': column_names, 'cluster_by': cluster_names,
        'partition_by': partition_by, 'row_count': row_count, 'num_files': num_files,
        'boundaries': boundaries, 'backend': backend, 'layout': layout, 'key_sql': key_sql,
        'select_sql': select_sql, 'source_check': source_check, 'source_view': source_view,
        'layout_choice': choice, 'written_check': written_check,
    }) }}
{% endmacro %}


{#- `select *` of `from_sql` through observe_row_checksum under `token`: every row kept and added to
    the token's checksum (row_checksum's hashes over `column_names`). The rows a recluster's write
    reads and the rows its writer receives are observed by this one SQL, so their checksums agree. -#}
{% macro _observed_rows_sql(from_sql, token, column_names) %}
    {%- set row = spark_clustering._row_hashes(column_names) -%}
    {{ return('select * from ' ~ from_sql ~ ' where observe_row_checksum(' ~ spark_clustering._sql_literal(token, 'observe token')
              ~ ', ' ~ row.hash ~ ', ' ~ row.xxhash ~ ')') }}
{% endmacro %}


{#- Whether a write can cut its files on sampled keys (one sampling pass over the clustering
    columns, then the write: what an ORDER BY costs): a curve key that fits a BIGINT, no partition
    columns. With 2 or more files it does (_write_first_pass). -#}
{% macro _write_key_fits(method, partitioned, column_count, max_ranges, backend) %}
    {{ return(method != 'linear' and not partitioned
              and (backend == 'sql' or method == 'auto' or column_count * spark_clustering._key_bits(max_ranges) <= 63)) }}
{% endmacro %}


{#- What a clustered write reads before it writes, the one rule _plan_clustered_write follows and
    recluster's cost policy charges (_recluster_cost_scope):
      sampled_keys        2 or more files cut on sampled keys (_write_key_fits): a sampling pass over
                          the clustering columns (every column too when it takes the checksum, i.e.
                          the write does not observe it)
      quantiles_observed  one file of a write that observes its source's checksum (a recluster's):
                          the quantiles read the clustering columns only
      every_column        otherwise: the quantiles with the checksum, or linear's checksum, read
                          every column of the source -#}
{% macro _write_first_pass(method, key_fits, num_files, observe) %}
    {%- if method != 'linear' and key_fits and num_files > 1 -%}
        {{ return('sampled_keys') }}
    {%- elif method != 'linear' and observe and num_files == 1 -%}
        {{ return('quantiles_observed') }}
    {%- endif -%}
    {{ return('every_column') }}
{% endmacro %}


{#- What the staging table must match: the source's row count, and with cluster_validate: checksum
    also the checksum of every row (a pass of its own over the source, as ORDER BY's sampling job is). -#}
{% macro _source_check(source_view, column_names, cfg, row_count) %}
    {%- if cfg.validate == 'checksum' -%}
        {{ return(spark_clustering.row_checksum(source_view, column_names)) }}
    {%- endif -%}
    {{ return({'row_count': row_count}) }}
{% endmacro %}


{#- Whether count(*) of the query costs less than counting its rows in the sampling pass: its plan
    has no exchange below the count's own (no join, aggregate or window) and no Python UDF, e.g. a
    table, which its footers count (there the separate count is ~0.2 s cheaper on 2.9M rows). -#}
{% macro _count_is_cheap(source_view) %}
    {%- set plan = run_query('explain select count(*) from ' ~ source_view).rows[0][0] -%}
    {{ return(plan.count('Exchange') == 1 and 'EvalPython' not in plan) }}
{% endmacro %}


{#- Rows the cached sample of an unpartitioned write needs: ~20 per range for the quantiles, and
    for files within ~10 % of their share of the rows ~4000 sampled keys per file (std ~1.6 %;
    _file_routing moves each cut by at most 3 % of a file). -#}
{% macro _presample_rows(cfg, ranges, num_files) %}
    {{ return([[cfg.sample_rows_per_range * (ranges.values() | max), 4000 * num_files] | max, 4000000] | min) }}
{% endmacro %}


{#- The clustering columns of a `rand() < fraction` sample of the source (~`rows` of them), cached:
    one pass over the source that reads only those columns. The cache is lazy: the first query of
    the sample (the column boundaries) fills it in its own job (an eager cache runs a count job of
    its own, ~0.1 s). A sample is {name, rows, drop}. -#}
{% macro _sample_clustering_columns(source_view, cluster_names, fraction, rows, seed=42) %}
    {%- set sample = source_view ~ '_sample' -%}
    {%- do run_query('cache lazy table ' ~ sample ~ ' as select ' ~ spark_clustering._quoted_columns(cluster_names)
                     ~ ' from ' ~ source_view ~ ' where rand(' ~ seed ~ ') < ' ~ fraction) -%}
    {{ return({'name': sample, 'rows': rows, 'drop': [sample]}) }}
{% endmacro %}


{#- The same sample and the source's row count from one pass: each task of the source's last stage
    counts its rows and lists its sampled ones (one group per task, so the aggregation is a count
    and an append). The cache is lazy: the query that reads the two totals fills it in the same job.
    With `check_columns`, the pass also takes the checksum of every row over those columns (what
    row_checksum computes: sums and xors of per-task sums and xors are the same), so a write that
    validates by checksum needs no pass of its own over the source for it. Returns {row_count,
    sampled, pass (the cached view), sample (the name _sampled_rows gives its rows), drop, and with
    check_columns check: {row_count, hash_sum, hash_xor}}. -#}
{% macro _sample_and_count(source_view, cluster_names, fraction, seed=42, check_columns=none) %}
    {%- set pass = source_view ~ '_sample_pass' -%}
    {%- set columns = spark_clustering._quoted_columns(cluster_names) -%}
    {%- set row_hashes = spark_clustering._row_hashes(check_columns) if check_columns else none -%}
    {%- do run_query('cache lazy table ' ~ pass ~ ' as select count(*) as __sc_rows, collect_list(struct(' ~ columns
                     ~ ')) filter (where __sc_u < ' ~ fraction ~ ') as __sc_sampled'
                     ~ (', sum(__sc_h) as __sc_hash_sum, bit_xor(__sc_x) as __sc_hash_xor' if check_columns else '')
                     ~ ' from (select ' ~ columns ~ ', rand(' ~ seed ~ ') as __sc_u, spark_partition_id() as __sc_task'
                     ~ ((', ' ~ row_hashes.hash ~ ' as __sc_h, ' ~ row_hashes.xxhash ~ ' as __sc_x') if check_columns else '')
                     ~ ' from ' ~ source_view ~ ') group by __sc_task') -%}
    {%- set row = run_query('select coalesce(sum(__sc_rows), 0), coalesce(sum(size(__sc_sampled)), 0)'
                            ~ (', coalesce(sum(__sc_hash_sum), 0), coalesce(bit_xor(__sc_hash_xor), 0)' if check_columns else '')
                            ~ ' from ' ~ pass).rows[0] -%}
    {%- set result = {'row_count': row[0] | int, 'sampled': row[1] | int, 'pass': pass, 'sample': source_view ~ '_sample',
                      'drop': [pass]} -%}
    {%- if check_columns -%}
        {%- do result.update({'check': {'row_count': row[0] | int, 'hash_sum': row[2] | int, 'hash_xor': row[3] | int}}) -%}
    {%- endif -%}
    {{ return(result) }}
{% endmacro %}


{#- The sampled rows of a _sample_and_count pass as a sample, thinned to ~`rows` when there are more
    than twice as many (the table grew since the build its fraction was planned on). -#}
{% macro _sampled_rows(sample_pass, cluster_names, rows, seed=43) %}
    {%- set sample = sample_pass.sample -%}
    {%- set thin = sample_pass.sampled > 2 * rows -%}
    {%- do run_query('create or replace temporary view ' ~ sample ~ ' as select ' ~ spark_clustering._quoted_columns(cluster_names)
                     ~ ' from (select inline(__sc_sampled) from ' ~ sample_pass.pass ~ ')'
                     ~ ((' where rand(' ~ seed ~ ') < ' ~ (rows / sample_pass.sampled)) if thin else '')) -%}
    {{ return({'name': sample, 'rows': rows if thin else sample_pass.sampled, 'drop': [sample, sample_pass.pass]}) }}
{% endmacro %}


{#- Drops a sample's views (dropping a cached temporary view also uncaches it); none is a no-op. -#}
{% macro _drop_sample(sample) %}
    {%- if sample is none -%}{{ return(none) }}{%- endif -%}
    {%- for view in sample.drop -%}
        {%- do run_query('drop view if exists ' ~ view) -%}
    {%- endfor -%}
{% endmacro %}


{#- How clustered_select sends each row to its file without a sampling job of its own: `cuts`, the
    num_files - 1 keys that cut the sorted sampled keys into equal parts (range_id of a row's key is
    its file, 1 .. num_files), and `partitions`, for file i an int whose Spark hash lands in shuffle
    partition i - 1 (REPARTITION(n, x) sends x to pmod(hash(x), n)), so each file is one task.
    none when no such int was found among 64 x num_files candidates (the caller range-partitions).
    With `key_sql` none, the partitions only (no cuts: the caller computes each row's file itself).

    Each cut is moved, within `slack` of a file's share of the sampled keys either way, to the key
    there with the most trailing zero bits: on a curve, a key that is a multiple of 2^b starts a
    block of 2^b keys that fills a cell of the grid (Hilbert: a sub-cube once b is a multiple of
    the column count), so files that start and end on such keys cover whole cells and their
    min/max boxes stay tight instead of spilling a few rows into the neighbouring cells. -#}
{% macro _file_routing(sample, key_sql, num_files, backend, slack=0.03) %}
    {%- set pos = "cast(ceil(j * size(keys) / " ~ num_files ~ ".0D) as int)" -%}
    {%- set width = "cast(floor(size(keys) * " ~ slack ~ "D / " ~ num_files ~ ") as int)" -%}
    {%- set window = "named_struct('lo', element_at(keys, greatest(1, " ~ pos ~ " - " ~ width ~ ")), 'hi', element_at(keys, least(size(keys), greatest(1, " ~ pos ~ ") + " ~ width ~ ")))" -%}
    {%- set roundest = spark_clustering._roundest_key('w.lo', 'w.hi') -%}
    {#- Per shuffle partition the smallest int hashing there, as a constant expression: the
        optimizer folds it on the driver, so the statement runs one job, over the sampled keys. -#}
    {%- set by_partition = "array_sort(transform(sequence(0, " ~ (64 * num_files - 1) ~ "), i -> named_struct('p', pmod(hash(i), "
        ~ num_files ~ "), 'x', i)))" -%}
    {%- set partitions_sql = "transform(filter(s, (e, j) -> j = 0 or s[j - 1].p != e.p), e -> e.x)" -%}
    {%- if key_sql is none -%}
        {%- set row = run_query("select array(), " ~ partitions_sql ~ " from (select " ~ by_partition ~ " as s)").rows[0] -%}
    {%- else -%}
        {%- set row = run_query("select case when size(keys) = 0 then array() else transform(transform(sequence(1, " ~ (num_files - 1)
            ~ "), j -> " ~ window ~ "), w -> cast(" ~ roundest ~ " as string)) end, " ~ partitions_sql ~ " "
            ~ "from (select sort_array(collect_list(k)) as keys from (select " ~ key_sql ~ " as k from " ~ sample ~ ")) "
            ~ "cross join (select " ~ by_partition ~ " as s)").rows[0] -%}
    {%- endif -%}
    {%- set cuts = fromjson(row[0]) if row[0] is string else row[0] | list -%}
    {%- set partitions = fromjson(row[1]) if row[1] is string else row[1] | list -%}
    {%- if partitions | length != num_files -%}{{ return(none) }}{%- endif -%}
    {%- set literals = [] -%}
    {%- for c in cuts -%}{%- do literals.append(c ~ 'L') -%}{%- endfor -%}
    {{ return({'cuts': literals, 'partitions': partitions, 'backend': backend}) }}
{% endmacro %}


{#- SQL of the BIGINT in [lo, hi] (lo <= hi, both BIGINT SQL) with the most trailing zero bits:
    with p the highest bit where lo and hi differ, hi with its bits below p cleared, unless lo
    already has zeros in all its bits up to p (then lo is the rounder); 0 when the range holds it. -#}
{% macro _roundest_key(lo, hi) %}
    {%- set p = "(length(bin(" ~ lo ~ " ^ " ~ hi ~ ")) - 1)" -%}
    {{ return("case when " ~ lo ~ " = " ~ hi ~ " then " ~ lo ~ " when " ~ lo ~ " < 0 and " ~ hi ~ " >= 0 then 0L "
        ~ "when (" ~ lo ~ " & (shiftleft(1L, " ~ p ~ " + 1) - 1)) = 0 then " ~ lo ~ " "
        ~ "else shiftleft(shiftright(" ~ hi ~ ", " ~ p ~ "), " ~ p ~ ") end") }}
{% endmacro %}


{#- The model's columns (as describe_columns gives them: the query's own spelling and type) named
    by a config key's list, or a config error naming the first one the model does not return. -#}
{% macro _returned_columns(key, names, columns) %}
    {%- set by_lower = {} -%}
    {%- for col in columns -%}{%- do by_lower.update({col.name | lower: col}) -%}{%- endfor -%}
    {%- set found = [] -%}
    {%- for name in names -%}
        {%- if name | lower not in by_lower -%}
            {{ spark_clustering._config_error(key, names,
                "column '" ~ name ~ "' is not returned by the model; its columns are: " ~ columns | map(attribute='name') | join(', ')) }}
        {%- endif -%}
        {%- do found.append(by_lower[name | lower]) -%}
    {%- endfor -%}
    {{ return(found) }}
{% endmacro %}


{#- Files for a write: enough that no file exceeds cluster_target_file_rows and, when
    cluster_target_file_bytes is set and `bytes_per_row` is known, that bytes target too. Bytes per
    row: what recluster measured on the files it rewrites, or what the previous build of the table
    measured on its own files (tblproperty spark_clustering.bytes_per_row, read by
    _plan_clustered_write): parquet/orc compression depends on the data, so a table's first build
    follows the rows target only. -#}
{% macro _files_for_target(row_count, cfg, bytes_per_row=none) %}
    {%- set files = [1, ((row_count + cfg.target_file_rows - 1) // cfg.target_file_rows)] | max -%}
    {%- if cfg.target_file_bytes and bytes_per_row -%}
        {%- set by_bytes = ((row_count * bytes_per_row / cfg.target_file_bytes) | round(0, 'ceil')) | int -%}
        {%- set files = [files, by_bytes] | max -%}
    {%- endif -%}
    {{ return(files) }}
{% endmacro %}


{#- CREATE TABLE ... AS with the model's dbt-spark table options (format, options, tblproperties,
    partition_by, comment). A `location_root` table gets a fresh directory per build, because the
    current table still owns `<location_root>/<alias>` until the swap; so does a managed table when
    `build_location` is given (_build_location): its files are written once, where the table will
    read them, and the swap only points the table there. -#}
{% macro _create_clustered_table_as(relation, select_sql, cfg, build_location=none) %}
    {%- set location_root = config.get('location_root') -%}
    create table {{ relation }}
    using {{ cfg.file_format }}
    {{ options_clause() }}
    {{ tblproperties_clause() }}
    {{ partition_cols(label="partitioned by") }}
    {%- if location_root %}
    location {{ spark_clustering._sql_literal(location_root ~ '/' ~ model['alias'] ~ '__sc_' ~ invocation_id[:8], 'location_root') }}
    {%- elif build_location %}
    location {{ spark_clustering._sql_literal(build_location, 'build location') }}
    {%- endif %}
    {{ comment_clause() }}
    as
    {{ select_sql }}
{% endmacro %}


{#- Where a clustered table's new files go when they are built aside at a build location:
    `<database location>/<alias>__sc_build_<run>`, beside the table, as an external staging table,
    so that the swap (the jar's swap_staging_table) points the table there in one metastore update
    instead of renaming a managed table's directory, which on an object store copies every file.
    Config `cluster_swap` (cfg.swap): `auto` (default) builds aside where the database lies
    on an object store (_object_store_schemes), `location` always, `rename` never (the table stays
    managed). none also for a `location_root` table (already built aside, at its own directories),
    for a partitioned one (each partition has its own location) and without the jar. -#}
{% macro _build_location(target, cfg) %}
    {%- set swap = cfg.swap -%}
    {%- if swap == 'rename' or config.get('location_root') -%}{{ return(none) }}{%- endif -%}
    {%- if cfg.partition_by or not spark_clustering._has_extension_function('swap_staging_table') -%}
        {%- if swap == 'location' -%}
            {{ spark_clustering._config_error('cluster_swap', swap, ("a partitioned table cannot be switched to a new location (each partition has its own); use 'rename' or 'auto'"
                if cfg.partition_by else "the swap by location needs the Spark extension (spark.sql.extensions=org.apache.spark.sql.sparkclustering.SparkClusteringExtensions); use 'rename' or 'auto'")) }}
        {%- endif -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set rows = run_query('describe schema extended ' ~ target.schema).rows -%}
    {%- for row in rows if (row[0] | lower) == 'location' -%}
        {%- set database_location = row[1].rstrip('/') -%}
        {%- if swap == 'auto' and (database_location.split(':')[0] | lower) not in spark_clustering._object_store_schemes() -%}
            {{ return(none) }}
        {%- endif -%}
        {{ return(database_location ~ '/' ~ (model['alias'] | lower) ~ '__sc_build_' ~ invocation_id[:8]) }}
    {%- endfor -%}
    {{ return(none) }}
{% endmacro %}


{#- File-system schemes of object stores, where a rename copies every byte. -#}
{% macro _object_store_schemes() %}
    {{ return(['s3', 's3a', 's3n', 'gs', 'abfs', 'abfss', 'wasb', 'wasbs', 'oss', 'cos', 'cosn', 'obs']) }}
{% endmacro %}
