package org.apache.spark.sql.sparkclustering
package skipping

import java.util.concurrent.TimeUnit.NANOSECONDS

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources._
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.sparkclustering.stats.ReadContext
import org.apache.spark.sql.sparkclustering.stats.FileStatsStore

/** What one listing kept and why; one per scan. `notApplied`: why no file was tested, when none
 *  was. */
private[skipping] final case class SkippingResult(filesTotal: Int, filesKept: Int, bytesTotal: Long, bytesKept: Long,
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
private[skipping] class DataSkippingFileIndex(val delegate: FileIndex, readContext: () => ReadContext, val dataSchema: StructType,
    val tableName: String, val tableRoots: Seq[Path] = Nil) extends FileIndex with Logging {
  // the logger docs/data_skipping.md names, as before the class moved to this package
  override protected def logName: String = "org.apache.spark.sql.sparkclustering.DataSkippingFileIndex"


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
      else if (!DataSkipping.enabled(spark.sessionState.conf)) keepAll(s"${SparkClusteringConf.SkippingEnabled.key}=false")
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
