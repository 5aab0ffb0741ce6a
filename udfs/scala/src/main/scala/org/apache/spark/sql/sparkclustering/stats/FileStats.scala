package org.apache.spark.sql.sparkclustering
package stats

import org.apache.spark.sql.types._

/**
 * What one data file is proven to hold in one column. Values are Catalyst's internal values for
 * the column's Spark type: Boolean, Byte, Short, Int, Long, Float, Double, Decimal, Int days
 * (DateType), Long microseconds (TimestampType, TimestampNTZType), UTF8String (StringType).
 *
 * `min` / `max` bound the file's non-NULL values in Spark's ordering (NaN is the largest double,
 * -0.0 = 0.0); None = not proven (the file may hold any value). `nullCount` None = unknown.
 * A bound may be loose (min lower, max higher than the data) but never tight past the data.
 * `cut`: the bounds may have been shortened by the writer (a parquet string bound that no flag
 * says is exact): they bound the data, but are not its min / max (file_stats does not take them).
 */
private[sparkclustering] final case class ColumnStats(min: Option[Any], max: Option[Any], nullCount: Option[Long],
    cut: Boolean = false)

/**
 * One file's statistics. `rowCount` None = unknown. `columns` by the table's field name (the
 * name in the table schema); a column that is absent is unknown.
 */
private[sparkclustering] final case class FileStats(rowCount: Option[Long], columns: Map[String, ColumnStats])

private[sparkclustering] object FileStats {
  val Unknown: FileStats = FileStats(None, Map.empty)

  /** Longer string bounds are recorded as unknown: they cost memory and rarely prune anything. */
  val MaxStringBytes = 4096

  /** Types whose min/max the package records and data skipping compares. */
  def supported(dataType: DataType): Boolean = dataType match {
    case BooleanType | ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType => true
    case _: DecimalType | DateType | TimestampType | TimestampNTZType => true
    // byte order is the string order only for the default (UTF8_BINARY) collation
    case s: StringType => SparkLine.binaryOrdered(s)
    case _ => false
  }
}
