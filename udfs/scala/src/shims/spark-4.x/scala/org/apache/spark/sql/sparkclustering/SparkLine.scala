package org.apache.spark.sql.sparkclustering

import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.parquet.format.{Statistics => ParquetStatistics}

import org.apache.spark.SparkRuntimeException
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.command.CommandUtils
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.types.StringType

/**
 * What the package reaches differently on each Spark line, in one place per line (this file: Spark
 * 4.0 to 4.3; udfs/scala/src/shims/spark-3.5/ has Spark 3.5's). build_jar.py compiles the line's
 * shims with the common sources.
 */
private[sparkclustering] object SparkLine {

  /** The session class with the internals (session state, cloning, its UUID): `classic` from 4.0. */
  type ClassicSession = org.apache.spark.sql.classic.SparkSession

  def classic(spark: SparkSession): ClassicSession = spark.asInstanceOf[ClassicSession]

  /** The rows of a logical plan the package built itself. */
  def dataFrame(spark: SparkSession, plan: LogicalPlan): DataFrame =
    org.apache.spark.sql.classic.Dataset.ofRows(classic(spark), plan)

  /** Drops cached data of `ident` without resolving the table (no listing of its files). */
  def uncache(session: ClassicSession, ident: TableIdentifier): Unit = CommandUtils.uncacheTableOrView(session, ident)

  /** The error raise_error() throws, with `message` as its text. */
  def userError(message: String): RuntimeException =
    new SparkRuntimeException("USER_RAISED_EXCEPTION", Map("errorMessage" -> message))

  /** Whether the string type orders by bytes (the UTF8_BINARY collation). */
  def binaryOrdered(s: StringType): Boolean = s.supportsBinaryOrdering

  /** A writer that truncated a parquet bound says so in the footer (parquet-format 2.10); such a
   *  bound is not an exact min (max). */
  def parquetMinInexact(ts: ParquetStatistics, byteArray: Boolean): Boolean =
    ts.isSetIs_min_value_exact && !ts.is_min_value_exact
  /** Whether the writer flagged both bounds exact (not truncated). */
  def parquetBoundsFlaggedExact(ts: ParquetStatistics): Boolean =
    ts.isSetIs_min_value_exact && ts.is_min_value_exact && ts.isSetIs_max_value_exact && ts.is_max_value_exact
  def parquetMaxInexact(ts: ParquetStatistics, byteArray: Boolean): Boolean =
    ts.isSetIs_max_value_exact && !ts.is_max_value_exact

  /** Deletes `paths` (all in `dir`) a page per request where the store can (Hadoop's bulk delete:
   *  S3 up to 250 keys a request); an object already gone is no error. Returns the count deleted. */
  def deleteAll(fs: FileSystem, dir: Path, paths: Seq[Path]): Int = {
    import scala.jdk.CollectionConverters._
    val bulk = fs.createBulkDelete(dir)
    try paths.grouped(math.max(1, bulk.pageSize())).map { page =>
      val failed = bulk.bulkDelete(page.asJava).asScala
      if (failed.nonEmpty) {
        throw new java.io.IOException(s"spark_clustering: could not delete ${failed.size} replaced file(s), e.g. " +
          s"${failed.head.getKey}: ${failed.head.getValue}")
      }
      page.size
    }.sum finally bulk.close()
  }

  /** A batch scan of a file-source relation (not streaming): the relation, its files, its table. */
  object FileScanRelation {
    def unapply(plan: LogicalPlan): Option[(LogicalRelation, HadoopFsRelation, Option[CatalogTable])] = plan match {
      case l @ LogicalRelation(fs: HadoopFsRelation, _, table, false, None) => Some((l, fs, table))
      case _ => None
    }
  }
}

/** A Catalyst expression that is NULL whenever an input is NULL. */
private[sparkclustering] trait NullIntolerantExpression extends Expression {
  override def nullIntolerant: Boolean = true
}
