package org.apache.spark.sql.sparkclustering
package maintenance

import java.nio.charset.StandardCharsets

import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{DeserializationFeature, ObjectMapper}
import org.apache.hadoop.fs.{FileSystem, Path}

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.types.StringType
import org.apache.spark.sql.sparkclustering.commit.ObjectStore
import org.apache.spark.sql.sparkclustering.workload.ObservedWorkload

/**
 * A table's maintenance record: one JSON object the package keeps per table name beside its observed
 * workload, `<database location>/_spark_clustering_workload/<table>/maintenance.json`, outside the
 * table's data and not a table property (a property write on Delta / Iceberg is a commit, which would
 * change the very version the record is compared with). recluster() writes what it last measured
 * (the table_state token, the config) and its recent decisions; the macros own the fields
 * (_maintenance_record.sql), the jar only reads and replaces the whole object. A table name, so a
 * rebuild that swaps the table in keeps its record (the token then differs).
 */
private[sparkclustering] object MaintenanceRecord {
  val FileName = "maintenance.json"
  // a record torn after its first object is no record
  private val mapper = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
  private val PerformanceCreateOption = "fs.s3a.create.performance"

  private def file(spark: SparkSession, tableName: String): Path = {
    val ident = Sessions.classic(spark).sessionState.sqlParser.parseTableIdentifier(tableName)
    new Path(ObservedWorkload.directory(spark, ident.database.getOrElse(spark.catalog.currentDatabase), ident.table),
      FileName)
  }

  /** The record's JSON text, or "" when there is none (or it does not parse: then it is rewritten). */
  def read(spark: SparkSession, tableName: String): String = {
    val path = file(spark, tableName)
    val fs = path.getFileSystem(Sessions.hadoopConf(spark))
    // open alone, no exists() first: on S3A each is a HEAD
    val in = try fs.open(path) catch { case _: java.io.FileNotFoundException => return "" }
    val text = try scala.io.Source.fromInputStream(in, "UTF-8").mkString finally in.close()
    if (isObject(text)) text else ""
  }

  def isObject(text: String): Boolean =
    try mapper.readTree(text) match {
      case null => false
      case node => node.isObject
    } catch { case NonFatal(_) => false }

  /** Replaces the record by `json` (a JSON object) so that a reader sees the old record or the new
   *  one, never part of one: one PUT on an object store, else written aside and renamed over it. */
  def write(spark: SparkSession, tableName: String, json: String): Path = {
    if (!isObject(json)) {
      throw SparkClusteringErrors.invalidArgument("save_maintenance_record", s"record must be a JSON object, got '${json.take(200)}'")
    }
    val path = file(spark, tableName)
    val fs = path.getFileSystem(Sessions.hadoopConf(spark))
    replace(fs, path, json.getBytes(StandardCharsets.UTF_8))
    path
  }

  private def replace(fs: FileSystem, path: Path, bytes: Array[Byte]): Unit = {
    if (ObjectStore.is(fs)) {
      // an object appears whole when its upload completes, and S3A's rename (a copy) is not atomic
      val out = fs.createFile(path).overwrite(true).recursive().opt(PerformanceCreateOption, true).build()
      try out.write(bytes) finally out.close()
    } else {
      fs.mkdirs(path.getParent)
      val tmp = new Path(path.getParent, s".${path.getName}-${java.util.UUID.randomUUID()}.tmp")
      val out = fs.create(tmp, true)
      try out.write(bytes) finally out.close()
      // rename does not replace on every file system: delete first (a reader in between sees no record,
      // which only costs it a full recluster)
      if (!fs.rename(tmp, path)) {
        fs.delete(path, false)
        if (!fs.rename(tmp, path)) {
          fs.delete(tmp, false)
          throw new java.io.IOException(s"could not replace the maintenance record $path")
        }
      }
    }
  }
}

/** `select * from maintenance_record('db.t')`: one row, `record`: the table's maintenance record
 *  (JSON object text), '' when it has none. */
private[sparkclustering] case class MaintenanceRecordRows(tableName: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(AttributeReference("record", StringType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = Seq(Row(MaintenanceRecord.read(spark, tableName)))
}

/** `select * from save_maintenance_record('db.t', '{...}')`: replaces the table's maintenance record
 *  by the JSON object given (whole: merging fields is the caller's); one row, `path`: where it is. */
private[sparkclustering] case class SaveMaintenanceRecord(tableName: String, record: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(AttributeReference("path", StringType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = Seq(Row(MaintenanceRecord.write(spark, tableName, record).toString))
}
