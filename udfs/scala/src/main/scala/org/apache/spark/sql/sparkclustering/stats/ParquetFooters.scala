package org.apache.spark.sql.sparkclustering
package stats

import java.io.{ByteArrayInputStream, IOException}
import java.nio.charset.StandardCharsets

import scala.jdk.CollectionConverters._
import scala.util.Try
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, FSDataInputStream}
import org.apache.parquet.format.{FileMetaData => ThriftFileMetaData, Util => ParquetThrift}
import org.apache.parquet.format.converter.ParquetMetadataConverter
import org.apache.parquet.io.api.Binary
import org.apache.parquet.schema.{LogicalTypeAnnotation, PrimitiveType, Type => ParquetType}
import org.apache.parquet.schema.LogicalTypeAnnotation.TimeUnit.{MICROS, MILLIS, NANOS}
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName

import org.apache.spark.sql.types.Decimal
import org.apache.spark.unsafe.types.UTF8String

import Footers._
import Footers.FileKind._

/** Parquet footers: the thrift footer as written (typed min_value / max_value, exactness flags,
 *  column orders), every row group's chunk statistics merged per top-level column, and whether
 *  Spark rebases the file's datetimes (its writer metadata). */
private[stats] object ParquetFooters extends FooterFormat {

  override def reader(conf: Configuration): FileStatus => Footer = parquetFooter(conf, _)

  private val SparkVersionKey = "org.apache.spark.version"
  private val SparkLegacyDateTimeKey = "org.apache.spark.legacyDateTime"
  private val SparkLegacyInt96Key = "org.apache.spark.legacyINT96"

  private def open(conf: Configuration, status: FileStatus): FSDataInputStream = {
    val fs = status.getPath.getFileSystem(conf)
    // with the listing's status an object store skips the HEAD request of a plain open
    try fs.openFile(status.getPath).withFileStatus(status).build().get()
    catch { case NonFatal(_) => fs.open(status.getPath) }
  }

  /** The thrift footer as written (not converted): it tells whether min/max came from the typed
   *  `min_value`/`max_value` fields and whether a writer marked them inexact (truncated). */
  private def readParquetMetadata(conf: Configuration, status: FileStatus): ThriftFileMetaData = {
    val len = status.getLen
    if (len < 12) throw new IOException(s"${status.getPath} is too short for parquet")
    val in = open(conf, status)
    try {
      // one read usually holds the whole footer
      val tailLen = math.min(len, 64L * 1024).toInt
      val tail = new Array[Byte](tailLen)
      in.readFully(len - tailLen, tail)
      val magic = new String(tail, tailLen - 4, 4, StandardCharsets.US_ASCII)
      if (magic != "PAR1") throw new IOException(s"${status.getPath}: no plain parquet footer (magic $magic)")
      val footerLen = (tail(tailLen - 8) & 0xff) | ((tail(tailLen - 7) & 0xff) << 8) |
        ((tail(tailLen - 6) & 0xff) << 16) | ((tail(tailLen - 5) & 0xff) << 24)
      if (footerLen <= 0 || footerLen > len - 12) throw new IOException(s"${status.getPath}: bad footer length")
      val bytes = if (footerLen + 8 <= tailLen) {
        java.util.Arrays.copyOfRange(tail, tailLen - 8 - footerLen, tailLen - 8)
      } else {
        val b = new Array[Byte](footerLen)
        in.readFully(len - 8 - footerLen, b)
        b
      }
      ParquetThrift.readFileMetaData(new ByteArrayInputStream(bytes))
    } finally in.close()
  }

  private def parquetKind(field: ParquetType): FileKind = {
    if (!field.isPrimitive || field.isRepetition(ParquetType.Repetition.REPEATED)) return Other
    val p: PrimitiveType = field.asPrimitiveType()
    val logical = p.getLogicalTypeAnnotation
    (p.getPrimitiveTypeName, logical) match {
      case (PrimitiveTypeName.BOOLEAN, null) => Bool
      case (PrimitiveTypeName.INT32, null) => Integral(32)
      case (PrimitiveTypeName.INT64, null) => Integral(64)
      // unsigned integers are read into wider Spark types with another order: not kept
      case (PrimitiveTypeName.INT32 | PrimitiveTypeName.INT64, i: LogicalTypeAnnotation.IntLogicalTypeAnnotation)
        if i.isSigned => Integral(i.getBitWidth)
      case (_, d: LogicalTypeAnnotation.DecimalLogicalTypeAnnotation) => p.getPrimitiveTypeName match {
        case PrimitiveTypeName.INT32 | PrimitiveTypeName.INT64 | PrimitiveTypeName.BINARY |
             PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY => Dec(d.getPrecision, d.getScale)
        case _ => Other
      }
      case (PrimitiveTypeName.INT32, _: LogicalTypeAnnotation.DateLogicalTypeAnnotation) => Date
      case (PrimitiveTypeName.INT64, t: LogicalTypeAnnotation.TimestampLogicalTypeAnnotation) =>
        Timestamp(t.isAdjustedToUTC)
      case (PrimitiveTypeName.FLOAT, null) => Float32
      case (PrimitiveTypeName.DOUBLE, null) => Float64
      case (PrimitiveTypeName.BINARY, _: LogicalTypeAnnotation.StringLogicalTypeAnnotation) => Utf8
      // INT96 timestamps carry no usable statistics; everything else is not compared
      case _ => Other
    }
  }

  private def parquetFooter(conf: Configuration, status: FileStatus): Footer = {
    val thrift = readParquetMetadata(conf, status)
    // parquet's converter: the file's schema, and statistics with its corrupt-stats and sort-order
    // rules (legacy min/max of an unsigned-order type such as strings are dropped)
    val converter = new ParquetMetadataConverter()
    val meta = converter.fromParquetMetadata(thrift).getFileMetaData
    val createdBy = meta.getCreatedBy
    val kv = Option(meta.getKeyValueMetaData).map(_.asScala.toMap).getOrElse(Map.empty[String, String])
    val datetimes =
      if (kv.contains(SparkLegacyDateTimeKey) || kv.contains(SparkLegacyInt96Key)) DatetimesRebased
      else kv.get(SparkVersionKey) match {
        case Some(v) if v < "3.0.0" => DatetimesRebased // Spark 2.x wrote the hybrid calendar
        case Some(_) => DatetimesExact
        case None => DatetimesByReadMode
      }
    // without column_orders the typed min_value/max_value of strings and binary decimals have no
    // defined order (parquet-format): such bounds are not kept
    val typedOrder = thrift.isSetColumn_orders && !thrift.getColumn_orders.isEmpty
    val rowGroups = Option(thrift.getRow_groups).map(_.asScala.toIndexedSeq).getOrElse(IndexedSeq.empty)
    val rowCount = rowGroups.map(_.getNum_rows).sum
    // top-level column chunks of every row group, by column name
    val chunks = rowGroups.map { rg =>
      rg.getColumns.asScala.iterator.filter(_.isSetMeta_data).map(_.getMeta_data)
        .filter(m => m.getPath_in_schema != null && m.getPath_in_schema.size == 1)
        .map(m => m.getPath_in_schema.get(0) -> m).toMap
    }
    val maxHoldsNaN = writerFoldsNaNIntoMax(createdBy)
    val columns = meta.getSchema.getFields.asScala.toIndexedSeq.map { field =>
      val kind = parquetKind(field)
      val stats = if (kind == Other) ColumnStats(None, None, None)
        else Try(parquetColumn(converter, createdBy, typedOrder, maxHoldsNaN, field.asPrimitiveType(), kind,
          rowGroups.map(_.getNum_rows),
          chunks.map(_.get(field.getName)))).getOrElse(ColumnStats(None, None, None))
      FooterColumn(field.getName, kind, stats)
    }
    Footer(rowCount, columns, datetimes, byPosition = false, writer = Option(createdBy).getOrElse(""))
  }

  private val ParquetMrVersion = """parquet-mr version (\d+)\.(\d+)\.\d+.*""".r

  /** parquet-mr 1.10 to 1.17 fold NaN into a float / double chunk's max (its comparators order by
   *  `Double.compare`: NaN is the largest), and parquet's readers, this converter included, drop
   *  the min and max of a chunk whose bound is NaN. A max such a writer left is then the exact max
   *  of NaN-free values. Before 1.10 a NaN could be skipped by `>`; from 1.18 NaN is left out of
   *  min / max and counted apart (nan_count), as other writers leave it out: no max is kept. */
  private[stats] def writerFoldsNaNIntoMax(createdBy: String): Boolean = Option(createdBy).exists {
    case ParquetMrVersion(major, minor) => major == "1" && minor.toInt >= 10 && minor.toInt <= 17
    case _ => false
  }

  /** One column over every row group: a bound is known only if every row group holding a
   *  non-NULL value has it. */
  private def parquetColumn(converter: ParquetMetadataConverter, createdBy: String, typedOrder: Boolean,
      maxHoldsNaN: Boolean, p: PrimitiveType, kind: FileKind, rows: IndexedSeq[Long],
      chunks: IndexedSeq[Option[org.apache.parquet.format.ColumnMetaData]]): ColumnStats = {
    var lo: Option[Any] = None
    var hi: Option[Any] = None
    var loKnown = true
    var hiKnown = true
    var nulls: Option[Long] = Some(0L)
    // parquet-mr cuts long string bounds when asked to (parquet.statistics.truncate.length) without
    // saying so: exact only where the writer flags them exact
    var cut = false
    // order of the kind's representation (the writer's order for integers, dates, decimals, times;
    // byte order for strings)
    val ordering: Ordering[Any] = (kind match {
      case Integral(_) | Timestamp(_) => Ordering.Long
      case Date => Ordering.Int
      // total orders (NaN largest, -0.0 below 0.0), as Scala 2.13's TotalOrdering, on every Scala version
      case Float32 => Ordering.fromLessThan[Float]((a, b) => java.lang.Float.compare(a, b) < 0)
      case Float64 => Ordering.fromLessThan[Double]((a, b) => java.lang.Double.compare(a, b) < 0)
      case Bool => Ordering.Boolean
      case Utf8 => Ordering.fromLessThan[UTF8String](_.compareTo(_) < 0)
      case Dec(_, _) => Ordering.fromLessThan[Decimal](_.compare(_) < 0)
      case Other => throw new IllegalStateException("no ordering")
    }).asInstanceOf[Ordering[Any]]
    rows.indices.foreach { g =>
      val groupRows = rows(g)
      chunks(g) match {
        case _ if groupRows == 0 => // nothing in this row group
        case Some(meta) if meta.isSetStatistics =>
          val ts = meta.getStatistics
          val groupNulls = if (ts.isSetNull_count) Some(ts.getNull_count) else None
          nulls = for (a <- nulls; b <- groupNulls) yield a + b
          val allNull = groupNulls.contains(groupRows)
          if (!allNull) {
            val st: org.apache.parquet.column.statistics.Statistics[_] = converter.fromParquetStatistics(createdBy, ts, p)
            // byte-array bounds need the typed fields in a declared order: legacy (untyped) min/max
            // were ordered byte by byte, signed, which is wrong for decimals and strings
            val byteArray = p.getPrimitiveTypeName == PrimitiveTypeName.BINARY ||
              p.getPrimitiveTypeName == PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY
            val untypedBytes = byteArray && !(typedOrder && ts.isSetMin_value && ts.isSetMax_value)
            if (st.isEmpty || !st.hasNonNullValue || untypedBytes) {
              loKnown = false; hiKnown = false
            } else {
              // a writer that truncated a bound says so; such a bound is not kept
              if (kind == Utf8 && !SparkLine.parquetBoundsFlaggedExact(ts)) cut = true
              val loValue = if (SparkLine.parquetMinInexact(ts, byteArray)) None
                else parquetValue(kind, p, st.genericGetMin, roundUp = false)
              val hiValue = if (SparkLine.parquetMaxInexact(ts, byteArray)) None
                else parquetValue(kind, p, st.genericGetMax, roundUp = true)
              if (loValue.isEmpty) loKnown = false
              if (hiValue.isEmpty) hiKnown = false
              if (loKnown) lo = Some(lo.fold(loValue.get)(ordering.min(_, loValue.get)))
              if (hiKnown) hi = Some(hi.fold(hiValue.get)(ordering.max(_, hiValue.get)))
            }
          }
        case _ => // no chunk or no statistics
          loKnown = false; hiKnown = false; nulls = None
      }
    }
    val (minOut, maxOut) = kind match {
      // most writers leave NaN out of min / max, but NaN is Spark's largest double: their max proves
      // nothing (see writerFoldsNaNIntoMax for those whose max does); a NaN min (from a NaN-first
      // writer) neither
      case Float32 => (lo.filterNot(_.asInstanceOf[Float].isNaN), hi.filter(_ => maxHoldsNaN))
      case Float64 => (lo.filterNot(_.asInstanceOf[Double].isNaN), hi.filter(_ => maxHoldsNaN))
      case _ => (lo, hi)
    }
    ColumnStats(if (loKnown) minOut else None, if (hiKnown) maxOut else None, nulls, cut)
  }

  /** A parquet statistics value in the kind's representation; None when it cannot be exact. */
  private def parquetValue(kind: FileKind, p: PrimitiveType, v: Any, roundUp: Boolean): Option[Any] =
    (kind, v) match {
      case (Integral(_), i: java.lang.Integer) => Some(i.longValue)
      case (Integral(_), l: java.lang.Long) => Some(l.longValue)
      case (Date, i: java.lang.Integer) => Some(i.intValue)
      case (Timestamp(_), l: java.lang.Long) =>
        p.getLogicalTypeAnnotation.asInstanceOf[LogicalTypeAnnotation.TimestampLogicalTypeAnnotation].getUnit match {
          case MILLIS => Try(Math.multiplyExact(l.longValue, 1000L)).toOption
          case MICROS => Some(l.longValue)
          case NANOS =>
            Some(if (roundUp) -Math.floorDiv(-l.longValue, 1000L) else Math.floorDiv(l.longValue, 1000L))
        }
      case (Float32, f: java.lang.Float) => Some(f.floatValue)
      case (Float64, d: java.lang.Double) => Some(d.doubleValue)
      case (Bool, b: java.lang.Boolean) => Some(b.booleanValue)
      case (Utf8, b: Binary) =>
        if (b.length > FileStats.MaxStringBytes) None else Some(UTF8String.fromBytes(b.getBytes.clone()))
      case (Dec(precision, scale), n) =>
        val unscaled = n match {
          case i: java.lang.Integer => BigInt(i.intValue)
          case l: java.lang.Long => BigInt(l.longValue)
          // big-endian two's complement, as parquet stores FIXED_LEN_BYTE_ARRAY / BINARY decimals
          case b: Binary if b.length > 0 => BigInt(b.getBytes)
          case _ => return None
        }
        Try(Decimal(new java.math.BigDecimal(unscaled.bigInteger, scale), precision, scale)).toOption
      case _ => None
    }
}
