package org.apache.spark.sql.sparkclustering
package layout

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.types.{IntegerType, LongType, StringType, StructField}

/**
 * kdtree_fit(rows_sql, boxes_sql, files, splits): the k-d trees of `cluster_method: auto`
 * (KdTreeFit), one row per node cut (tree: index into splits, node, column index, literal).
 *
 * rows_sql gives, for k clustering columns, 3k columns: the k values, their k BIGINT ids, and the
 * k SQL literals of the values (as the layout spec records cuts). boxes_sql ('' for none) gives
 * 1 + 3k columns: the box's count, then per column whether the box filters on it and its lower and
 * upper bound (cast to the column's type; NULL = open). Both are collected to the driver: a fit's
 * rows are a few hundred a file.
 */
private[sparkclustering] case class KdTreeFitRows(rowsSql: String, boxesSql: String, files: Int, splits: Seq[String]) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("tree", IntegerType, nullable = false)(),
    AttributeReference("node", IntegerType, nullable = false)(),
    AttributeReference("column", IntegerType, nullable = false)(),
    AttributeReference("literal", StringType, nullable = true)())

  private def collect(spark: SparkSession, sql: String): (Seq[StructField], Array[InternalRow]) = {
    val plan = spark.sql(sql).queryExecution
    (plan.analyzed.schema.fields.toSeq, plan.executedPlan.executeCollect())
  }

  override def run(spark: SparkSession): Seq[Row] = {
    val f = "kdtree_fit"
    splits.find(s => s != "widest" && s != "workload").foreach { s =>
      throw SparkClusteringErrors.invalidArgument(f, s"split '$s' is not 'widest' or 'workload'")
    }
    if (files < 2) throw SparkClusteringErrors.invalidArgument(f, s"files must be at least 2, got $files")
    val (fields, rows) = collect(spark, rowsSql)
    if (fields.isEmpty || fields.length % 3 != 0 ||
        fields.slice(fields.length / 3, 2 * fields.length / 3).exists(_.dataType != LongType) ||
        fields.drop(2 * fields.length / 3).exists(_.dataType != StringType)) {
      throw SparkClusteringErrors.invalidArgument(f, "rows_sql must give k values, k BIGINT ids and k STRING " +
        s"literals, got ${fields.map(x => s"${x.name} ${x.dataType.simpleString}").mkString(", ")}")
    }
    val k = fields.length / 3
    val columns = (0 until k).map { c =>
      val dt = fields(c).dataType
      new KdTreeFit.Column(
        rows.map(_.get(c, dt)),
        rows.map(r => if (r.isNullAt(k + c)) Long.MinValue else r.getLong(k + c)),
        rows.map(r => if (r.isNullAt(2 * k + c)) null else r.getUTF8String(2 * k + c).toString),
        TypeUtils.getInterpretedOrdering(dt))
    }
    val boxes = WorkloadBoxes.collect(spark, f, boxesSql, fields.take(k))
    KdTreeFit.fit(columns, boxes, files, splits).zipWithIndex.flatMap { case (cuts, tree) =>
      cuts.toSeq.sortBy(_._1).map { case (node, cut) => Row(tree, node, cut.column, cut.literal) }
    }
  }
}
