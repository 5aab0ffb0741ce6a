package org.apache.spark.sql.sparkclustering

import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo}

/**
 * Registers range_id, zorder_key and hilbert_key as native Catalyst functions, the file operations
 * of recluster() as table functions, and planning-time data skipping for parquet/orc scans. Called
 * by the entry point Spark loads, SparkClusteringExtensions (Java, udfs/scala/src/entry/), once it
 * checked that the jar was built for the running Spark line.
 */
object SparkClusteringInjections {
  def inject(extensions: SparkSessionExtensions): Unit = {
    SparkClusteringFunctions.all.foreach(extensions.injectFunction)
    ReclusterTableFunctions.all.foreach(extensions.injectTableFunction)
    // planning-time data skipping (DataSkipping.scala); off with spark.sparkclustering.skipping.enabled=false
    extensions.injectPlannerStrategy(DataSkippingStrategy)
  }
}

/**
 * recluster_data_files / recluster_commit / recluster_recover: the file operations of
 * `recluster()` as table functions, so they run on the driver of whatever Spark executes the SQL
 * (embedded session, Thrift server, cluster) and nothing runs before the query is executed
 * (EXPLAIN does not commit).
 */
object ReclusterTableFunctions {
  import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
  import org.apache.spark.sql.catalyst.util.ArrayData

  type TableFunctionBuilder = Seq[Expression] => LogicalPlan

  private def constant(function: String, e: Expression, what: String): Any = {
    if (!e.foldable) {
      throw SparkClusteringErrors.invalidArgument(function, s"$what must be a constant, got ${e.sql}")
    }
    e.eval()
  }

  private def string(function: String, e: Expression, what: String): String =
    Option(constant(function, e, what)).map(_.toString).getOrElse(
      throw SparkClusteringErrors.invalidArgument(function, s"$what must not be NULL"))

  private def strings(function: String, e: Expression, what: String): Seq[String] =
    constant(function, e, what) match {
      case a: ArrayData => (0 until a.numElements()).map(i => a.getUTF8String(i).toString)
      case null => Seq.empty
      case other => throw SparkClusteringErrors.invalidArgument(function, s"$what must be an array of strings")
    }

  private def arity(function: String, args: Seq[Expression], expected: Int, shape: String): Unit =
    if (args.length != expected) throw SparkClusteringErrors.wrongNumArgs(function, s"$expected ($shape)", args.length)

  private def info(name: String, usage: String): ExpressionInfo =
    new ExpressionInfo(classOf[ReclusterCommit].getName, null, name, usage, "", "", "", "table_funcs", "",
      "", "scala_udf")

  val all: Seq[(FunctionIdentifier, ExpressionInfo, TableFunctionBuilder)] = Seq(
    (FunctionIdentifier("recluster_data_files"),
      info("recluster_data_files", "recluster_data_files(table) - the table's data files (path, size, modification time)"),
      args => {
        arity("recluster_data_files", args, 1, "recluster_data_files('db.table')")
        ReclusterDataFiles(string("recluster_data_files", args(0), "table"))
      }),
    (FunctionIdentifier("recluster_commit"),
      info("recluster_commit", "recluster_commit(table, lease_token, staging_dir, file_prefix, " +
        "validated_bytes, replaced_files) - swap validated staged files for the replaced ones"),
      args => {
        val f = "recluster_commit"
        arity(f, args, 6, "recluster_commit(table, lease_token, staging_dir, file_prefix, validated_bytes, " +
          "array('<size>:<mtime>:<path>', ...))")
        ReclusterCommit(string(f, args(0), "table"), string(f, args(1), "lease_token"),
          string(f, args(2), "staging_dir"), string(f, args(3), "file_prefix"),
          string(f, args(4), "validated_bytes").toLong, strings(f, args(5), "replaced_files"))
      }),
    (FunctionIdentifier("recluster_stage_pending"),
      info("recluster_stage_pending", "recluster_stage_pending(table, lease_token, staging_dir, file_prefix, " +
        "select_sql, columns, partition_columns, format) - write a recluster's files on S3A as pending uploads " +
        "to their final names, with the checksum of the rows written"),
      args => {
        val f = "recluster_stage_pending"
        arity(f, args, 8, "recluster_stage_pending(table, lease_token, staging_dir, file_prefix, select_sql, " +
          "array(column, ...), array(partition column, ...), 'parquet' | 'orc')")
        ReclusterStagePending(string(f, args(0), "table"), string(f, args(1), "lease_token"),
          string(f, args(2), "staging_dir"), string(f, args(3), "file_prefix"), string(f, args(4), "select_sql"),
          strings(f, args(5), "columns"), strings(f, args(6), "partition_columns"), string(f, args(7), "format"))
      }),
    (FunctionIdentifier("recluster_recover"),
      info("recluster_recover", "recluster_recover(table, lease_token, staging_table) - finish or roll " +
        "back interrupted commits"),
      args => {
        val f = "recluster_recover"
        arity(f, args, 3, "recluster_recover('db.table', lease_token, 'db.table__sc_recluster')")
        ReclusterRecover(string(f, args(0), "table"), string(f, args(1), "lease_token"),
          string(f, args(2), "staging_table"))
      }),
    (FunctionIdentifier("format_data_files"),
      info("format_data_files", "format_data_files(table, format) - a Delta/Iceberg table's data files (path, " +
        "size, modification time, log statistics, row deletes) and version, from the format's metadata"),
      args => {
        arity("format_data_files", args, 2, "format_data_files('db.table', 'delta' | 'iceberg')")
        FormatDataFiles(string("format_data_files", args(0), "table"), string("format_data_files", args(1), "format"))
      }),
    (FunctionIdentifier("format_committed_rows"),
      info("format_committed_rows", "format_committed_rows(table, format, version) - the rows a Delta/Iceberg " +
        "table holds at a version that replaced all of its data, from the format's own counts (null if unknown)"),
      args => {
        val f = "format_committed_rows"
        arity(f, args, 3, "format_committed_rows('db.table', 'delta' | 'iceberg', version)")
        FormatCommittedRows(string(f, args(0), "table"), string(f, args(1), "format"), string(f, args(2), "version").toLong)
      }),
    (FunctionIdentifier("format_rewrite_commit"),
      info("format_rewrite_commit", "format_rewrite_commit(table, format, lease_token, staging_table, staging_dir, " +
        "read_version, validated_rows, cluster_by, replaced_files) - commit a staging table's files in place of " +
        "the replaced ones in one format rewrite transaction"),
      args => {
        val f = "format_rewrite_commit"
        arity(f, args, 9, "format_rewrite_commit(table, format, lease_token, staging_table, staging_dir, " +
          "read_version, validated_rows, 'a,b', array(path, ...))")
        FormatRewriteCommit(string(f, args(0), "table"), string(f, args(1), "format"), string(f, args(2), "lease_token"),
          string(f, args(3), "staging_table"), string(f, args(4), "staging_dir"),
          string(f, args(5), "read_version").toLong, string(f, args(6), "validated_rows").toLong,
          string(f, args(7), "cluster_by").split(",").toSeq.filter(_.nonEmpty), strings(f, args(8), "replaced_files"))
      }),
    (FunctionIdentifier("format_rewrite_recover"),
      info("format_rewrite_recover", "format_rewrite_recover(table, format, lease_token, staging_table) - remove " +
        "what an interrupted Delta/Iceberg recluster left"),
      args => {
        val f = "format_rewrite_recover"
        arity(f, args, 4, "format_rewrite_recover('db.table', format, lease_token, 'db.table__sc_recluster')")
        FormatRewriteRecover(string(f, args(0), "table"), string(f, args(1), "format"), string(f, args(2), "lease_token"),
          string(f, args(3), "staging_table"))
      }),
    (FunctionIdentifier("table_lease_acquire"),
      info("table_lease_acquire", "table_lease_acquire(table, owner, wait_seconds, scope) - take the table's " +
        "writer lease (scope 'name' or 'table'), waiting up to wait_seconds for its holder"),
      args => {
        val f = "table_lease_acquire"
        arity(f, args, 4, "table_lease_acquire('db.table', owner, wait_seconds, 'name' | 'table')")
        TableLeaseAcquire(string(f, args(0), "table"), string(f, args(1), "owner"),
          string(f, args(2), "wait_seconds").toDouble, string(f, args(3), "scope"))
      }),
    (FunctionIdentifier("table_lease_check"),
      info("table_lease_check", "table_lease_check(lease_token, what) - fail unless the lease is still held"),
      args => {
        arity("table_lease_check", args, 2, "table_lease_check(lease_token, what)")
        TableLeaseCheck(string("table_lease_check", args(0), "lease_token"), string("table_lease_check", args(1), "what"))
      }),
    (FunctionIdentifier("table_lease_release"),
      info("table_lease_release", "table_lease_release(token_or_owner_prefix, by_owner) - give a lease up"),
      args => {
        val f = "table_lease_release"
        arity(f, args, 2, "table_lease_release(lease_token, false) or table_lease_release(owner_prefix, true)")
        TableLeaseRelease(string(f, args(0), "token_or_owner_prefix"), string(f, args(1), "by_owner").toBoolean)
      }),
    (FunctionIdentifier("drop_sidecar_table"),
      info("drop_sidecar_table", "drop_sidecar_table(table) - drop a __sc_backup/__sc_staging/__sc_recluster " +
        "table with its files"),
      args => {
        arity("drop_sidecar_table", args, 1, "drop_sidecar_table('db.t__sc_backup')")
        DropSidecarTable(string("drop_sidecar_table", args(0), "table"))
      }),
    (FunctionIdentifier("swap_staging_table"),
      info("swap_staging_table", "swap_staging_table(table, lease_token, what) - replace table by its validated " +
        "__sc_staging table (backup rename, promote, backup drop) under the lease, then release it"),
      args => {
        val f = "swap_staging_table"
        arity(f, args, 3, "swap_staging_table('db.t', lease_token, what)")
        SwapStagingTable(string(f, args(0), "table"), string(f, args(1), "lease_token"), string(f, args(2), "what"))
      }),
    (FunctionIdentifier("observed_workload"),
      info("observed_workload", "observed_workload(table) - the boxes {column: [lo, hi]} the scans of a " +
        "clustered table filtered on (box JSON, queries, last_seen), recorded at planning time"),
      args => {
        arity("observed_workload", args, 1, "observed_workload('db.table')")
        ObservedWorkloadRows(string("observed_workload", args(0), "table"))
      }),
    (FunctionIdentifier("kdtree_fit"),
      info("kdtree_fit", "kdtree_fit(rows_sql, boxes_sql, files, splits) - the k-d tree layouts of cluster_method " +
        "auto fit on the driver in one pass: one row per node (tree, node, column, literal)"),
      args => {
        val f = "kdtree_fit"
        arity(f, args, 4, "kdtree_fit(rows_sql, boxes_sql, files, array('widest', 'workload'))")
        val files = string(f, args(2), "files")
        KdTreeFitRows(string(f, args(0), "rows_sql"), string(f, args(1), "boxes_sql"),
          scala.util.Try(files.toInt).getOrElse(throw SparkClusteringErrors.invalidArgument(f, s"files must be a whole number, got $files")),
          strings(f, args(3), "splits"))
      }),
    (FunctionIdentifier("write_file_stats"),
      info("write_file_stats", "write_file_stats(table[, rebuild]) - write the table's file-statistics " +
        "sidecar (exact per-file min/max/null counts for data skipping); rebuild = true recomputes every file"),
      args => {
        val f = "write_file_stats"
        if (args.isEmpty || args.length > 2) {
          throw SparkClusteringErrors.wrongNumArgs(f, "1 or 2 (write_file_stats('db.table', false))", args.length)
        }
        val rebuild = if (args.length < 2) "false" else string(f, args(1), "rebuild").toLowerCase
        if (rebuild != "true" && rebuild != "false") {
          throw SparkClusteringErrors.invalidArgument(f, s"rebuild must be true or false, got '$rebuild'")
        }
        WriteFileStats(string(f, args(0), "table"), rebuild.toBoolean)
      })
  )
}

object SparkClusteringFunctions {

  type FunctionBuilder = Seq[Expression] => Expression

  private def info(className: String, name: String, usage: String, arguments: String,
      examples: String): ExpressionInfo =
    new ExpressionInfo(className, null, name, usage, arguments, examples, "", "misc_funcs", "", "",
      "scala_udf")

  val rangeId: FunctionBuilder = args => {
    if (args.length != 2) {
      throw SparkClusteringErrors.wrongNumArgs("range_id",
        "2 (call range_id(value, boundaries), e.g. range_id(price, array(10.0D, 20.0D, 50.0D)))",
        args.length)
    }
    RangeId(args(0), args(1))
  }

  private def curveBuilder(name: String, make: Seq[Expression] => Expression): FunctionBuilder = args => {
    if (args.length < 2 || args.length > CurveKeys.MaxIds + 1) {
      throw SparkClusteringErrors.wrongNumArgs(name,
        s"2 to ${CurveKeys.MaxIds + 1} (call $name(bits, id_1, ..., id_n) with a bits literal and " +
          s"1 to ${CurveKeys.MaxIds} ids, e.g. $name(10, range_id(a, bounds_a), range_id(b, bounds_b)))",
        args.length)
    }
    make(args)
  }

  val zorderKey: FunctionBuilder = curveBuilder("zorder_key", ZOrderKey(_))
  val hilbertKey: FunctionBuilder = curveBuilder("hilbert_key", HilbertKey(_))

  private val curveArguments =
    """
      |    Arguments:
      |      * bits - constant INT in [1, 31]: bits per id; ids must lie in [0, 2^bits).
      |      * id_1, ..., id_n - 1 to 32 integral range ids (usually range_id results); id_1 is the
      |          most significant dimension. Any NULL id gives NULL.
      |  """.stripMargin

  private val curveResult =
    "BIGINT when n * bits <= 63, else BINARY of ceil(n * bits / 8) bytes (big-endian, so BINARY " +
      "order is key order)."

  val all: Seq[(FunctionIdentifier, ExpressionInfo, FunctionBuilder)] = Seq(
    (FunctionIdentifier("range_id"),
      info(classOf[RangeId].getName, "range_id",
        "range_id(value, boundaries) - 0 when value is NULL, else 1 + the number of boundaries <= value " +
          "(Spark ordering: NaN is the largest double). Returns INT in [0, size(boundaries) + 1].",
        """
          |    Arguments:
          |      * value - any orderable value.
          |      * boundaries - non-NULL ARRAY of the value's type, sorted ascending, no NULL elements.
          |  """.stripMargin,
        """
          |    Examples:
          |      > SELECT range_id(15, array(10, 20, 20, 30));
          |       2
          |  """.stripMargin),
      rangeId),
    (FunctionIdentifier("zorder_key"),
      info(classOf[ZOrderKey].getName, "zorder_key",
        s"zorder_key(bits, id_1, ..., id_n) - Z-order (Morton) key: the ids' bits interleaved. $curveResult",
        curveArguments,
        """
          |    Examples:
          |      > SELECT zorder_key(2, 1, 2);
          |       6
          |  """.stripMargin),
      zorderKey),
    (FunctionIdentifier("hilbert_key"),
      info(classOf[HilbertKey].getName, "hilbert_key",
        s"hilbert_key(bits, id_1, ..., id_n) - Hilbert curve key (Skilling's transform). $curveResult",
        curveArguments,
        """
          |    Examples:
          |      > SELECT hilbert_key(1, 1, 1);
          |       2
          |  """.stripMargin),
      hilbertKey)
  )
}
