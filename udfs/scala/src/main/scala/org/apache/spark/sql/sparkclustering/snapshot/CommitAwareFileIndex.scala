package org.apache.spark.sql.sparkclustering
package snapshot

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionDirectory}
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.sparkclustering.skipping.DataSkipping

/**
 * The relation's own index, its listing resolved against the recluster commits in flight
 * (InFlightCommits): a scan reads the files of one side of each commit, never both. The rule
 * (DataSkippingStrategy) puts it under every scan of a plain parquet/orc relation it plans, with or
 * without filters; DataSkippingFileIndex prunes what it lists.
 *
 * `journalRoots`: where the journals lie, the table's location (a path read: its root paths).
 */
private[sparkclustering] class CommitAwareFileIndex(val delegate: FileIndex, journalRoots: Seq[Path], val label: String) extends FileIndex {

  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] = {
    val spark = SparkSession.active
    val list = () => delegate.listFiles(partitionFilters, dataFilters)
    if (!SparkClusteringConf.CommitViewEnabled.get(spark.sessionState.conf)) return list()
    val listed = list()
    var first = true
    try {
      InFlightCommits.resolve(Sessions.hadoopConf(spark), if (journalRoots.nonEmpty) journalRoots else rootPaths,
        (SparkClusteringConf.CommitViewWaitSeconds.get(spark.sessionState.conf) * 1000).toLong, label,
        () => if (first) { first = false; listed } else list(), () => delegate.refresh()).directories
    } catch {
      case NonFatal(e) =>
        // the listing as Spark gives it: what every reader without the extension reads
        DataSkipping.logFailureOnce(label, "resolving a commit in flight", e)
        listed
    }
  }

  override def rootPaths: Seq[Path] = delegate.rootPaths
  override def inputFiles: Array[String] = delegate.inputFiles
  override def refresh(): Unit = delegate.refresh()
  override def sizeInBytes: Long = delegate.sizeInBytes
  override def partitionSchema: StructType = delegate.partitionSchema
  override def metadataOpsTimeNs: Option[Long] = delegate.metadataOpsTimeNs
  override def toString: String = s"CommitAwareFileIndex($delegate)"
}
