package org.apache.spark.sql.sparkclustering
package stats

import java.io.IOException

import scala.jdk.CollectionConverters._
import scala.util.Try

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.FileStatus
import org.apache.orc.{BooleanColumnStatistics, DateColumnStatistics, DecimalColumnStatistics, DoubleColumnStatistics,
  IntegerColumnStatistics, OrcFile, StringColumnStatistics, TypeDescription}

import org.apache.spark.sql.catalyst.util.RebaseDateTime
import org.apache.spark.sql.types.Decimal
import org.apache.spark.unsafe.types.UTF8String

import Footers._
import Footers.FileKind._

/** Orc footers: the file-level statistics of every top-level column, read by orc's own reader. */
private[stats] object OrcFooters extends FooterFormat {

  override def reader(conf: Configuration): FileStatus => Footer = {
    val footerConf = orcFooterConf(conf)
    orcFooter(footerConf, _)
  }

  /** Footers are cached whatever the session's settings: their dates are read in the hybrid
   *  calendar Spark's reader reads them in by default (ReadContext makes a scan under another
   *  calendar setting read every file). */
  private def orcFooterConf(conf: Configuration): Configuration = {
    val c = new Configuration(conf)
    c.setBoolean(org.apache.orc.OrcConf.PROLEPTIC_GREGORIAN.getAttribute, false)
    c.setBoolean(org.apache.orc.OrcConf.PROLEPTIC_GREGORIAN_DEFAULT.getAttribute, false)
    c
  }

  private def orcFooter(conf: Configuration, status: FileStatus): Footer = {
    val path = status.getPath
    val reader = OrcFile.createReader(path,
      OrcFile.readerOptions(conf).filesystem(path.getFileSystem(conf)).maxLength(status.getLen))
    try {
      val schema = reader.getSchema
      if (schema.getCategory != TypeDescription.Category.STRUCT) throw new IOException(s"$path: not a struct")
      val rows = reader.getNumberOfRows
      val stats = reader.getStatistics
      val names = schema.getFieldNames.asScala.toIndexedSeq
      val children = schema.getChildren.asScala.toIndexedSeq
      // string min/max written before HIVE-8732 were merged wrongly
      val stringsOk = reader.getWriterVersion.includes(OrcFile.WriterVersion.HIVE_8732)
      val columns = names.zip(children).map { case (name, child) =>
        val kind = orcKind(child)
        val st = if (child.getId < stats.length) stats(child.getId) else null
        val cs = if (kind == Other || st == null) ColumnStats(None, None, None)
          else Try(orcColumn(kind, st, rows, stringsOk)).getOrElse(ColumnStats(None, None, None))
        FooterColumn(name, kind, cs)
      }
      // Hive's old files name columns _col0, _col1...: Spark then matches them by position
      val byPosition = names.nonEmpty && names.forall(_.startsWith("_col"))
      // orc stores dates in the hybrid calendar; Spark rebases them on read (below), so bounds are exact
      Footer(rows, columns, DatetimesExact, byPosition)
    } finally reader.close()
  }

  private def orcKind(t: TypeDescription): FileKind = t.getCategory match {
    case TypeDescription.Category.BOOLEAN => Bool
    case TypeDescription.Category.BYTE => Integral(8)
    case TypeDescription.Category.SHORT => Integral(16)
    case TypeDescription.Category.INT => Integral(32)
    case TypeDescription.Category.LONG => Integral(64)
    case TypeDescription.Category.FLOAT => Float32
    case TypeDescription.Category.DOUBLE => Float64
    case TypeDescription.Category.STRING | TypeDescription.Category.VARCHAR => Utf8
    case TypeDescription.Category.DATE => Date
    case TypeDescription.Category.DECIMAL => Dec(t.getPrecision, t.getScale)
    // orc timestamp statistics are millisecond-precision and depend on the writer's and reader's
    // time zones: not kept. CHAR is padded.
    case _ => Other
  }

  private def orcColumn(kind: FileKind, st: org.apache.orc.ColumnStatistics, rows: Long,
      stringsOk: Boolean): ColumnStats = {
    val values = st.getNumberOfValues
    val nullRows = rows - values
    // hasNull and the counts must agree, else the counts are not trusted
    val nulls = if (nullRows >= 0 && st.hasNull == (nullRows > 0)) Some(nullRows) else None
    if (values == 0 || nulls.isEmpty) return ColumnStats(None, None, nulls)
    val (lo, hi): (Option[Any], Option[Any]) = (kind, st) match {
      case (Integral(_), s: IntegerColumnStatistics) => (Some(s.getMinimum), Some(s.getMaximum))
      case (Float32, s: DoubleColumnStatistics) =>
        (Some(s.getMinimum.toFloat).filterNot(_.isNaN), None) // max: NaN is left out by the writer
      case (Float64, s: DoubleColumnStatistics) => (Some(s.getMinimum).filterNot(_.isNaN), None)
      case (Bool, s: BooleanColumnStatistics) if s.getFalseCount + s.getTrueCount == values =>
        (Some(s.getFalseCount == 0), Some(s.getTrueCount > 0))
      case (Utf8, s: StringColumnStatistics) if stringsOk =>
        // ORC 1.6+ keeps only lower/upper bounds of long strings (min/max null): not kept
        (orcString(s.getMinimum), orcString(s.getMaximum))
      case (Date, s: DateColumnStatistics) =>
        // the hybrid-calendar day Spark reads, rebased as Spark rebases it (a monotonic map)
        def day(d: Long): Option[Any] =
          if (d.isValidInt) Some(RebaseDateTime.rebaseJulianToGregorianDays(d.toInt)) else None
        (day(s.getMinimumDayOfEpoch), day(s.getMaximumDayOfEpoch))
      case (Dec(p, scale), s: DecimalColumnStatistics) =>
        def dec(h: org.apache.hadoop.hive.common.`type`.HiveDecimal): Option[Any] = Option(h).flatMap(x =>
          Try(Decimal(x.bigDecimalValue().setScale(scale), p, scale)).toOption)
        (dec(s.getMinimum), dec(s.getMaximum))
      case _ => (None, None)
    }
    ColumnStats(lo, hi, nulls)
  }

  /** ORC hands strings back decoded; a replacement character means bytes that were not UTF-8 and
   *  whose order is lost. */
  private def orcString(s: String): Option[Any] = Option(s).filterNot(_.contains('\uFFFD'))
    .map(UTF8String.fromString).filter(_.numBytes <= FileStats.MaxStringBytes)
}
