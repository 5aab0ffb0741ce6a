package org.apache.spark.sql.sparkclustering

import java.util.concurrent.TimeUnit.NANOSECONDS

import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileStatus, Path}

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, PlanExpression}
import org.apache.spark.sql.catalyst.planning.ScanOperation
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.connector.read.streaming.SparkDataStream
import org.apache.spark.sql.execution.{FileSourceScanExec, SQLExecution, SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.datasources._
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.collection.BitSet

/**
 * Planning-time data skipping for plain parquet/orc tables: a scan reads only the files whose
 * per-file min/max/null counts (the package's sidecar, else the file footers; FileStatsStore) do
 * not prove that no row passes the scan's data filters.
 *
 * How it is wired (the way Delta prunes files in its file index): a planner strategy that runs
 * before Spark's FileSourceStrategy wraps the relation's FileIndex in a DataSkippingFileIndex, lets
 * FileSourceStrategy plan the scan as usual, and swaps the FileSourceScanExec for a
 * DataSkippingScanExec (the same node plus skipping metrics and EXPLAIN text). Spark lists the
 * files through `FileIndex.listFiles(partitionFilters, dataFilters)`: partition pruning happens
 * first in the wrapped index, then the files are pruned with the very filters the scan applies to
 * its rows, so a skipped file is one whose rows the scan would have dropped anyway.
 */
object DataSkipping extends Logging {
  val EnabledKey = "spark.sparkclustering.skipping.enabled"

  def enabled(conf: SQLConf): Boolean = conf.getConfString(EnabledKey, "true").trim.toBoolean

  // each distinct failure once per JVM (bounded), so a failing table does not flood the log
  private val logged = java.util.concurrent.ConcurrentHashMap.newKeySet[String]()

  /** Skipping failed where it must not fail a query: say so once, keep the files. */
  private[sparkclustering] def logFailureOnce(table: String, what: String, e: Throwable): Unit = {
    val key = s"$table|$what|${e.getClass.getName}|${e.getMessage}"
    if (logged.size < 1000 && logged.add(key)) {
      logWarning(s"spark_clustering data skipping: $table: $what failed, so the files concerned are read " +
        s"(answers are unchanged): $e", e)
    }
  }
}

/** Plans scans of eligible file-source relations with a DataSkippingFileIndex (see DataSkipping). */
case class DataSkippingStrategy(spark: SparkSession) extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case ScanOperation(_, _, filters, l @ LogicalRelation(fs: HadoopFsRelation, _, table, false, None)) =>
      // what the scan filters on, for cluster_workload: observed (ObservedWorkload; never throws)
      if (filters.nonEmpty) ObservedWorkload.record(spark, table, filters)
      if (DataSkipping.enabled(spark.sessionState.conf) && eligible(fs) &&
          FileSkippingPredicate.usable(filters).nonEmpty) {
        // planning never fails because of the rule: anything it cannot plan, Spark plans as usual
        try skipping(plan, l, fs, table) catch {
          case NonFatal(e) =>
            DataSkipping.logFailureOnce(table.map(_.identifier.unquotedString).getOrElse(""), "planning", e)
            Nil
        }
      } else Nil
    case _ => Nil
  }

  private def skipping(plan: LogicalPlan, l: LogicalRelation, fs: HadoopFsRelation,
      table: Option[CatalogTable]): Seq[SparkPlan] = {
    val format = ReadContext.formatOf(fs).get
    // Partition pruning (PruneFileSourcePartitions) leaves an index rooted at the selected
    // partition directories; the sidecar lives in the table's directory, so it is a root too.
    val tableRoot = table.flatMap(t => Option(t.location)).map(new Path(_)).toSeq
    val index = new DataSkippingFileIndex(fs.location, () => ReadContext.forScan(fs, format), fs.dataSchema,
      table.map(_.identifier.unquotedString).getOrElse(fs.location.rootPaths.mkString(", ")), tableRoot)
    val wrapped = l.copy(relation = fs.copy(location = index)(fs.sparkSession))
    val rewritten = plan.transformUp { case r: LogicalRelation if r eq l => wrapped }
    FileSourceStrategy(rewritten).map(_.transformUp {
      case s: FileSourceScanExec if !s.isInstanceOf[DataSkippingScanExec] && (s.relation.location eq index) =>
        DataSkippingScanExec(s)
    })
  }

  private def eligible(fs: HadoopFsRelation): Boolean =
    ReadContext.formatOf(fs).isDefined && (fs.location match {
      case _: CatalogFileIndex | _: PartitioningAwareFileIndex => true
      case _ => false // Delta, streaming sinks, other indexes keep their own listing
    })
}

/** What one listing kept and why; one per scan. `notApplied`: why no file was tested, when none
 *  was. */
final case class SkippingResult(filesTotal: Int, filesKept: Int, bytesTotal: Long, bytesKept: Long,
    fromSidecar: Int, fromFooter: Int, unknown: Int, statsNanos: Long, notApplied: Option[String]) {
  def applied: Boolean = notApplied.isEmpty
  def filesSkipped: Int = filesTotal - filesKept

  def describe: String = notApplied match {
    case Some(why) => s"off ($why; kept all $filesTotal files)"
    case None => s"kept $filesKept of $filesTotal files (stats: sidecar $fromSidecar, footers $fromFooter, " +
      s"unknown $unknown; ${NANOSECONDS.toMillis(statsNanos)} ms)"
  }
}

/**
 * The relation's own index, then the files whose statistics prove no row can pass `dataFilters`
 * dropped. A file without proven statistics is kept. `readContext` gives how the scan's reader
 * reads the files, taken when the scan lists them (as the reader takes its settings then).
 */
class DataSkippingFileIndex(val delegate: FileIndex, readContext: () => ReadContext, val dataSchema: StructType,
    val tableName: String, val tableRoots: Seq[Path] = Nil) extends FileIndex with Logging {

  // One index per planned scan, so this holds one or two entries: the listing for EXPLAIN and the
  // scan's own listing are the same call, answered once.
  @volatile private var listings = Map.empty[Seq[Expression], (Seq[PartitionDirectory], SkippingResult)]

  /** The listing for these (static) filters, running it if it has not run. */
  def listing(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): (Seq[PartitionDirectory], SkippingResult) = {
    val key = (partitionFilters ++ dataFilters).map(_.canonicalized)
    listings.getOrElse(key, synchronized {
      listings.getOrElse(key, {
        val listed = prune(partitionFilters, dataFilters)
        listings = listings + (key -> listed)
        listed
      })
    })
  }

  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] =
    listing(partitionFilters, dataFilters)._1

  private def prune(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): (Seq[PartitionDirectory], SkippingResult) = {
    val directories = delegate.listFiles(partitionFilters, dataFilters)
    val files = directories.flatMap(_.files).toIndexedSeq
    val filters = FileSkippingPredicate.usable(dataFilters)
    val spark = SparkSession.active
    def keepAll(why: String) = (directories, SkippingResult(files.size, files.size, files.map(_.getLen).sum,
      files.map(_.getLen).sum, 0, 0, 0, 0L, Some(why)))
    val (kept, result) =
      if (files.isEmpty) keepAll("no files")
      else if (filters.isEmpty) keepAll("no filter on the data columns")
      else if (!DataSkipping.enabled(spark.sessionState.conf)) keepAll(s"${DataSkipping.EnabledKey}=false")
      else try {
        val ctx = readContext()
        if (ctx.unmodelled.nonEmpty) keepAll(s"read setting not modelled: ${ctx.unmodelled.mkString(", ")}")
        else {
          val start = System.nanoTime()
          val lookup = FileStatsStore.statsFor(spark, (rootPaths ++ tableRoots).distinct, ctx, dataSchema,
            files.map(_.fileStatus))
          val mayMatch = FileSkippingPredicate.compile(filters, ctx.statsKey(dataSchema))
          // lookup.stats is aligned with `files`, the directories' files in order; a file whose
          // test fails is read
          val keep = lookup.stats.iterator.map { stats =>
            try mayMatch(stats) catch {
              case NonFatal(e) => DataSkipping.logFailureOnce(tableName, "a file's test", e); true
            }
          }
          val kept = directories.map(d => d.copy(files = d.files.filter(_ => keep.next())))
            .filter(_.files.nonEmpty)
          val keptFiles = kept.flatMap(_.files)
          (kept, SkippingResult(files.size, keptFiles.size, files.map(_.getLen).sum, keptFiles.map(_.getLen).sum,
            lookup.fromSidecar, lookup.fromFooter, lookup.unknown, System.nanoTime() - start, None))
        }
      } catch {
        case NonFatal(e) =>
          DataSkipping.logFailureOnce(tableName, "the listing's statistics", e)
          keepAll(s"failed: ${e.getClass.getSimpleName}")
      }
    logInfo(s"spark_clustering data skipping: $tableName: ${result.describe}; filters: " +
      filters.map(_.sql).mkString(" AND "))
    (kept, result)
  }

  override def rootPaths: Seq[Path] = delegate.rootPaths
  override def inputFiles: Array[String] = delegate.inputFiles
  override def refresh(): Unit = { listings = Map.empty; delegate.refresh() }
  override def sizeInBytes: Long = delegate.sizeInBytes
  override def partitionSchema: StructType = delegate.partitionSchema
  override def metadataOpsTimeNs: Option[Long] = delegate.metadataOpsTimeNs
  override def toString: String = s"DataSkippingFileIndex($delegate)"
}

/**
 * Spark's FileSourceScanExec with the skipping result in its metrics ("files skipped by min/max",
 * next to Spark's "number of files read") and in EXPLAIN. Same constructor, so Spark's tree
 * copies (makeCopy) keep the class; canonicalization gives a plain FileSourceScanExec, so exchange
 * and subquery reuse still match it.
 */
class DataSkippingScanExec(
    relation: HadoopFsRelation,
    stream: Option[SparkDataStream],
    output: Seq[Attribute],
    requiredSchema: StructType,
    partitionFilters: Seq[Expression],
    optionalBucketSet: Option[BitSet],
    optionalNumCoalescedBuckets: Option[Int],
    dataFilters: Seq[Expression],
    tableIdentifier: Option[TableIdentifier],
    disableBucketedScan: Boolean,
    markedForSingleTaskExecution: Boolean)
  extends FileSourceScanExec(relation, stream, output, requiredSchema, partitionFilters, optionalBucketSet,
    optionalNumCoalescedBuckets, dataFilters, tableIdentifier, disableBucketedScan, markedForSingleTaskExecution) {

  @transient private lazy val skippingMetrics: Map[String, SQLMetric] = Map(
    "filesSkippedByStats" -> SQLMetrics.createMetric(sparkContext, "files skipped by min/max"),
    "filesBeforeSkipping" -> SQLMetrics.createMetric(sparkContext, "files before min/max skipping"),
    "statsTime" -> SQLMetrics.createTimingMetric(sparkContext, "min/max stats time"))

  override def metrics: Map[String, SQLMetric] = super.metrics ++ skippingMetrics

  // Spark's rules that change a scan's bucketing (DisableUnnecessaryBucketedScan,
  // CoalesceBucketsInJoin) call copy(...): keep this class.
  override def copy(relation: HadoopFsRelation, stream: Option[SparkDataStream], output: Seq[Attribute],
      requiredSchema: StructType, partitionFilters: Seq[Expression], optionalBucketSet: Option[BitSet],
      optionalNumCoalescedBuckets: Option[Int], dataFilters: Seq[Expression], tableIdentifier: Option[TableIdentifier],
      disableBucketedScan: Boolean, markedForSingleTaskExecution: Boolean): FileSourceScanExec =
    new DataSkippingScanExec(relation, stream, output, requiredSchema, partitionFilters, optionalBucketSet,
      optionalNumCoalescedBuckets, dataFilters, tableIdentifier, disableBucketedScan, markedForSingleTaskExecution)

  // Not equal to the plain node with the same fields: tree transforms keep the old node when the
  // new one is equal to it (so the swap in DataSkippingStrategy would be undone).
  override def canEqual(other: Any): Boolean = other.isInstanceOf[DataSkippingScanExec]
  override def equals(other: Any): Boolean = other.isInstanceOf[DataSkippingScanExec] && super.equals(other)
  override def hashCode(): Int = super.hashCode()

  /** The listing the scan reads: its static filters, as Spark's selectedPartitions passes them. */
  private def result: Option[SkippingResult] = this.relation.location match {
    case index: DataSkippingFileIndex =>
      val static = (e: Expression) => !e.exists(_.isInstanceOf[PlanExpression[_]])
      Some(index.listing(this.partitionFilters.filter(static), this.dataFilters.filter(static))._2)
    case _ => None
  }

  override def sendDriverMetrics(): Unit = {
    super.sendDriverMetrics()
    result.foreach { r =>
      skippingMetrics("filesSkippedByStats").set(r.filesSkipped.toLong)
      skippingMetrics("filesBeforeSkipping").set(r.filesTotal.toLong)
      skippingMetrics("statsTime").set(NANOSECONDS.toMillis(r.statsNanos))
      val executionId = sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)
      SQLMetrics.postDriverMetricUpdates(sparkContext, executionId, skippingMetrics.values.toSeq)
    }
  }

  // EXPLAIN must not fail because the listing did (the query itself will report that)
  private def skippingText: String =
    if (this.relation == null) "" // a copy deserialized on an executor
    else scala.util.Try(result.map(_.describe).getOrElse("")).getOrElse("")

  override def simpleString(maxFields: Int): String = {
    val text = skippingText
    super.simpleString(maxFields) + (if (text.isEmpty) "" else s", DataSkipping: $text")
  }

  override def verboseStringWithOperatorId(): String = {
    val text = skippingText
    super.verboseStringWithOperatorId() + (if (text.isEmpty) "" else s"DataSkipping: $text\n")
  }
}

object DataSkippingScanExec {
  def apply(s: FileSourceScanExec): DataSkippingScanExec = new DataSkippingScanExec(s.relation, s.stream, s.output,
    s.requiredSchema, s.partitionFilters, s.optionalBucketSet, s.optionalNumCoalescedBuckets, s.dataFilters,
    s.tableIdentifier, s.disableBucketedScan, s.markedForSingleTaskExecution)
}
