package org.apache.spark.sql.sparkclustering
package commit

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.types.{LongType, StringType}
import org.apache.spark.sql.sparkclustering.tables.CatalogTables

/** `select * from table_lease_acquire('db.t', owner, wait_seconds, scope)`: take the table's lease
 *  (scope 'name': the table name only, for a rebuild that replaces the table; 'table': the name and
 *  the table's location, for a rewrite of its files). One row (lease_token, waited_ms). */
private[sparkclustering] case class TableLeaseAcquire(tableName: String, owner: String, waitSeconds: Double, scope: String)
    extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("lease_token", StringType, nullable = false)(),
    AttributeReference("waited_ms", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    val dirs = TableLeaseAcquire.dirs(spark, tableName, scope, "table_lease_acquire")
    val (token, waited) = TableLease.acquire(spark, Sessions.hadoopConf(spark), dirs, owner,
      (waitSeconds * 1000).toLong, s"table $tableName")
    Seq(Row(token, waited))
  }
}

private[sparkclustering] object TableLeaseAcquire {
  /** The lease directories of a scope: 'name' the table name only, 'table' the name and the location. */
  def dirs(spark: SparkSession, tableName: String, scope: String, function: String): Seq[org.apache.hadoop.fs.Path] =
    scope match {
      case "name" => Seq(LeasePaths.ofName(spark, tableName))
      case "table" => Seq(LeasePaths.ofName(spark, tableName),
        LeasePaths.ofLocation(CatalogTables.table(spark, tableName)))
      case other => throw SparkClusteringErrors.invalidArgument(function, s"scope '$other' must be 'name' or 'table'")
    }
}

/** `select * from table_lease_try_acquire('db.t', owner, wait_seconds, scope)`: as table_lease_acquire,
 *  but a lease another writer still holds when the wait runs out gives a row (null, waited_ms, the
 *  error table_lease_acquire would raise) instead of an error. One row (lease_token, waited_ms, busy). */
private[sparkclustering] case class TableLeaseTryAcquire(tableName: String, owner: String, waitSeconds: Double, scope: String)
    extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("lease_token", StringType, nullable = true)(),
    AttributeReference("waited_ms", LongType, nullable = false)(),
    AttributeReference("busy", StringType, nullable = true)())

  override def run(spark: SparkSession): Seq[Row] = {
    val dirs = TableLeaseAcquire.dirs(spark, tableName, scope, "table_lease_try_acquire")
    TableLease.tryAcquire(spark, Sessions.hadoopConf(spark), dirs, owner, (waitSeconds * 1000).toLong,
        s"table $tableName") match {
      case Right((token, waited)) => Seq(Row(token, waited, null))
      case Left(busy) => Seq(Row(null, (waitSeconds * 1000).toLong, busy))
    }
  }
}

/** `select * from table_lease_check(lease_token, what)`: fails (nothing done) unless the token still
 *  holds its leases with half a ttl left; a writer calls it right before its commit point. */
private[sparkclustering] case class TableLeaseCheck(token: String, what: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(AttributeReference("held", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    TableLease.check(token, what)
    Seq(Row(1L))
  }
}

/** `select * from table_lease_release(token_or_owner_prefix, by_owner)`: give up one lease (by
 *  token) or every lease of this driver whose owner starts with the prefix. One row (released). */
private[sparkclustering] case class TableLeaseRelease(key: String, byOwner: Boolean) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(AttributeReference("released", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] =
    Seq(Row(if (byOwner) TableLease.releaseOwned(key).toLong else if (TableLease.release(key)) 1L else 0L))
}
