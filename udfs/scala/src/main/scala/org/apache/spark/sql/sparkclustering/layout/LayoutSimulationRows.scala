package org.apache.spark.sql.sparkclustering
package layout

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.types.{IntegerType, LongType}

/**
 * simulate_layouts(rows_sql, boxes_sql, files, placements): the simulation of `cluster_method:
 * auto` (LayoutSimulation), one row per candidate (candidate: its index, scanned: the workload boxes
 * meeting each of its files, summed).
 *
 * rows_sql gives k clustering columns' values, then one BIGINT per candidate; placements says, per
 * candidate, 'key' (a curve's key: the rows cut into `files` runs in its order) or 'file' (the
 * row's file, a k-d tree's leaf). boxes_sql ('' for none) as kdtree_fit's: 1 + 3k columns, the
 * box's count, then per column whether it filters on it and its bounds (NULL = open). Both are
 * collected to the driver: the search's rows are a few hundred a file.
 */
private[sparkclustering] case class LayoutSimulationRows(rowsSql: String, boxesSql: String, files: Int,
    placements: Seq[String]) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("candidate", IntegerType, nullable = false)(),
    AttributeReference("scanned", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    val f = "simulate_layouts"
    placements.find(p => p != "key" && p != "file").foreach { p =>
      throw SparkClusteringErrors.invalidArgument(f, s"placement '$p' is not 'key' or 'file'")
    }
    if (files < 1) throw SparkClusteringErrors.invalidArgument(f, s"files must be at least 1, got $files")
    val rowsPlan = spark.sql(rowsSql).queryExecution
    val fields = rowsPlan.analyzed.schema.fields.toSeq
    val m = placements.length
    val k = fields.length - m
    if (m < 1 || k < 1 || fields.drop(k).exists(_.dataType != LongType)) {
      throw SparkClusteringErrors.invalidArgument(f, s"rows_sql must give the clustering columns, then one BIGINT " +
        s"per placement ($m), got ${fields.map(x => s"${x.name} ${x.dataType.simpleString}").mkString(", ")}")
    }
    val boxes = WorkloadBoxes.collect(spark, f, boxesSql, fields.take(k))
    val rows = rowsPlan.executedPlan.executeCollect()
    val values: IndexedSeq[Array[Any]] = (0 until k).map { c =>
      val column: Array[Any] = rows.map(_.get(c, fields(c).dataType))
      column
    }
    val orderings = (0 until k).map(c => TypeUtils.getInterpretedOrdering(fields(c).dataType))
    val candidates = (0 until m).map { i =>
      rows.map { r =>
        if (r.isNullAt(k + i)) {
          throw SparkClusteringErrors.invalidArgument(f, s"candidate $i gave a row no ${placements(i)} (NULL)")
        }
        r.getLong(k + i)
      }
    }
    val placed = placements.map(p => if (p == "key") LayoutSimulation.ByKey else LayoutSimulation.ByFile).toIndexedSeq
    LayoutSimulation.filesScanned(values, orderings, candidates, placed, files, boxes).zipWithIndex.map {
      case (scanned, i) => Row(i, scanned)
    }
  }
}
