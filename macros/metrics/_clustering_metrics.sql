{#-
    The metric core of `clustering_information`: pure Jinja over per-file ranges, no SQL.

    Why Jinja and not Spark SQL window functions: the per-file stats are one small row per file
    (10,000 files = 10,000 rows) that `clustering_information` has to collect anyway to return a
    dict; a range-max over variable windows (depth) has no window-function form without a join,
    and the Jinja version is one code path for every adapter that can produce `file_stats`.
    Jinja is slow per statement (~1 us), so the algorithm keeps Jinja-level loops linear and
    leaves the n log n parts to native code (Python's sort behind `sort`, `zip` + `map('max')`):
      1. rank: every distinct endpoint value of a column gets its rank in sorted order, so all
         later comparisons are on small ints (and any orderable type works).
      2. counts: lo_le[r] = #files with rank(lo) <= r, hi_lt[r] = #files with rank(hi) < r
         (prefix sums over per-rank counts, O(n + m), m = distinct endpoints <= 2n).
      3. overlaps(i) = lo_le[rank(hi_i)] - hi_lt[rank(lo_i)] - 1   (the j with hi_j < lo_i all
         have lo_j <= hi_i, so the difference is exactly the files intersecting [lo_i, hi_i]).
      4. pointdepth(r) = lo_le[r] - hi_lt[r]; depth(i) = max pointdepth over ranks
         rank(lo_i)..rank(hi_i), answered in O(1) from a sparse table built only up to the
         widest file's rank width (O(m log w)).
    The box metric sweeps files in order of `lo` on the column with the fewest overlaps, keeping
    the files still open on it (active set): its cost is the number of pairs overlapping on that
    column, n^2/2 in the worst case (every file overlaps every other on every column). Above
    `var('spark_clustering_box_max_pairs', 1000000)` pairs it estimates instead from a
    systematic sample of files (each compared with all files) and says so (`exact: false`).
-#}

{#- file_stats result rows (file_path, row_count, then min, max, null_count per column) as the
    core's input: per file, one [min, max] per column, none when the file has no non-NULL value.
    Spark orders NaN above every number, but agate hands it over as Decimal('NaN'), which refuses
    to be ordered: it becomes +infinity (so a NaN bound ties with a real +infinity bound). -#}
{% macro _file_ranges_from_stats(stats_table, column_count) %}
    {#- via a variable: Jinja folds a constant 'inf' | float into generated code as `inf` -#}
    {%- set infinity_text = 'inf' -%}
    {%- set infinity = infinity_text | float -%}
    {%- set file_ranges = [] -%}
    {%- for row in stats_table.rows -%}
        {%- set ranges = [] -%}
        {%- for k in range(column_count) -%}
            {%- set lo = row[2 + 3 * k] -%}
            {%- set hi = row[3 + 3 * k] -%}
            {%- if lo is none -%}
                {%- do ranges.append(none) -%}
            {%- else -%}
                {#- x != x only for NaN -#}
                {%- do ranges.append([infinity if lo != lo else lo, infinity if hi != hi else hi]) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- do file_ranges.append(ranges) -%}
    {%- endfor -%}
    {{ return(file_ranges) }}
{% endmacro %}


{#- Metrics of all `columns` plus the box metric. file_ranges: one entry per file, each a list with
    one [lo, hi] (or none: no non-NULL value) per column, in the order of `columns`. -#}
{% macro _clustering_metrics(file_ranges, columns) %}
    {%- set per_column = {} -%}
    {%- set column_results = [] -%}
    {%- for column_name in columns -%}
        {%- set column_result = spark_clustering._column_metrics(file_ranges | map(attribute=loop.index0) | list) -%}
        {%- do per_column.update({column_name: column_result.metrics}) -%}
        {%- do column_results.append(column_result) -%}
    {%- endfor -%}
    {{ return({
        "columns": per_column,
        "box": spark_clustering._box_metrics(column_results),
        "total_files": file_ranges | length,
    }) }}
{% endmacro %}


{#- Returns {"metrics": {...}, "lo_rank": [...], "hi_rank": [...], "overlap_sum": n}; ranks are
    aligned with `ranges` (none where the file has no non-NULL value). -#}
{% macro _column_metrics(ranges) %}
    {%- set present = [] -%}
    {%- for r in ranges if r is not none and r[0] is not none -%}{%- do present.append(r) -%}{%- endfor -%}
    {%- set n = present | length -%}
    {%- set lo_rank = [] -%}
    {%- set hi_rank = [] -%}
    {%- if n == 0 -%}
        {%- for r in ranges -%}{%- do lo_rank.append(none) -%}{%- do hi_rank.append(none) -%}{%- endfor -%}
        {{ return({"metrics": {
            "total_file_count": 0, "constant_file_count": 0, "null_only_file_count": ranges | length,
            "average_overlaps": 0.0, "average_depth": 0.0, "p95_depth": 0, "p99_depth": 0, "max_depth": 0,
            "depth_histogram": {},
        }, "lo_rank": lo_rank, "hi_rank": hi_rank, "overlap_sum": 0}) }}
    {%- endif -%}

    {#- 1. rank the distinct endpoint values (native sort; case_sensitive keeps 'A' != 'a') -#}
    {%- set endpoint_values = (present | map(attribute=0) | list) + (present | map(attribute=1) | list) -%}
    {%- set distinct_values = set(endpoint_values) | sort(case_sensitive=true) -%}
    {%- set rank_of = {} -%}
    {#- a loop index, not range(m): the sandbox refuses ranges over 100,000 -#}
    {%- for value in distinct_values -%}{%- do rank_of.update({value: loop.index0}) -%}{%- endfor -%}

    {#- 2. per-rank counts of lo and hi, then prefix sums -#}
    {%- set lo_count = {} -%}
    {%- set hi_count = {} -%}
    {%- set constant = namespace(files=0) -%}
    {%- for r in ranges -%}
        {%- if r is none or r[0] is none -%}
            {%- do lo_rank.append(none) -%}{%- do hi_rank.append(none) -%}
        {%- else -%}
            {%- set lr = rank_of[r[0]] -%}
            {%- set hr = rank_of[r[1]] -%}
            {%- do lo_rank.append(lr) -%}{%- do hi_rank.append(hr) -%}
            {%- do lo_count.update({lr: lo_count.get(lr, 0) + 1}) -%}
            {%- do hi_count.update({hr: hi_count.get(hr, 0) + 1}) -%}
            {%- if lr == hr -%}{%- set constant.files = constant.files + 1 -%}{%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set lo_le = [] -%}
    {%- set hi_lt = [] -%}
    {%- set pointdepth = [] -%}
    {%- set running = namespace(lo=0, hi=0) -%}
    {%- for value in distinct_values -%}
        {%- set r = loop.index0 -%}
        {%- set running.lo = running.lo + lo_count.get(r, 0) -%}
        {%- do lo_le.append(running.lo) -%}
        {%- do hi_lt.append(running.hi) -%}
        {%- do pointdepth.append(running.lo - running.hi) -%}
        {%- set running.hi = running.hi + hi_count.get(r, 0) -%}
    {%- endfor -%}

    {#- 3. overlaps, and the widest rank window (how many sparse-table levels are needed) -#}
    {%- set total = namespace(overlaps=0, widest=1) -%}
    {%- for lr, hr in zip(lo_rank, hi_rank) if lr is not none -%}
        {%- set total.overlaps = total.overlaps + lo_le[hr] - hi_lt[lr] - 1 -%}
        {%- if hr - lr + 1 > total.widest -%}{%- set total.widest = hr - lr + 1 -%}{%- endif -%}
    {%- endfor -%}

    {#- 4. sparse table: levels[k][r] = max pointdepth over ranks r .. r + 2^k - 1 -#}
    {%- set levels = [pointdepth] -%}
    {%- for k in range(1, total.widest.bit_length()) -%}
        {%- set previous = levels[k - 1] -%}
        {%- do levels.append(zip(previous, previous[2 ** (k - 1):]) | map('max') | list) -%}
    {%- endfor -%}
    {%- set depths = [] -%}
    {%- for lr, hr in zip(lo_rank, hi_rank) if lr is not none -%}
        {%- set k = (hr - lr + 1).bit_length() - 1 -%}
        {%- set left = levels[k][lr] -%}
        {%- set right = levels[k][hr - (2 ** k) + 1] -%}
        {%- do depths.append(left if left > right else right) -%}
    {%- endfor -%}

    {#- 5. histogram (1..16 exact, then the next power of two) and nearest-rank percentiles -#}
    {%- set histogram = {} -%}
    {%- for depth in depths -%}
        {%- set key = '%05d' | format(depth if depth <= 16 else 2 ** ((depth - 1).bit_length())) -%}
        {%- do histogram.update({key: histogram.get(key, 0) + 1}) -%}
    {%- endfor -%}
    {%- set sorted_depths = depths | sort -%}
    {{ return({"metrics": {
        "total_file_count": n,
        "constant_file_count": constant.files,
        "null_only_file_count": (ranges | length) - n,
        "average_overlaps": spark_clustering._rounded_average(total.overlaps, n),
        "average_depth": spark_clustering._rounded_average(depths | sum, n),
        "p95_depth": sorted_depths[(95 * n + 99) // 100 - 1],
        "p99_depth": sorted_depths[(99 * n + 99) // 100 - 1],
        "max_depth": sorted_depths[-1],
        "depth_histogram": dict(histogram | dictsort),
    }, "lo_rank": lo_rank, "hi_rank": hi_rank, "overlap_sum": total.overlaps}) }}
{% endmacro %}


{#- Box metric: files overlap when their ranges intersect on every column. Files with no non-NULL
    value in some column are left out (they match no range predicate on it). -#}
{% macro _box_metrics(column_results) %}
    {%- set column_count = column_results | length -%}
    {%- set boxed = [] -%}
    {%- if column_count > 0 -%}
        {%- for first_lo in column_results[0].lo_rank -%}
            {%- set i = loop.index0 -%}
            {%- set in_all = namespace(yes=true) -%}
            {%- for result in column_results if result.lo_rank[i] is none -%}
                {%- set in_all.yes = false -%}
            {%- endfor -%}
            {%- if in_all.yes -%}{%- do boxed.append(i) -%}{%- endif -%}
        {%- endfor -%}
        {%- set all_file_count = column_results[0].lo_rank | length -%}
    {%- else -%}
        {%- set all_file_count = 0 -%}
    {%- endif -%}
    {%- set n = boxed | length -%}
    {%- if n == 0 -%}
        {{ return({"total_file_count": 0, "null_only_file_count": all_file_count,
                   "average_overlaps": 0.0, "max_overlaps": 0, "exact": true}) }}
    {%- endif -%}

    {#- sweep on the column with the fewest overlapping pairs; check the others per pair -#}
    {%- set sweep = namespace(index=0) -%}
    {%- for result in column_results -%}
        {%- if result.overlap_sum < column_results[sweep.index].overlap_sum -%}{%- set sweep.index = loop.index0 -%}{%- endif -%}
    {%- endfor -%}
    {%- set sweep_lo = column_results[sweep.index].lo_rank -%}
    {%- set sweep_hi = column_results[sweep.index].hi_rank -%}
    {%- set other_lo = [] -%}
    {%- set other_hi = [] -%}
    {%- for result in column_results -%}
        {%- if loop.index0 != sweep.index -%}
            {%- do other_lo.append(result.lo_rank) -%}{%- do other_hi.append(result.hi_rank) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set others = range(other_lo | length) | list -%}
    {%- set two_columns = (others | length) == 1 -%}
    {%- set second_lo = other_lo[0] if two_columns else [] -%}
    {%- set second_hi = other_hi[0] if two_columns else [] -%}
    {%- set sweep_order = [] -%}
    {%- for i in boxed -%}{%- do sweep_order.append([sweep_lo[i], i]) -%}{%- endfor -%}
    {%- set sweep_order = sweep_order | sort | map(attribute=1) | list -%}

    {%- set overlap_count = {} -%}
    {%- set max_pairs = var('spark_clustering_box_max_pairs', 1000000) | int -%}
    {#- overlap_sum / 2 bounds the pairs the sweep visits: exact when affordable -#}
    {%- if column_results[sweep.index].overlap_sum // 2 <= max_pairs -%}
        {%- set state = namespace(active=[], ok=true) -%}
        {%- for i in sweep_order -%}
            {%- do overlap_count.update({i: 0}) -%}
            {%- set lo_i = sweep_lo[i] -%}
            {%- set still_open = [] -%}
            {#- active files started before i; those ending before lo_i are closed for good -#}
            {%- if two_columns -%}
                {#- two columns (the common case): the pair test inline, no inner loop -#}
                {%- set second_lo_i = second_lo[i] -%}
                {%- set second_hi_i = second_hi[i] -%}
                {%- for j in state.active if sweep_hi[j] >= lo_i -%}
                    {%- do still_open.append(j) -%}
                    {%- if second_lo[j] <= second_hi_i and second_hi[j] >= second_lo_i -%}
                        {%- do overlap_count.update({i: overlap_count[i] + 1, j: overlap_count[j] + 1}) -%}
                    {%- endif -%}
                {%- endfor -%}
            {%- else -%}
                {%- for j in state.active if sweep_hi[j] >= lo_i -%}
                    {%- do still_open.append(j) -%}
                    {%- set state.ok = true -%}
                    {%- for c in others -%}
                        {%- if other_lo[c][j] > other_hi[c][i] or other_hi[c][j] < other_lo[c][i] -%}
                            {%- set state.ok = false -%}{%- break -%}
                        {%- endif -%}
                    {%- endfor -%}
                    {%- if state.ok -%}
                        {%- do overlap_count.update({i: overlap_count[i] + 1, j: overlap_count[j] + 1}) -%}
                    {%- endif -%}
                {%- endfor -%}
            {%- endif -%}
            {%- do still_open.append(i) -%}
            {%- set state.active = still_open -%}
        {%- endfor -%}
        {%- set counts = overlap_count.values() | list -%}
        {{ return({"total_file_count": n, "null_only_file_count": all_file_count - n,
                   "average_overlaps": spark_clustering._rounded_average(counts | sum, n), "max_overlaps": counts | max,
                   "exact": true}) }}
    {%- else -%}
        {#- too many pairs: a systematic sample of files, each compared with every file -#}
        {%- set sample_size = [1, max_pairs // n] | max -%}
        {%- set sample_size = [sample_size, n] | min -%}
        {%- set counts = [] -%}
        {%- set state = namespace(count=0, ok=true) -%}
        {%- for s in range(sample_size) -%}
            {%- set i = sweep_order[(s * n) // sample_size] -%}
            {%- set state.count = 0 -%}
            {%- set lo_i = sweep_lo[i] -%}
            {%- set hi_i = sweep_hi[i] -%}
            {%- set second_lo_i = second_lo[i] if two_columns else none -%}
            {%- set second_hi_i = second_hi[i] if two_columns else none -%}
            {%- for j in sweep_order -%}
                {%- if sweep_lo[j] > hi_i -%}{%- break -%}{%- endif -%}
                {%- if two_columns -%}
                    {#- two columns: the pair test inline -#}
                    {%- if j != i and sweep_hi[j] >= lo_i and second_lo[j] <= second_hi_i and second_hi[j] >= second_lo_i -%}
                        {%- set state.count = state.count + 1 -%}
                    {%- endif -%}
                {%- elif j != i and sweep_hi[j] >= lo_i -%}
                    {%- set state.ok = true -%}
                    {%- for c in others -%}
                        {%- if other_lo[c][j] > other_hi[c][i] or other_hi[c][j] < other_lo[c][i] -%}
                            {%- set state.ok = false -%}{%- break -%}
                        {%- endif -%}
                    {%- endfor -%}
                    {%- if state.ok -%}{%- set state.count = state.count + 1 -%}{%- endif -%}
                {%- endif -%}
            {%- endfor -%}
            {%- do counts.append(state.count) -%}
        {%- endfor -%}
        {{ return({"total_file_count": n, "null_only_file_count": all_file_count - n,
                   "average_overlaps": spark_clustering._rounded_average(counts | sum, sample_size), "max_overlaps": counts | max,
                   "exact": false, "sampled_file_count": sample_size}) }}
    {%- endif -%}
{% endmacro %}


{#- total / count rounded to `digits` decimals, half away from zero, as Databend rounds its
    averages ((10000.0 * sum / count).round() / 10000.0 in Rust). Jinja's round is Python's, half
    to even: 37 / 32 = 1.15625 would give 1.1562 where Databend reports 1.1563. 0.0 when count is 0. -#}
{% macro _rounded_average(total, count=1, digits=4) %}
    {%- if not count -%}{{ return(0.0) }}{%- endif -%}
    {%- set scale = 10 ** digits -%}
    {%- set scaled = scale * 1.0 * total / count -%}
    {%- set magnitude = scaled | abs -%}
    {%- set whole = magnitude | round(0, 'floor') -%}
    {%- if magnitude - whole >= 0.5 -%}{%- set whole = whole + 1 -%}{%- endif -%}
    {{ return((whole if scaled >= 0 else -whole) / scale) }}
{% endmacro %}
