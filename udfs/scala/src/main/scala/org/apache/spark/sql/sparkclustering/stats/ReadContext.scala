package org.apache.spark.sql.sparkclustering
package stats

import java.util.Locale

import scala.util.Try

import org.apache.hadoop.conf.Configuration
import org.apache.orc.OrcConf

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.execution.datasources.HadoopFsRelation
import org.apache.spark.sql.execution.datasources.orc.OrcFileFormat
import org.apache.spark.sql.execution.datasources.parquet.{ParquetFileFormat, ParquetOptions}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType

/**
 * How Spark's own parquet or orc reader reads a scan's files: every setting that decides which
 * stored column a value comes from, or what its bytes mean, taken from where that reader takes it.
 * FileSourceScanExec hands the reader the relation's options (a catalog table's OPTIONS, its
 * storage properties) and `sessionState.newHadoopConfWithOptions(options)` (the Hadoop
 * configuration: `spark.hadoop.*`, the SparkContext's, every session conf, then the options); the
 * reader reads the session's SQLConf besides. So does this, at the same moment: when the scan
 * lists its files.
 *
 * A setting the statistics do not model (`unmodelled`) makes every file of the scan unknown: it
 * is read, never skipped on a guess. `sidecarContext` is recorded with every sidecar entry
 * (`write_file_stats` computes it the same way for the table it reads); an entry recorded under
 * other settings is not used.
 */
private[sparkclustering] final case class ReadContext(format: String, caseSensitive: Boolean,
    datetimeRebaseMode: String, unmodelled: Seq[String], sidecarContext: String) {

  /** Parquet files without Spark's writer metadata have their datetimes rebased on read. */
  def parquetRebaseLegacy: Boolean = datetimeRebaseMode == "LEGACY"

  /** The statistics key (a field name of `dataSchema`) of a scan column, as the reader resolves
   *  a table column: the exact name, or case-insensitively the one field of that name when the
   *  session is case-insensitive. Nothing else: no fallback the reader would not make. */
  def statsKey(dataSchema: StructType): Attribute => Option[String] = {
    val names = dataSchema.fieldNames.toSet
    val byLower = dataSchema.fieldNames.groupBy(_.toLowerCase(Locale.ROOT))
    a => if (names.contains(a.name)) Some(a.name)
      else if (caseSensitive) None
      else byLower.get(a.name.toLowerCase(Locale.ROOT)).filter(_.length == 1).map(_.head)
  }
}

private[sparkclustering] object ReadContext {

  /** The parquet or orc reader Spark uses for `relation`, or None for any other format (the
   *  Hive orc reader, text, ...): its files get no statistics. */
  def formatOf(relation: HadoopFsRelation): Option[String] = relation.fileFormat.getClass match {
    case c if c == classOf[ParquetFileFormat] => Some("parquet")
    case c if c == classOf[OrcFileFormat] => Some("orc")
    case _ => None
  }

  /** The settings of a scan of `relation` (`format` its reader, see formatOf). */
  def forScan(relation: HadoopFsRelation, format: String): ReadContext =
    apply(relation.sparkSession, format, relation.options)

  /** The settings under which `format` files are read with these relation options (a catalog
   *  table's storage properties). */
  def apply(spark: SparkSession, format: String, options: Map[String, String]): ReadContext = {
    val session = Sessions.classic(spark)
    val conf = session.sessionState.conf
    val hadoopConf = session.sessionState.newHadoopConfWithOptions(options)
    val caseSensitive = conf.caseSensitiveAnalysis
    format.toLowerCase(Locale.ROOT) match {
      case "parquet" =>
        // ParquetFileFormat's own option parsing: the relation's option, else the session conf
        val parquet = new ParquetOptions(options, conf)
        val rebase = parquet.datetimeRebaseModeInRead
        val int96Rebase = parquet.int96RebaseModeInRead
        val int96Conversion = conf.isParquetINT96TimestampConversion
        // ParquetReadSupport reads it from the Hadoop configuration (the session's, or spark.hadoop.*)
        val fieldIds = Try(hadoopConf.getBoolean(SQLConf.PARQUET_FIELD_ID_READ_ENABLED.key,
          conf.parquetFieldIdReadEnabled)).getOrElse(true)
        val unmodelled = Seq(
          // ParquetReadSupport matches columns by field id: statistics are keyed by name
          Some(s"${SQLConf.PARQUET_FIELD_ID_READ_ENABLED.key}=true (columns matched by field id)")
            .filter(_ => fieldIds)).flatten
        // legacy-rebased timestamps (files of Spark 2, or written in LEGACY mode) are shifted in
        // the JVM's zone when the file does not name one: a sidecar read them in its JVM's zone
        val ctx = Seq(s"cs=$caseSensitive", s"dt=$rebase", s"i96=$int96Rebase", s"i96c=$int96Conversion") ++
          (if (int96Conversion) Seq(s"tz=${conf.sessionLocalTimeZone}") else Nil) ++
          Seq(s"jtz=${java.util.TimeZone.getDefault.getID}")
        ReadContext("parquet", caseSensitive, rebase, unmodelled, sidecarContext(ctx, unmodelled))
      case "orc" =>
        val unmodelled = Seq(
          // OrcUtils.requestedColumnIds: columns matched by position, statistics are keyed by name
          flag(hadoopConf, OrcConf.FORCE_POSITIONAL_EVOLUTION, "columns matched by position"),
          // the orc reader converts dates (values and statistics) to the calendar it is asked for,
          // and Spark rebases them from the hybrid calendar after: modelled only at the default
          flag(hadoopConf, OrcConf.PROLEPTIC_GREGORIAN, "dates read in the proleptic calendar"),
          flag(hadoopConf, OrcConf.PROLEPTIC_GREGORIAN_DEFAULT, "dates of files without a calendar read as proleptic")
        ).flatten
        // orc timestamps are read relative to the JVM's zone
        val ctx = Seq(s"cs=$caseSensitive", s"jtz=${java.util.TimeZone.getDefault.getID}")
        ReadContext("orc", caseSensitive, "CORRECTED", unmodelled, sidecarContext(ctx, unmodelled))
      case other => throw new IllegalArgumentException(s"no read context for format $other")
    }
  }

  /** The modelled settings, then the name of every unmodelled one in force (a sidecar computed
   *  under one is exact only for reads under it). */
  private def sidecarContext(modelled: Seq[String], unmodelled: Seq[String]): String =
    (modelled ++ unmodelled.map(u => "x=" + u.takeWhile(_ != '='))).mkString(";")

  /** `key=true (what it does)` when the orc setting is true in the Hadoop configuration, as orc
   *  reads it (its own name or its Hive name). */
  private def flag(hadoopConf: Configuration, setting: OrcConf, what: String): Option[String] =
    Some(s"${setting.getAttribute}=true ($what)").filter(_ => Try(setting.getBoolean(hadoopConf)).getOrElse(true))
}
