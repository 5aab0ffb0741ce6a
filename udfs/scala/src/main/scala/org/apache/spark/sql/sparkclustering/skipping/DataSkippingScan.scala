package org.apache.spark.sql.sparkclustering
package skipping

import java.util.concurrent.TimeUnit.NANOSECONDS

import org.apache.spark.sql.catalyst.expressions.{Expression, PlanExpression}
import org.apache.spark.sql.execution.{FileSourceScanExec, SQLExecution}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}

/**
 * What the rule's scan node adds to Spark's FileSourceScanExec: the skipping result in its metrics
 * ("files skipped by min/max", next to Spark's "number of files read") and in EXPLAIN. The node
 * itself (`DataSkippingScanExec`, Spark's constructor, which differs between Spark lines) is in the
 * line's shim (`udfs/scala/src/shims/spark-<line>/`). It keeps Spark's constructor, so Spark's tree
 * copies (makeCopy) keep the class; canonicalization gives a plain FileSourceScanExec, so exchange
 * and subquery reuse still match it.
 */
private[skipping] trait DataSkippingScan extends FileSourceScanExec {

  @transient private lazy val skippingMetrics: Map[String, SQLMetric] = Map(
    "filesSkippedByStats" -> SQLMetrics.createMetric(sparkContext, "files skipped by min/max"),
    "filesBeforeSkipping" -> SQLMetrics.createMetric(sparkContext, "files before min/max skipping"),
    "statsTime" -> SQLMetrics.createTimingMetric(sparkContext, "min/max stats time"))

  override def metrics: Map[String, SQLMetric] = super.metrics ++ skippingMetrics

  // Not equal to the plain node with the same fields: tree transforms keep the old node when the
  // new one is equal to it (so the swap in DataSkippingStrategy would be undone).
  override def canEqual(other: Any): Boolean = other.isInstanceOf[DataSkippingScan]
  override def equals(other: Any): Boolean = other.isInstanceOf[DataSkippingScan] && super.equals(other)
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
