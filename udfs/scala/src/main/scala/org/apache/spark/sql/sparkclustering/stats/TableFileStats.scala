package org.apache.spark.sql.sparkclustering
package stats

import java.time.LocalDate

import org.apache.spark.sql.{Column, Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.functions.{count, lit, max, min}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.apache.spark.sql.sparkclustering.tables.CatalogTables

/** `select * from table_file_stats('db.t', array('a', 'b'))`: what `file_stats` computes for a plain
 *  parquet/orc table, one row per data file holding rows: file_path (as `_metadata.file_path`),
 *  row_count and per column `<c>__min`, `<c>__max` (the column's type) and `<c>__null_count`; equal
 *  to the GROUP BY over the rows. Taken from the metadata where it is exact (FileStatsStore: the
 *  sidecar, then the footers, a column only with its exact min, max and NULL count, as
 *  write_file_stats takes it); the other files only (a truncated or missing bound, a column the
 *  files keep no statistics of, a partition column, an unreadable footer) are measured from their
 *  rows in one job, which reads just those files (Spark prunes the listing by the file-path filter). */
private[sparkclustering] case class TableFileStats(tableName: String, columnNames: Seq[String]) extends LeafRunnableCommand {

  /** The table's column of every name asked (the exact name, else the one of that name in any case),
   *  keeping the name as asked: the result's columns are named after it, as file_stats names them. */
  @transient private lazy val columns: Seq[(String, StructField)] = {
    val schema = CatalogTables.table(SparkSession.active, tableName).schema
    columnNames.map { name =>
      val field = schema.fields.find(_.name == name).orElse(
        schema.fields.filter(_.name.equalsIgnoreCase(name)) match { case Array(f) => Some(f) case _ => None })
      name -> field.getOrElse(throw SparkClusteringErrors.invalidArgument("table_file_stats",
        s"$tableName has no column $name (its columns: ${schema.fieldNames.mkString(", ")})"))
    }
  }

  override lazy val output: Seq[Attribute] =
    Seq(AttributeReference("file_path", StringType, nullable = false)(),
      AttributeReference("row_count", LongType, nullable = false)()) ++
      columns.flatMap { case (name, f) =>
        Seq(AttributeReference(name + "__min", f.dataType, nullable = true)(),
          AttributeReference(name + "__max", f.dataType, nullable = true)(),
          AttributeReference(name + "__null_count", LongType, nullable = false)())
      }

  override def run(spark: SparkSession): Seq[Row] = {
    val t = CatalogTables.table(spark, tableName)
    val (files, lookup) = FileStatsStore.statsForTable(spark, tableName)
    val recordable = t.dataSchema.fields.filter(FileStatsStore.recordable).map(_.name).toSet
    // per file, its row and every asked column's exact statistics, or None: the file is read. A file
    // of zero rows has no row in the result, whatever its columns' statistics.
    val fromMetadata = files.zip(lookup.stats).map { case (file, stats) =>
      val exact = stats.rowCount.flatMap { rows =>
        if (rows == 0) Some((0L, Nil))
        else TableFileStats.exactColumns(stats, rows, columns.map(_._2).filter(f => recordable(f.name)))
          .filter(_.size == columns.size) // a partition or unrecordable column: no statistics
          .map(rows -> _)
      }
      file.filePath -> exact
    }
    val toRead = fromMetadata.collect { case (path, None) => path }
    val measured = fromMetadata.collect { case (path, Some((rows, cols))) if rows > 0 =>
      Row.fromSeq(Seq(path, rows) ++ cols.flatMap { case (f, s) =>
        Seq(s.min.map(TableFileStats.external(_, f.dataType)).orNull, s.max.map(TableFileStats.external(_, f.dataType)).orNull,
          s.nullCount.get)
      })
    }
    measured ++ (if (toRead.isEmpty) Nil else readRows(spark, toRead, toRead.size == files.size))
  }

  /** The GROUP BY of file_stats over the rows of `paths` (every file when `all`). */
  private def readRows(spark: SparkSession, paths: Seq[String], all: Boolean): Seq[Row] = {
    val df = Sessions.classic(spark).table(tableName)
    // Spark's file-metadata column, found even when the table has a column named _metadata
    val filePath = df.metadataColumn("_metadata").getField("file_path")
    val wanted = if (all) df else df.where(filePath.isin(paths: _*))
    def col(name: String): Column = df.col("`" + name.replace("`", "``") + "`")
    val aggregates = Seq(count(lit(1))) ++ columns.flatMap { case (_, f) =>
      Seq(min(col(f.name)), max(col(f.name)), count(lit(1)) - count(col(f.name)))
    }
    // Catalyst values as they are (no conversion through Java dates), made external exactly below
    val rows: Array[InternalRow] = wanted.groupBy(filePath).agg(aggregates.head, aggregates.tail: _*)
      .queryExecution.executedPlan.executeCollect()
    rows.toSeq.map { r =>
      Row.fromSeq(Seq(r.getUTF8String(0).toString, r.getLong(1)) ++ columns.zipWithIndex.flatMap { case ((_, f), i) =>
        val base = 2 + 3 * i
        def bound(o: Int): Any = if (r.isNullAt(o)) null else TableFileStats.external(r.get(o, f.dataType), f.dataType)
        Seq(bound(base), bound(base + 1), r.getLong(base + 2))
      })
    }
  }
}

private[sparkclustering] object TableFileStats {

  /** The statistics of `fields` when every one is exact: a known NULL count and either an exact min
   *  and max (some non-NULL value) or none (every row NULL). What write_file_stats keeps from a
   *  footer; the sidecar's are Spark's own min / max. */
  private[stats] def exactColumns(stats: FileStats, rows: Long, fields: Seq[StructField]): Option[Seq[(StructField, ColumnStats)]] = {
    val exact = fields.flatMap { f =>
      stats.columns.get(f.name).filter { s =>
        !s.cut && s.nullCount.exists(n => n >= 0 && n <= rows) &&
          ((s.min.isDefined && s.max.isDefined && s.nullCount.exists(_ < rows)) ||
            (s.min.isEmpty && s.max.isEmpty && s.nullCount.contains(rows)))
      }.map(f -> _)
    }
    if (exact.size == fields.size) Some(exact) else None
  }

  /** A Catalyst value as the Row of a command holds it, converted back to the same Catalyst value:
   *  java.time for datetimes (no calendar rebase on the way), strings and decimals as they are. */
  private[stats] def external(v: Any, dt: DataType): Any = (dt, v) match {
    case (DateType, d: Int) => LocalDate.ofEpochDay(d.toLong)
    case (TimestampType, m: Long) => DateTimeUtils.microsToInstant(m)
    case (TimestampNTZType, m: Long) => DateTimeUtils.microsToLocalDateTime(m)
    case (_, s: UTF8String) => s.clone()
    case (_, d: Decimal) => d.clone()
    case _ => v
  }
}
