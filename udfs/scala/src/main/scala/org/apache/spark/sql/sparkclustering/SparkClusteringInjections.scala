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
 * The jar's table functions: the file operations of `recluster()` (table_data_files,
 * table_rewrite_commit, table_rewrite_recover, ...), the table lease, clustered_table's swap, so
 * they run on the driver of whatever Spark executes the SQL (embedded session, Thrift server,
 * cluster) and nothing runs before the query is executed (EXPLAIN does not commit).
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

  /** A whole number given as a number or a string. */
  private def long(function: String, e: Expression, what: String): Long =
    optionalLong(function, e, what).getOrElse(throw SparkClusteringErrors.invalidArgument(function, s"$what must not be empty"))

  /** A whole number, or None for '' (an argument the table's kind does without). */
  private def optionalLong(function: String, e: Expression, what: String): Option[Long] = {
    val text = string(function, e, what).trim
    if (text.isEmpty) None
    else Some(scala.util.Try(text.toLong).getOrElse(
      throw SparkClusteringErrors.invalidArgument(function, s"$what must be a whole number, got '$text'")))
  }

  private def arity(function: String, args: Seq[Expression], expected: Int, shape: String): Unit =
    if (args.length != expected) throw SparkClusteringErrors.wrongNumArgs(function, s"$expected ($shape)", args.length)

  private def info(name: String, usage: String): ExpressionInfo =
    new ExpressionInfo(classOf[TableRewriteCommit].getName, null, name, usage, "", "", "", "table_funcs", "",
      "", "scala_udf")

  val all: Seq[(FunctionIdentifier, ExpressionInfo, TableFunctionBuilder)] = Seq(
    (FunctionIdentifier("table_data_files"),
      info("table_data_files", "table_data_files(table) - the data files of a table of any kind (plain " +
        "parquet/orc, Delta, Iceberg): path, size, modification time, version, log statistics, row deletes, " +
        "whether its last build wrote it"),
      args => {
        arity("table_data_files", args, 1, "table_data_files('db.table')")
        TableDataFiles(string("table_data_files", args(0), "table"))
      }),
    (FunctionIdentifier("table_committed_rows"),
      info("table_committed_rows", "table_committed_rows(table, version) - the rows a Delta/Iceberg table holds " +
        "at a version that replaced all of its data, from the format's own counts (null if unknown, or plain)"),
      args => {
        val f = "table_committed_rows"
        arity(f, args, 2, "table_committed_rows('db.table', version)")
        TableCommittedRows(string(f, args(0), "table"), long(f, args(1), "version"))
      }),
    (FunctionIdentifier("table_rewrite_commit"),
      info("table_rewrite_commit", "table_rewrite_commit(table, lease_token, staging_table, staging_dir, " +
        "file_prefix, read_version, validated_rows, validated_bytes, cluster_by, replaced_files) - commit " +
        "validated staged files in place of the replaced ones (a journal for plain tables, the format's " +
        "rewrite transaction for Delta/Iceberg), then drop the staging table"),
      args => {
        val f = "table_rewrite_commit"
        arity(f, args, 10, "table_rewrite_commit(table, lease_token, staging_table, staging_dir, file_prefix, " +
          "read_version, validated_rows, validated_bytes, 'a,b', array('<size>:<mtime>:<path>', ...))")
        TableRewriteCommit(RewriteRequest(string(f, args(0), "table"), string(f, args(1), "lease_token"),
          string(f, args(2), "staging_table"), string(f, args(3), "staging_dir"), string(f, args(4), "file_prefix"),
          optionalLong(f, args(5), "read_version"), optionalLong(f, args(6), "validated_rows"),
          optionalLong(f, args(7), "validated_bytes"),
          string(f, args(8), "cluster_by").split(",").toSeq.map(_.trim).filter(_.nonEmpty),
          strings(f, args(9), "replaced_files").map(ReplacedFile.parse)))
      }),
    (FunctionIdentifier("table_rewrite_recover"),
      info("table_rewrite_recover", "table_rewrite_recover(table, lease_token, staging_table) - finish or roll " +
        "back what interrupted rewrites of a table left, and drop the leftover staging table"),
      args => {
        val f = "table_rewrite_recover"
        arity(f, args, 3, "table_rewrite_recover('db.table', lease_token, 'db.table__sc_recluster')")
        TableRewriteRecover(string(f, args(0), "table"), string(f, args(1), "lease_token"),
          string(f, args(2), "staging_table"))
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
