package org.apache.spark.sql.sparkclustering
package layout

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.types.LongType

/**
 * collect_to_view(view, rows_sql): the rows of rows_sql collected to the driver and kept as the
 * temporary view `view` (replaced if it exists) over those rows; one row (rows).
 *
 * For the rows `cluster_method: auto` searches its layout on (a few hundred a file, each with its
 * columns' range ids): `CACHE TABLE ... AS SELECT` keeps the query's text, which Spark parses and
 * analyses again on each use, with the ids' boundaries as literal arrays (~70-170 KB of SQL over
 * three columns: ~0.3 s each time); a view over the collected rows is analysed at once.
 */
private[sparkclustering] case class CollectToView(view: String, rowsSql: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(AttributeReference("rows", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    val f = "collect_to_view"
    val name = spark.sessionState.sqlParser.parseMultipartIdentifier(view)
    if (name.length != 1) throw SparkClusteringErrors.invalidArgument(f, s"view must be one unqualified name, got '$view'")
    val plan = spark.sql(rowsSql).queryExecution
    val rows = plan.executedPlan.executeCollect()
    // fresh attributes: the view's columns are its own, not the query's
    val attributes = plan.analyzed.output.map(a => AttributeReference(a.name, a.dataType, a.nullable, a.metadata)())
    SparkLine.dataFrame(spark, LocalRelation(attributes, rows.toSeq)).createOrReplaceTempView(name.head)
    Seq(Row(rows.length.toLong))
  }
}
