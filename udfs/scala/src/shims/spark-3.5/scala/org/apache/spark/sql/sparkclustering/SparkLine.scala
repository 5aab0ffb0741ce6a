package org.apache.spark.sql.sparkclustering

import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.parquet.format.{Statistics => ParquetStatistics}

import org.apache.spark.sql.{DataFrame, Dataset, SparkSession}
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.expressions.{Expression, NullIntolerant}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.types.StringType

/**
 * What the package reaches differently on each Spark line, in one place per line (this file: Spark
 * 3.5; udfs/scala/src/shims/spark-4.x/ has Spark 4's). build_jar.py compiles the line's shims with
 * the common sources.
 */
private[sparkclustering] object SparkLine {

  /** The session class with the internals (session state, cloning, its UUID): the only one in 3.5. */
  type ClassicSession = org.apache.spark.sql.SparkSession

  def classic(spark: SparkSession): ClassicSession = spark

  /** The rows of a logical plan the package built itself. */
  def dataFrame(spark: SparkSession, plan: LogicalPlan): DataFrame = Dataset.ofRows(spark, plan)

  /** Drops cached data of `ident` without resolving the table (no listing of its files). */
  def uncache(session: ClassicSession, ident: TableIdentifier): Unit =
    try session.sharedState.cacheManager.uncacheTableOrView(session, ident.nameParts, cascade = true) catch {
      case NonFatal(_) => // nothing cached under that name
    }

  /** The error raise_error() throws in Spark 3.5 (a plain RuntimeException: 3.5 has no
   *  USER_RAISED_EXCEPTION error class), with `message` as its text. */
  def userError(message: String): RuntimeException = new RuntimeException(message)

  /** Whether the string type orders by bytes: every string of Spark 3.5 (no collations). */
  def binaryOrdered(s: StringType): Boolean = true

  /** Parquet-format 2.9 (Spark 3.5's) has no flag for a truncated bound, and some writers truncate
   *  long byte-array (string, binary decimal) bounds: those are not taken for exact. */
  def parquetMinInexact(ts: ParquetStatistics, byteArray: Boolean): Boolean = byteArray
  /** Whether a writer flagged the bounds exact: parquet-format 2.9 has no such flag. */
  def parquetBoundsFlaggedExact(ts: ParquetStatistics): Boolean = false
  def parquetMaxInexact(ts: ParquetStatistics, byteArray: Boolean): Boolean = byteArray

  /** Deletes `paths` (all in `dir`): one request each (Hadoop 3.3 has no bulk delete); a file
   *  already gone is no error. Returns the count deleted. */
  def deleteAll(fs: FileSystem, dir: Path, paths: Seq[Path]): Int = paths.count(p => fs.delete(p, false))

  /** A batch scan of a file-source relation (not streaming): the relation, its files, its table. */
  object FileScanRelation {
    def unapply(plan: LogicalPlan): Option[(LogicalRelation, HadoopFsRelation, Option[CatalogTable])] = plan match {
      case l @ LogicalRelation(fs: HadoopFsRelation, _, table, false) => Some((l, fs, table))
      case _ => None
    }
  }
}

/** A Catalyst expression that is NULL whenever an input is NULL (Spark 3.5's marker trait). */
private[sparkclustering] trait NullIntolerantExpression extends Expression with NullIntolerant
