package org.apache.spark.sql.sparkclustering

import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo}
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.sparkclustering.commit.DropSidecarTable
import org.apache.spark.sql.sparkclustering.commit.ObserveRowChecksum
import org.apache.spark.sql.sparkclustering.commit.ObservedRowChecksumRows
import org.apache.spark.sql.sparkclustering.commit.ObservedRowChecksums
import org.apache.spark.sql.sparkclustering.commit.ReclusterStagePending
import org.apache.spark.sql.sparkclustering.commit.ReplacedFile
import org.apache.spark.sql.sparkclustering.commit.RewriteRequest
import org.apache.spark.sql.sparkclustering.commit.SwapStagingTable
import org.apache.spark.sql.sparkclustering.commit.TableCommittedRows
import org.apache.spark.sql.sparkclustering.commit.TableDataFiles
import org.apache.spark.sql.sparkclustering.commit.TableFileRows
import org.apache.spark.sql.sparkclustering.commit.TableLeaseAcquire
import org.apache.spark.sql.sparkclustering.commit.TableLeaseCheck
import org.apache.spark.sql.sparkclustering.commit.TableLeaseTryAcquire
import org.apache.spark.sql.sparkclustering.commit.TableLeaseRelease
import org.apache.spark.sql.sparkclustering.commit.TableRewriteCommit
import org.apache.spark.sql.sparkclustering.commit.TableRewriteRecover
import org.apache.spark.sql.sparkclustering.commit.TableStateRows
import org.apache.spark.sql.sparkclustering.curves.CurveKeys
import org.apache.spark.sql.sparkclustering.curves.HilbertKey
import org.apache.spark.sql.sparkclustering.curves.RangeId
import org.apache.spark.sql.sparkclustering.curves.ZOrderKey
import org.apache.spark.sql.sparkclustering.layout.CollectToView
import org.apache.spark.sql.sparkclustering.layout.KdTreeFitRows
import org.apache.spark.sql.sparkclustering.layout.LayoutSimulationRows
import org.apache.spark.sql.sparkclustering.maintenance.MaintenanceRecordRows
import org.apache.spark.sql.sparkclustering.maintenance.SaveMaintenanceRecord
import org.apache.spark.sql.sparkclustering.skipping.DataSkippingStrategy
import org.apache.spark.sql.sparkclustering.stats.TableFileStats
import org.apache.spark.sql.sparkclustering.stats.WriteFileStats
import org.apache.spark.sql.sparkclustering.workload.ObservedWorkloadRows

/**
 * Registers range_id, zorder_key and hilbert_key as native Catalyst functions, the file operations
 * of recluster() as table functions, and planning-time data skipping for parquet/orc scans. Called
 * by the entry point Spark loads, SparkClusteringExtensions (Java, udfs/scala/src/entry/), once it
 * checked that the jar was built for the running Spark line.
 */
object SparkClusteringInjections {
  def inject(extensions: SparkSessionExtensions): Unit = {
    SparkClusteringFunctions.all.foreach(extensions.injectFunction)
    SparkClusteringTableFunctions.all.foreach(extensions.injectTableFunction)
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
private[sparkclustering] object SparkClusteringTableFunctions {
  import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
  import org.apache.spark.sql.catalyst.util.ArrayData

  type TableFunctionBuilder = Seq[Expression] => LogicalPlan

  /** The arguments of one call of `function`, each a constant, read by position; errors name the
   *  function and the argument. */
  private final class Arguments(function: String, args: Seq[Expression]) {
    def size: Int = args.length

    def fail(message: String): Nothing = throw SparkClusteringErrors.invalidArgument(function, message)

    private def constant(i: Int, what: String): Any = {
      if (!args(i).foldable) fail(s"$what must be a constant, got ${args(i).sql}")
      args(i).eval()
    }

    def string(i: Int, what: String): String =
      Option(constant(i, what)).map(_.toString).getOrElse(fail(s"$what must not be NULL"))

    def strings(i: Int, what: String): Seq[String] = constant(i, what) match {
      case a: ArrayData => (0 until a.numElements()).map(k => a.getUTF8String(k).toString)
      case null => Seq.empty
      case _ => fail(s"$what must be an array of strings")
    }

    /** A whole number given as a number or a string. */
    def long(i: Int, what: String): Long = optionalLong(i, what).getOrElse(fail(s"$what must not be empty"))

    /** A whole number, or None for '' (an argument the table's kind does without). */
    def optionalLong(i: Int, what: String): Option[Long] = {
      val text = string(i, what).trim
      if (text.isEmpty) None
      else Some(scala.util.Try(text.toLong).getOrElse(fail(s"$what must be a whole number, got '$text'")))
    }
  }

  /** A table function taking `arity` arguments; `call` shows a call in the error of a wrong count. */
  private def function(name: String, arity: Int, call: String, usage: String)(
      build: Arguments => LeafRunnableCommand): (FunctionIdentifier, ExpressionInfo, TableFunctionBuilder) =
    withArguments(name, arity, usage) { a =>
      if (a.size != arity) throw SparkClusteringErrors.wrongNumArgs(name, s"$arity ($call)", a.size)
      build(a)
    }

  /** `most`: the most arguments the function takes. One more is the call id (CallOnce): the call
   *  runs once however often its statement is analysed. */
  private def withArguments(name: String, most: Int, usage: String)(
      build: Arguments => LeafRunnableCommand): (FunctionIdentifier, ExpressionInfo, TableFunctionBuilder) =
    (FunctionIdentifier(name),
      new ExpressionInfo(classOf[TableRewriteCommit].getName, null, name, s"$name$usage", "", "", "", "table_funcs", "",
        "", "scala_udf"),
      args =>
        if (args.length == most + 1) {
          val callId = new Arguments(name, args.drop(most)).string(0, "the call id")
          if (callId.trim.isEmpty) throw SparkClusteringErrors.invalidArgument(name, "the call id must not be empty")
          CallOnce(callId, build(new Arguments(name, args.take(most))))
        } else {
          build(new Arguments(name, args))
        })

  val all: Seq[(FunctionIdentifier, ExpressionInfo, TableFunctionBuilder)] = Seq(
    function("table_data_files", 1, "table_data_files('db.table')",
      "(table) - the data files of a table of any kind (plain parquet/orc, Delta, Iceberg): path, size, " +
        "modification time, version, log statistics, row deletes, whether its last build wrote it") { a =>
      TableDataFiles(a.string(0, "table"))
    },
    function("table_file_rows", 4, "table_file_rows('db.table', version, array(path, ...), 'view')",
      "(table, version, files, view) - make the session's temporary view `view` the rows of exactly the listed " +
        "data files of a table of any kind at `version` ('' for now), read without opening any other file of " +
        "the table (what recluster() rewrites)") { a =>
      TableFileRows(a.string(0, "table"), a.optionalLong(1, "version"), a.strings(2, "files"), a.string(3, "view"))
    },
    function("table_file_stats", 2, "table_file_stats('db.table', array('a', 'b'))",
      "(table, columns) - file_stats of a plain parquet/orc table: per data file its rows and per column " +
        "min, max and NULL count, exact, from the statistics sidecar and the footers; only the files whose " +
        "metadata is not exact are measured from their rows") { a =>
      TableFileStats(a.string(0, "table"), a.strings(1, "columns"))
    },
    function("table_state", 1, "table_state('db.table')",
      "(table) - a cheap token of the table's data (Delta: the version, Iceberg: the snapshot id of the last " +
        "commit that changed files; plain: a digest of its data files' listing) and whether an interrupted " +
        "rewrite awaits recovery (state, pending)") { a =>
      TableStateRows(a.string(0, "table"))
    },
    function("maintenance_record", 1, "maintenance_record('db.table')",
      "(table) - the table's maintenance record (JSON object text; '' when none), kept beside its observed " +
        "workload") { a =>
      MaintenanceRecordRows(a.string(0, "table"))
    },
    function("save_maintenance_record", 2, "save_maintenance_record('db.table', '{...}')",
      "(table, record) - replace the table's maintenance record by a JSON object, never seen half written") { a =>
      SaveMaintenanceRecord(a.string(0, "table"), a.string(1, "record"))
    },
    function("table_committed_rows", 2, "table_committed_rows('db.table', version)",
      "(table, version) - the rows a Delta/Iceberg table holds at a version that replaced all of its data, " +
        "from the format's own counts (null if unknown, or plain)") { a =>
      TableCommittedRows(a.string(0, "table"), a.long(1, "version"))
    },
    function("table_rewrite_commit", 10, "table_rewrite_commit(table, lease_token, staging_table, staging_dir, " +
        "file_prefix, read_version, validated_rows, validated_bytes, 'a,b', array('<size>:<mtime>:<path>', ...))",
      "(table, lease_token, staging_table, staging_dir, file_prefix, read_version, validated_rows, " +
        "validated_bytes, cluster_by, replaced_files) - commit validated staged files in place of the replaced " +
        "ones (a journal for plain tables, the format's rewrite transaction for Delta/Iceberg), then drop the " +
        "staging table") { a =>
      TableRewriteCommit(RewriteRequest(a.string(0, "table"), a.string(1, "lease_token"), a.string(2, "staging_table"),
        a.string(3, "staging_dir"), a.string(4, "file_prefix"), a.optionalLong(5, "read_version"),
        a.optionalLong(6, "validated_rows"), a.optionalLong(7, "validated_bytes"),
        a.string(8, "cluster_by").split(",").toSeq.map(_.trim).filter(_.nonEmpty),
        a.strings(9, "replaced_files").map(ReplacedFile.parse)))
    },
    function("table_rewrite_recover", 3, "table_rewrite_recover('db.table', lease_token, 'db.table__sc_recluster')",
      "(table, lease_token, staging_table) - finish or roll back what interrupted rewrites of a table left, " +
        "and drop the leftover staging table") { a =>
      TableRewriteRecover(a.string(0, "table"), a.string(1, "lease_token"), a.string(2, "staging_table"))
    },
    function("recluster_stage_pending", 8, "recluster_stage_pending(table, lease_token, staging_dir, file_prefix, " +
        "select_sql, array(column, ...), array(partition column, ...), 'parquet' | 'orc')",
      "(table, lease_token, staging_dir, file_prefix, select_sql, columns, partition_columns, format) - write " +
        "a recluster's files on S3A as pending uploads to their final names, with the checksum of the rows " +
        "written") { a =>
      ReclusterStagePending(a.string(0, "table"), a.string(1, "lease_token"), a.string(2, "staging_dir"),
        a.string(3, "file_prefix"), a.string(4, "select_sql"), a.strings(5, "columns"),
        a.strings(6, "partition_columns"), a.string(7, "format"))
    },
    function("table_lease_acquire", 4, "table_lease_acquire('db.table', owner, wait_seconds, 'name' | 'table')",
      "(table, owner, wait_seconds, scope) - take the table's writer lease (scope 'name' or 'table'), waiting " +
        "up to wait_seconds for its holder") { a =>
      TableLeaseAcquire(a.string(0, "table"), a.string(1, "owner"), a.string(2, "wait_seconds").toDouble,
        a.string(3, "scope"))
    },
    function("table_lease_try_acquire", 4, "table_lease_try_acquire('db.table', owner, wait_seconds, 'name' | 'table')",
      "(table, owner, wait_seconds, scope) - as table_lease_acquire, but a lease still held when the wait runs " +
        "out gives a row with a null lease_token and the holder in `busy` instead of an error") { a =>
      TableLeaseTryAcquire(a.string(0, "table"), a.string(1, "owner"), a.string(2, "wait_seconds").toDouble,
        a.string(3, "scope"))
    },
    function("table_lease_check", 2, "table_lease_check(lease_token, what)",
      "(lease_token, what) - fail unless the lease is still held") { a =>
      TableLeaseCheck(a.string(0, "lease_token"), a.string(1, "what"))
    },
    function("table_lease_release", 2,
      "table_lease_release(lease_token, false) or table_lease_release(owner_prefix, true)",
      "(token_or_owner_prefix, by_owner) - give a lease up") { a =>
      TableLeaseRelease(a.string(0, "token_or_owner_prefix"), a.string(1, "by_owner").toBoolean)
    },
    function("drop_sidecar_table", 1, "drop_sidecar_table('db.t__sc_backup')",
      "(table) - drop a __sc_backup/__sc_staging/__sc_recluster table with its files") { a =>
      DropSidecarTable(a.string(0, "table"))
    },
    function("swap_staging_table", 3, "swap_staging_table('db.t', lease_token, what)",
      "(table, lease_token, what) - replace table by its validated __sc_staging table (backup rename, " +
        "promote, backup drop) under the lease, then release it") { a =>
      SwapStagingTable(a.string(0, "table"), a.string(1, "lease_token"), a.string(2, "what"))
    },
    function("observed_row_checksum", 1, "observed_row_checksum(token)",
      "(token) - the checksum (row_count, hash_sum, hash_xor: as row_checksum) of the rows the write whose query " +
        "called observe_row_checksum(token, ...) read, taken once") { a =>
      ObservedRowChecksumRows(a.string(0, "token"))
    },
    function("observed_workload", 1, "observed_workload('db.table')",
      "(table) - the boxes {column: [lo, hi]} the scans of a clustered table filtered on (box JSON, " +
        "queries, last_seen), recorded at planning time") { a =>
      ObservedWorkloadRows(a.string(0, "table"))
    },
    function("kdtree_fit", 4, "kdtree_fit(rows_sql, boxes_sql, files, array('widest', 'workload'))",
      "(rows_sql, boxes_sql, files, splits) - the k-d tree layouts of cluster_method auto fit on the driver " +
        "in one pass: one row per node (tree, node, column, literal)") { a =>
      KdTreeFitRows(a.string(0, "rows_sql"), a.string(1, "boxes_sql"), a.long(2, "files").toInt, a.strings(3, "splits"))
    },
    function("collect_to_view", 2, "collect_to_view('search_rows', 'select ...')",
      "(view, rows_sql) - the rows of rows_sql collected to the driver and kept as the temporary view `view` " +
        "(cluster_method auto's search rows): one row (rows)") { a =>
      CollectToView(a.string(0, "view"), a.string(1, "rows_sql"))
    },
    function("simulate_layouts", 4, "simulate_layouts(rows_sql, boxes_sql, files, array('key', 'file'))",
      "(rows_sql, boxes_sql, files, placements) - the candidate layouts of cluster_method auto simulated on the " +
        "driver: one row per candidate (candidate, scanned: the workload boxes meeting each of its files, summed)") { a =>
      LayoutSimulationRows(a.string(0, "rows_sql"), a.string(1, "boxes_sql"), a.long(2, "files").toInt, a.strings(3, "placements"))
    },
    withArguments("write_file_stats", 3, "(table[, rebuild[, own_write]]) - write the table's file-statistics sidecar " +
        "(exact per-file min/max/null counts for data skipping); rebuild = true recomputes every file; own_write = " +
        "true: this session's Spark wrote every file to cover just before (parquet string bounds from the footers)") { a =>
      if (a.size < 1 || a.size > 3) {
        throw SparkClusteringErrors.wrongNumArgs("write_file_stats", "1 to 3 (write_file_stats('db.table', false))", a.size)
      }
      def flag(i: Int, name: String): Boolean = {
        val v = if (a.size <= i) "false" else a.string(i, name).toLowerCase
        if (v != "true" && v != "false") a.fail(s"$name must be true or false, got '$v'")
        v.toBoolean
      }
      WriteFileStats(a.string(0, "table"), flag(1, "rebuild"), flag(2, "own_write"))
    }
  )
}

private[sparkclustering] object SparkClusteringFunctions {

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

  val observeRowChecksum: FunctionBuilder = args => {
    if (args.length != 3) {
      throw SparkClusteringErrors.wrongNumArgs("observe_row_checksum",
        "3 (observe_row_checksum('token', cast(hash(a, b) as bigint), xxhash64(a, b)))", args.length)
    }
    if (!args.head.foldable || args.head.eval() == null) {
      throw SparkClusteringErrors.invalidArgument("observe_row_checksum",
        s"the token must be a constant string, got ${args.head.sql}")
    }
    val token = args.head.eval().toString
    ObserveRowChecksum(token, args(1), args(2), ObservedRowChecksums.accumulator(token))
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
      hilbertKey),
    (FunctionIdentifier("observe_row_checksum"),
      info(classOf[ObserveRowChecksum].getName, "observe_row_checksum",
        "observe_row_checksum(token, hash, xxhash) - true for every row; adds the row to the checksum kept under " +
          "token (rows, sum of hash, xor of xxhash), which observed_row_checksum(token) reads once the query ran: " +
          "how a recluster's write checks the rows it read without reading them again.",
        """
          |    Arguments:
          |      * token - constant STRING naming the checksum.
          |      * hash - BIGINT: cast(hash(columns) as bigint), as row_checksum takes it.
          |      * xxhash - BIGINT: xxhash64(columns).
          |  """.stripMargin,
        ""),
      observeRowChecksum)
  )
}
