package org.apache.spark.sql.sparkclustering
package stats

import java.net.URI

import scala.util.Try
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, Path}

import org.apache.spark.sql.{Column, Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.execution.datasources.DataSource
import org.apache.spark.sql.functions.{count, lit, max, min}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.apache.spark.sql.sparkclustering.tables.CatalogTables
import org.apache.spark.sql.sparkclustering.tables.DataFile
import org.apache.spark.sql.sparkclustering.tables.DataFiles

/** `select * from write_file_stats('db.t', rebuild, own_write)`: compute exact per-file statistics
 *  (Spark's own min / max / count over the rows) of the table's data files that the sidecar does not
 *  cover yet (every file with rebuild = true), in one Spark job, and publish one new sidecar
 *  generation holding every live file. One row (table, files, files_scanned, sidecar, elapsed_ms,
 *  rows, bytes): rows and bytes add up the entries of the published generation (what clustered_table
 *  checks a new table's row count against).
 *
 *  `ownWrite`: every file to cover was written by this session's Spark just before (clustered_table's
 *  new table). A parquet string bound is then taken from the footer when parquet-mr wrote it under
 *  settings that keep bounds whole (no `parquet.statistics.truncate.length` in the session or the
 *  table's options: parquet-mr's default keeps them whole, and drops, never cuts, a bound over its
 *  size limit), where otherwise every file's string columns are read (parquet-mr flags no bound
 *  exact, and a writer configured to may cut them). */
private[sparkclustering] case class WriteFileStats(tableName: String, rebuild: Boolean, ownWrite: Boolean = false)
    extends LeafRunnableCommand {
  import FileStatsStore._
  import FileStatsSidecar._
  import Footers._

  override val output: Seq[Attribute] = Seq(
    AttributeReference("table", StringType, nullable = false)(),
    AttributeReference("files", LongType, nullable = false)(),
    AttributeReference("files_scanned", LongType, nullable = false)(),
    AttributeReference("sidecar", StringType, nullable = true)(),
    AttributeReference("elapsed_ms", LongType, nullable = false)(),
    AttributeReference("rows", LongType, nullable = false)(),
    AttributeReference("bytes", LongType, nullable = false)(),
    AttributeReference("columns_scanned", ArrayType(StringType, containsNull = false), nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    val started = System.nanoTime()
    def elapsed = (System.nanoTime() - started) / 1000000L
    val f = "write_file_stats"
    val t = CatalogTables.table(spark, tableName)
    val format = formatOf(t).getOrElse(throw notAFileTable(f, tableName, t))
    val dataSchema = t.dataSchema
    val conf = Sessions.hadoopConf(spark)
    val root = {
      val r = CatalogTables.location(t)
      r.getFileSystem(conf).makeQualified(r)
    }
    // the sidecar holds the files below the table's root (a partition elsewhere keeps its footers)
    // that have a modification time (part of the key)
    val files = DataFiles.of(spark, t).filter(_.modificationTime > 0)
      .flatMap(d => relativePath(root, d.path).map(rel => EntryKey(rel, d.size, d.modificationTime) -> d))
    if (files.isEmpty) return Seq(Row(tableName, 0L, 0L, null, elapsed, 0L, 0L, Seq.empty[String]))

    // the values the table's readers read: its own options, the session's and Hadoop's settings
    val options = readerOptions(t)
    val ctx = ReadContext(spark, format, options)
    val columns = dataSchema.fields.toSeq.filter(recordable(_))
    val existing = try readSidecarCached(conf, root) catch { case NonFatal(_) => Sidecar.Empty }
    val kept = if (rebuild) Map.empty[EntryKey, Entry] else files.flatMap { case (key, d) =>
      existing.entries.get(key).filter(e => e.covers(ctx.sidecarContext, columns) && e.etag == d.etag).map(key -> _)
    }.toMap
    val toScan = files.filterNot { case (key, _) => kept.contains(key) }
    // per file, the columns its footer proves exactly (none when it could not be read, and none
    // under a read setting footers do not model: the rows are read as those settings read them)
    val proven = if (ctx.unmodelled.nonEmpty) Map.empty[EntryKey, Entry]
      else exactFromFooters(spark, conf, format, columns, ctx, toScan,
        stringsWhole = ownWrite && format == "parquet" && writerKeepsStringBoundsWhole(conf, options))
    // a file whose footer proves every column exactly needs no read of its rows
    val fromFooters = proven.filter { case (_, e) => e.columns.size == columns.size }
    val toRead = toScan.filterNot { case (key, _) => fromFooters.contains(key) }
    // the job reads only the columns some file to read cannot take from its footer (Spark writes
    // INT96 timestamps without statistics, and a double's footer maximum only some writers prove: a table
    // of such columns and many others reads those few, not every column again)
    val scanColumns = columns.filter(c => toRead.exists { case (key, _) => !proven.get(key).exists(_.columns.contains(c.name)) })
    val scanned = if (toRead.isEmpty) Map.empty[EntryKey, Entry]
      else scan(spark, format, options, dataSchema, scanColumns, root, toRead.map(_._2), toRead.size == files.size,
        ctx.sidecarContext).map { case (key, e) =>
          // the job's row count and columns, the footer's exact bounds for the columns it did not read
          key -> e.copy(columns = proven.get(key).map(_.columns).getOrElse(Map.empty) ++ e.columns)
        }

    // the ETag of the content as listed (a file that changed after the listing gets no entry from
    // the scan, whose size and mtime must match the listing's)
    val entries = files.flatMap { case (key, d) =>
      kept.get(key).orElse(fromFooters.get(key).orElse(scanned.get(key)).map(_.copy(etag = d.etag)))
    }
    val unchanged = toScan.isEmpty && existing.read.size == 1 && existing.entries.size == entries.size
    val published = if (unchanged) existing.read.head else {
      val types = columns.map(c => c.name -> c.dataType).toMap
      val path = writeGeneration(conf, root, entries.iterator.map(encodeEntry(_, types)))
      // every generation read here is subsumed by the new one; a concurrent writer's is not touched
      existing.read.foreach(p => Try(p.getFileSystem(conf).delete(p, false)))
      deleteStaleTemporaries(conf, root)
      FileStatsStore.forgetLookups()
      path
    }
    Seq(Row(tableName, files.size.toLong, toScan.size.toLong, published.toString, elapsed,
      entries.map(_.rows).sum, entries.map(_.key.size).sum,
      if (toRead.isEmpty) Seq.empty[String] else scanColumns.map(_.name)))
  }

  /** parquet-mr's setting that cuts string bounds in footers to that many bytes (default: whole). */
  private val StatisticsTruncateLength = "parquet.statistics.truncate.length"

  /** Whether this session's parquet writer keeps string bounds whole: neither its settings (`conf`,
   *  the session's SQL confs included) nor the table's `options` set a truncation length. */
  private def writerKeepsStringBoundsWhole(conf: Configuration, options: Map[String, String]): Boolean =
    (Option(conf.get(StatisticsTruncateLength)) ++
      options.collect { case (k, v) if k.equalsIgnoreCase(StatisticsTruncateLength) => v }).forall { v =>
      Try(v.trim.toInt).toOption.contains(Int.MaxValue)
    }

  /** Per file, an entry of the columns its footer proves (read in parallel on the driver, no Spark
   *  job): a column whose exact min and max (or, with no non-NULL value, nothing) and NULL count the
   *  footer gives. Parquet and orc record the data's own min / max; the values footers cannot be
   *  trusted for (INT96 and legacy-rebased datetimes, float / double maxima of most writers, strings without a
   *  column order, ...) come back unknown from `Footer.toFileStats`, and that column is read
   *  instead. No entry for a file whose footer could not be read. */
  private def exactFromFooters(spark: SparkSession, conf: Configuration, format: String, columns: Seq[StructField],
      ctx: ReadContext, files: Seq[(EntryKey, DataFile)], stringsWhole: Boolean): Map[EntryKey, Entry] = {
    if (files.isEmpty) return Map.empty
    val statuses = files.map { case (_, d) => new FileStatus(d.size, false, 0, 0L, d.modificationTime, d.path) }
    files.zip(readFooters(spark, conf, format, statuses)).flatMap {
      case ((key, _), Some(footer)) =>
        val stats = footer.toFileStats(columns, ctx)
        val rows = footer.rowCount
        // parquet-mr under settings that keep string bounds whole (see the class's comment)
        val uncut = stringsWhole && footer.writer.startsWith("parquet-mr")
        val exact = columns.flatMap { c =>
          // a bound the writer may have cut (a parquet string no flag says is exact) is read from the
          // rows once here, so that every later measure (table_file_stats) takes it from the sidecar
          stats.columns.get(c.name).filter { s =>
            (!s.cut || uncut) && s.nullCount.exists(n => n >= 0 && n <= rows) &&
              ((s.min.isDefined && s.max.isDefined && s.nullCount.exists(_ < rows)) ||
                (s.min.isEmpty && s.max.isEmpty && s.nullCount.contains(rows)))
          }.map(s => c.name -> EntryColumn(c.dataType.catalogString, s))
        }
        Some(key -> Entry(key, rows, ctx.sidecarContext, exact.toMap))
      case _ => None
    }.toMap
  }

  /** One aggregation job: per file, count(*) and per column min, max, count(column). Files that
   *  changed or vanished since the listing yield no entry. */
  private def scan(spark: SparkSession, format: String, options: Map[String, String], dataSchema: StructType,
      columns: Seq[StructField], root: Path, files: Seq[DataFile], all: Boolean,
      ctx: String): Map[EntryKey, Entry] = {
    val reader = Sessions.classic(spark).read.format(format).options(options).schema(dataSchema)
      // the files as they are: no partition inference, no globbing of names with [ ] * ?
      .option("recursiveFileLookup", "true")
      .option(DataSource.GLOB_PATHS_KEY, "false")
      .option("ignoreMissingFiles", "true")
      // statistics of a partly read file would be wrong: a corrupt file fails the job instead
      .option("ignoreCorruptFiles", "false")
    // Spark lists many explicit paths one by one (a listing job); the root is one recursive listing,
    // cut down to the wanted files by a file-path filter that Spark applies to the listing
    val byRoot = all || files.size > 32
    val df = if (byRoot) reader.load(root.toString) else reader.load(files.map(_.path.toString): _*)
    // Spark's file-metadata column, found even when the table has a column named _metadata
    val metadata = df.metadataColumn("_metadata")
    val wanted = if (byRoot && !all) df.where(metadata.getField("file_path").isin(files.map(_.filePath): _*)) else df
    def col(name: String): Column = df.col("`" + name.replace("`", "``") + "`")
    val aggregates = Seq(count(lit(1))) ++ columns.flatMap(c => Seq(min(col(c.name)), max(col(c.name)), count(col(c.name))))
    val grouped = wanted.groupBy(metadata.getField("file_path"), metadata.getField("file_size"),
      metadata.getField("file_modification_time")).agg(aggregates.head, aggregates.tail: _*)
    // Catalyst values as they are: no conversion through Java dates or decimals
    val rows: Array[InternalRow] = grouped.queryExecution.executedPlan.executeCollect()
    val fs = root.getFileSystem(Sessions.hadoopConf(spark))
    val listed = files.map(d => d.path.toUri.getPath -> d).toMap
    val withRows = rows.iterator.flatMap { r =>
      // _metadata.file_path is a URI string (percent-encoded); mtime is a timestamp in micros
      val path = fs.makeQualified(new Path(new URI(r.getUTF8String(0).toString)))
      val size = r.getLong(1)
      val mtimeMillis = r.getLong(2) / 1000L
      listed.get(path.toUri.getPath).filter(d => d.size == size && d.modificationTime == mtimeMillis)
        .flatMap(d => relativePath(root, d.path)).map { rel =>
          val rowCount = r.getLong(3)
          val cols = columns.zipWithIndex.map { case (c, i) =>
            val base = 4 + 3 * i
            def bound(ordinal: Int): Option[Any] = if (r.isNullAt(ordinal)) None else Some(r.get(ordinal, c.dataType) match {
              case s: UTF8String => s.clone() // detach from the row's buffer
              case d: Decimal => d.clone()
              case v => v
            })
            c.name -> EntryColumn(c.dataType.catalogString,
              ColumnStats(bound(base), bound(base + 1), Some(rowCount - r.getLong(base + 2))))
          }.toMap
          val key = EntryKey(rel, size, mtimeMillis)
          key -> Entry(key, rowCount, ctx, cols)
        }
    }.toMap
    // a file without a group holds no rows when it is still there as listed (else it vanished)
    // and its footer agrees (a path the job saw under another spelling must not pass for empty)
    val seen = withRows.keySet.map(_.path)
    val conf = Sessions.hadoopConf(spark)
    val empty = files.flatMap(d => relativePath(root, d.path).filterNot(seen.contains).map(_ -> d)).flatMap {
      case (rel, d) =>
        Try(fs.getFileStatus(d.path)).toOption
          .filter(s => s.getLen == d.size && s.getModificationTime == d.modificationTime)
          .filter(s => footerRowCount(conf, format, s).contains(0L)).map { _ =>
            val key = EntryKey(rel, d.size, d.modificationTime)
            key -> Entry(key, 0L, ctx, columns.map(c =>
              c.name -> EntryColumn(c.dataType.catalogString, ColumnStats(None, None, Some(0L)))).toMap)
          }
    }
    withRows ++ empty
  }
}
