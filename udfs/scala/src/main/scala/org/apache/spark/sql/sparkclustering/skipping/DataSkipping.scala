package org.apache.spark.sql.sparkclustering
package skipping

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.planning.ScanOperation
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.datasources._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.sparkclustering.snapshot.CommitAwareFileIndex
import org.apache.spark.sql.sparkclustering.stats.ReadContext
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation
import org.apache.spark.sql.sparkclustering.workload.{ObservedWorkload, ScannedTables}

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
private[sparkclustering] object DataSkipping extends Logging {
  // the logger docs/data_skipping.md names, as before the class moved to this package
  override protected def logName: String = "org.apache.spark.sql.sparkclustering.DataSkipping"
  def enabled(conf: SQLConf): Boolean = SparkClusteringConf.SkippingEnabled.get(conf)

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

/** Plans scans of eligible file-source relations over a CommitAwareFileIndex (one side of a
 *  recluster commit in flight, every scan), pruned by a DataSkippingFileIndex when the scan filters
 *  on its data columns (see DataSkipping). */
private[sparkclustering] case class DataSkippingStrategy(spark: SparkSession) extends SparkStrategy {
  // the scan's leaf is matched after one ScanOperation walk: the planner asks this of every node
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case ScanOperation(_, _, filters, leaf) => leaf match {
      case SparkLine.FileScanRelation(l, fs, table) =>
        // what the scan filters on, for cluster_workload: observed (ObservedWorkload; never throws)
        if (filters.nonEmpty) table.foreach { t =>
          ObservedWorkload.record(spark, t.identifier.database, t.identifier.table, ScannedTables.clusterBy(t, fs.location), filters)
        }
        val conf = spark.sessionState.conf
        val skipping = DataSkipping.enabled(conf) && FileSkippingPredicate.usable(filters).nonEmpty
        if (eligible(fs) && (skipping || SparkClusteringConf.CommitViewEnabled.get(conf))) {
          // planning never fails because of the rule: anything it cannot plan, Spark plans as usual
          try planScan(plan, l, fs, table, skipping) catch {
            case NonFatal(e) =>
              DataSkipping.logFailureOnce(table.map(_.identifier.unquotedString).getOrElse(""), "planning", e)
              Nil
          }
        } else Nil
      case r: DataSourceV2ScanRelation if filters.nonEmpty =>
        // an Iceberg table's scan: recorded only, its format prunes its files itself
        ScannedTables.ofV2(r.relation).foreach { case (database, name, clusterBy) =>
          ObservedWorkload.record(spark, database, name, clusterBy, filters)
        }
        Nil
      case _ => Nil
    }
    case _ => Nil
  }

  private def planScan(plan: LogicalPlan, l: LogicalRelation, fs: HadoopFsRelation,
      table: Option[CatalogTable], skipping: Boolean): Seq[SparkPlan] = {
    val format = ReadContext.formatOf(fs).get
    // Partition pruning (PruneFileSourcePartitions) leaves an index rooted at the selected
    // partition directories; the sidecar and the commit journals live in the table's directory,
    // so it is a root too.
    val tableRoot = table.flatMap(t => Option(t.location)).map(new Path(_)).toSeq
    val label = table.map(_.identifier.unquotedString).getOrElse(fs.location.rootPaths.mkString(", "))
    val view = new CommitAwareFileIndex(fs.location, tableRoot, label)
    val index =
      if (skipping) new DataSkippingFileIndex(view, () => ReadContext.forScan(fs, format), fs.dataSchema, label, tableRoot)
      else view
    val wrapped = l.copy(relation = fs.copy(location = index)(fs.sparkSession))
    val rewritten = plan.transformUp { case r: LogicalRelation if r eq l => wrapped }
    FileSourceStrategy(rewritten).map(_.transformUp {
      case s: FileSourceScanExec if skipping && !s.isInstanceOf[DataSkippingScanExec] && (s.relation.location eq index) =>
        DataSkippingScanExec(s)
    })
  }

  private def eligible(fs: HadoopFsRelation): Boolean =
    ReadContext.formatOf(fs).isDefined && (fs.location match {
      case _: CatalogFileIndex | _: PartitioningAwareFileIndex => true
      case _ => false // Delta, streaming sinks, other indexes keep their own listing
    })
}
