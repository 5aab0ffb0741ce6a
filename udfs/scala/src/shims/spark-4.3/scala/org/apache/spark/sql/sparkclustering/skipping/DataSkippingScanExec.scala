package org.apache.spark.sql.sparkclustering
package skipping

import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.connector.read.streaming.SparkDataStream
import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.execution.datasources.HadoopFsRelation
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.collection.BitSet

/** The rule's scan node (see DataSkippingScan) with FileSourceScanExec's constructor of Spark 4.3 (it has markedForSingleTaskExecution). */
private[skipping] class DataSkippingScanExec(
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
    optionalNumCoalescedBuckets, dataFilters, tableIdentifier, disableBucketedScan, markedForSingleTaskExecution) with DataSkippingScan {

  // Spark's rules that change a scan's bucketing (DisableUnnecessaryBucketedScan,
  // CoalesceBucketsInJoin) call copy(...): keep this class.
  override def copy(relation: HadoopFsRelation, stream: Option[SparkDataStream], output: Seq[Attribute],
      requiredSchema: StructType, partitionFilters: Seq[Expression], optionalBucketSet: Option[BitSet],
      optionalNumCoalescedBuckets: Option[Int], dataFilters: Seq[Expression], tableIdentifier: Option[TableIdentifier],
      disableBucketedScan: Boolean, markedForSingleTaskExecution: Boolean): FileSourceScanExec =
    new DataSkippingScanExec(relation, stream, output, requiredSchema, partitionFilters, optionalBucketSet,
      optionalNumCoalescedBuckets, dataFilters, tableIdentifier, disableBucketedScan, markedForSingleTaskExecution)
}

private[skipping] object DataSkippingScanExec {
  def apply(s: FileSourceScanExec): DataSkippingScanExec = new DataSkippingScanExec(s.relation, s.stream, s.output,
    s.requiredSchema, s.partitionFilters, s.optionalBucketSet, s.optionalNumCoalescedBuckets, s.dataFilters,
    s.tableIdentifier, s.disableBucketedScan, s.markedForSingleTaskExecution)
}
