package org.apache.spark.sql.sparkclustering
package stats

import scala.util.Try
import scala.util.control.NonFatal

import com.fasterxml.jackson.core.JsonGenerator
import org.apache.hadoop.fs.{FileStatus, Path}

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.util.CharVarcharUtils
import org.apache.spark.sql.execution.command.DDLUtils
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.apache.spark.sql.sparkclustering.tables.CatalogTables
import org.apache.spark.sql.sparkclustering.tables.DataFile
import org.apache.spark.sql.sparkclustering.tables.DataFiles

/** What `FileStatsStore.statsFor` found: `stats` is aligned with the files asked about; every file
 *  counts once in `fromSidecar` (exact statistics the package wrote), `fromFooter` (read or cached
 *  from the file's own footer) or `unknown` (the footer could not be read). `footerReadNanos` is
 *  the wall time this call waited for footer reads. */
private[sparkclustering] final case class StatsLookup(stats: IndexedSeq[FileStats], fromSidecar: Int, fromFooter: Int, unknown: Int,
    footerReadNanos: Long)

/**
 * Per-file min / max / null count of parquet and orc tables, for planning-time data skipping.
 *
 * Two sources (FileStatsSource), both checked against the live file's size and modification time:
 *  - the table's sidecar (FileStatsSidecar), written by `write_file_stats` from Spark's own
 *    min/max over the rows (exact, every supported type);
 *  - the file's footer (Footers: ParquetFooters, OrcFooters), read on the driver in parallel and
 *    cached. A footer bound is used only when it provably bounds what Spark reads from the file;
 *    anything doubtful is None.
 */
private[sparkclustering] object FileStatsStore {
  import FileStatsSidecar._

  /** Statistics of `files` (live data files of one scan) of a parquet or orc table rooted at one
   *  of `roots`, as the scan's reader reads them (`ctx`). Never fails: a file whose statistics
   *  cannot be had is `FileStats.Unknown`; under a read setting the statistics do not model
   *  (`ctx.unmodelled`) every file is. */
  def statsFor(spark: SparkSession, roots: Seq[Path], ctx: ReadContext, dataSchema: StructType,
      files: Seq[FileStatus]): StatsLookup = {
    def unknown = StatsLookup(files.map(_ => FileStats.Unknown).toIndexedSeq, 0, 0, files.size, 0L)
    if (ctx.unmodelled.nonEmpty) unknown
    else try lookup(spark, roots, ctx, dataSchema, files) catch { case NonFatal(_) => unknown }
  }

  /** `statsFor` for files read with the session's settings and no relation options. */
  def statsFor(spark: SparkSession, roots: Seq[Path], format: String, dataSchema: StructType,
      files: Seq[FileStatus]): StatsLookup =
    statsFor(spark, roots, ReadContext(spark, format, Map.empty[String, String]), dataSchema, files)

  /** A modification time is part of every key: a file system that reports none (0) could hand out
   *  the statistics of an older file of the same name and size, so such files are always read. */
  private[sparkclustering] def hasMtime(f: FileStatus): Boolean = f.getModificationTime > 0

  /** The store's ETag of the file's content where the listing gives one (S3A, ABFS): part of every
   *  key next to size and mtime, since an object store's mtime has a resolution of one second and a
   *  copy (`cp -p`) can keep it, while another content has another ETag. */
  private[sparkclustering] def etagOf(f: FileStatus): Option[String] = f match {
    case e: org.apache.hadoop.fs.EtagSource => Option(e.getEtag).filter(_.nonEmpty)
    case _ => None
  }

  private def lookup(spark: SparkSession, roots: Seq[Path], ctx: ReadContext, dataSchema: StructType,
      listed: Seq[FileStatus]): StatsLookup = {
    val files = listed.toIndexedSeq // indexed below: a List would make every lookup O(files)
    val conf = Sessions.hadoopConf(spark)
    val fields = dataSchema.fields.toSeq.filter(recordable(_))
    val qualifiedRoots = roots.flatMap(r => Try(r.getFileSystem(conf).makeQualified(r)).toOption).distinct
      .sortBy(r => -r.toUri.getPath.length) // the innermost root that holds a file answers first
    // The same files (path, size, mtime, ETag), columns and read settings as a previous call give
    // the same statistics: answered from the memo. When that call took every file from the sidecar
    // (exact), without touching the store: a newer sidecar generation describes the same contents
    // alike (on S3 a LIST of the sidecar directory per query saved). Otherwise only while the
    // sidecar's generations are the same, so statistics written since replace footers' at once.
    lazy val sidecar = new SidecarStatsSource(conf, qualifiedRoots) // lists each root's sidecar once
    val memoKey = LookupMemo.Key(qualifiedRoots, fields, ctx)
    if (files.forall(hasMtime)) {
      LookupMemo.get(memoKey, files, sidecar.signature).foreach(found => return found.copy(footerReadNanos = 0L))
    }

    // the sidecar first (exact), the footers of the files it does not cover
    val fromSidecar = sidecar.statsFor(files, fields, ctx)
    val pending = files.indices.filter(i => fromSidecar(i).isEmpty)
    val started = System.nanoTime()
    val fromFooters = new FooterStatsSource(spark, conf).statsFor(pending.map(files), fields, ctx)
    val footerReadNanos = if (pending.isEmpty) 0L else System.nanoTime() - started
    val result = fromSidecar.toArray
    pending.zip(fromFooters).foreach { case (i, stats) => result(i) = stats }
    val unknown = fromFooters.count(_.isEmpty)
    val found = StatsLookup(result.toIndexedSeq.map(_.getOrElse(FileStats.Unknown)), files.size - pending.size,
      pending.size - unknown, unknown, footerReadNanos)
    // a file without mtime is read every time (hasMtime); a failed footer read is retried next time
    if (files.forall(hasMtime) && unknown == 0) LookupMemo.put(memoKey, files, sidecar.signature, found)
    found
  }

  /** The last answers of `lookup`, per table (roots + columns + settings), with the files and the
   *  sidecar generations they were for. */
  private object LookupMemo {
    final case class Key(roots: Seq[Path], fields: Seq[StructField], ctx: ReadContext)
    private final case class Answer(files: IndexedSeq[FileStatus], sidecarGenerations: Seq[Seq[(String, Long, Long)]],
        lookup: StatsLookup)
    private val capacity = 64
    private val answers = new java.util.LinkedHashMap[Key, Answer](16, 0.75f, true) {
      override def removeEldestEntry(e: java.util.Map.Entry[Key, Answer]): Boolean = size() > capacity
    }

    def get(key: Key, files: IndexedSeq[FileStatus], sidecarGenerations: => Seq[Seq[(String, Long, Long)]]): Option[StatsLookup] =
      synchronized(Option(answers.get(key))).filter(a => sameFiles(a.files, files))
        .filter(a => a.lookup.fromSidecar == files.size || a.sidecarGenerations == sidecarGenerations).map(_.lookup)

    def put(key: Key, files: IndexedSeq[FileStatus], sidecarGenerations: Seq[Seq[(String, Long, Long)]],
            lookup: StatsLookup): Unit =
      synchronized(answers.put(key, Answer(files, sidecarGenerations, lookup)))

    def clear(): Unit = synchronized(answers.clear())

    // Spark's in-memory index hands out the same FileStatus objects while its listing is cached,
    // so identity answers most checks; otherwise path + size + mtime decide.
    private def sameFiles(a: IndexedSeq[FileStatus], b: IndexedSeq[FileStatus]): Boolean =
      a.length == b.length && a.indices.forall { i =>
        val (x, y) = (a(i), b(i))
        (x eq y) || (x.getLen == y.getLen && x.getModificationTime == y.getModificationTime && x.getPath == y.getPath &&
          etagOf(x) == etagOf(y))
      }
  }

  /** `statsFor` over a catalog table's live files (for tests and inspection). */
  def statsForTable(spark: SparkSession, tableName: String): (Seq[DataFile], StatsLookup) = {
    val t = CatalogTables.table(spark, tableName)
    val format = formatOf(t).getOrElse(throw notAFileTable("statsForTable", tableName, t))
    val files = DataFiles.of(spark, t)
    val statuses = files.map(f => new FileStatus(f.size, false, 0, 0, f.modificationTime, f.path))
    val ctx = ReadContext(spark, format, readerOptions(t))
    (files, statsFor(spark, Seq(CatalogTables.location(t)), ctx, t.dataSchema, statuses))
  }

  /** The options a scan of `t` hands its reader (the table's storage properties, as Spark's
   *  catalog relation has them), minus the ones that name or find files, which `scan` sets. */
  private[sparkclustering] def readerOptions(t: CatalogTable): Map[String, String] =
    t.storage.properties.filter { case (k, _) =>
      !Set("path", "paths", "recursivefilelookup", "pathglobfilter", "basepath").contains(k.toLowerCase(java.util.Locale.ROOT))
    }

  /** `statsForTable` as JSON: {fromSidecar, fromFooter, unknown, footerReadNanos, files: [{path (as
   *  `_metadata.file_path`), rows, cols: {name: {min, max, nulls}}}]}. Floats and decimals are
   *  strings (Java's text: NaN, Infinity, -0.0), dates Int days, timestamps Long micros. */
  def describeTable(spark: SparkSession, tableName: String): String = {
    val (files, lookup) = statsForTable(spark, tableName)
    val types = CatalogTables.table(spark, tableName).dataSchema.fields.map(f => f.name -> f.dataType).toMap
    json { g =>
      g.writeStartObject()
      g.writeNumberField("fromSidecar", lookup.fromSidecar)
      g.writeNumberField("fromFooter", lookup.fromFooter)
      g.writeNumberField("unknown", lookup.unknown)
      g.writeNumberField("footerReadNanos", lookup.footerReadNanos)
      g.writeArrayFieldStart("files")
      files.zip(lookup.stats).foreach { case (file, stats) =>
        g.writeStartObject()
        g.writeStringField("path", file.filePath)
        stats.rowCount match { case Some(n) => g.writeNumberField("rows", n) case None => g.writeNullField("rows") }
        g.writeObjectFieldStart("cols")
        stats.columns.toSeq.sortBy(_._1).foreach { case (name, c) =>
          g.writeObjectFieldStart(name)
          Seq("min" -> c.min, "max" -> c.max).foreach { case (k, v) =>
            g.writeFieldName(k)
            v.fold(g.writeNull())(x => writeDisplay(g, x, types(name)))
          }
          c.nullCount.fold(g.writeNullField("nulls"))(n => g.writeNumberField("nulls", n))
          g.writeEndObject()
        }
        g.writeEndObject()
        g.writeEndObject()
      }
      g.writeEndArray()
      g.writeEndObject()
    }
  }

  private def writeDisplay(g: JsonGenerator, v: Any, dt: DataType): Unit = (v, dt) match {
    case (b: Boolean, _) => g.writeBoolean(b)
    case (f: Float, _) => g.writeString(f.toDouble.toString) // the widened value, as Python sees it
    case (d: Double, _) => g.writeString(d.toString)
    case (d: Decimal, _) => g.writeString(d.toJavaBigDecimal.toPlainString)
    case (s: UTF8String, _) => g.writeString(s.toString)
    case (n: Byte, _) => g.writeNumber(n.toInt)
    case (n: Short, _) => g.writeNumber(n.toInt)
    case (n: Int, _) => g.writeNumber(n)
    case (n: Long, _) => g.writeNumber(n)
    case (other, _) => g.writeString(String.valueOf(other))
  }

  /** The table's columns whose statistics are kept: supported types, but not CHAR(n) (Spark pads
   *  it on read, which changes its order). */
  private[sparkclustering] def recordable(field: StructField): Boolean =
    FileStats.supported(field.dataType) &&
      !CharVarcharUtils.getRawType(field.metadata).exists(_.isInstanceOf[CharType])


  /** For tests: forget every cached footer, sidecar and lookup. */
  def clearCaches(): Unit = { Footers.clearCache(); SidecarCache.clear(); LookupMemo.clear() }

  /** After this driver wrote a sidecar generation: the next lookup of every table lists its sidecar
   *  again (a rebuilt sidecar, `rebuild: true`, replaces what the memo answered from at once). */
  private[sparkclustering] def forgetLookups(): Unit = LookupMemo.clear()

  /** "parquet" or "orc" for a table Spark reads through its file source. */
  private[sparkclustering] def formatOf(t: CatalogTable): Option[String] = {
    if (t.tableType == org.apache.spark.sql.catalyst.catalog.CatalogTableType.VIEW) return None
    if (DDLUtils.isHiveTable(t)) {
      // STORED AS PARQUET / ORC, which Spark converts to its file source
      val serde = t.storage.serde.getOrElse("").toLowerCase
      if (serde.contains("parquet")) Some("parquet") else if (serde.contains(".orc.")) Some("orc") else None
    } else t.provider.map(_.toLowerCase).collect {
      case "parquet" | "org.apache.spark.sql.execution.datasources.parquet.parquetfileformat" |
           "org.apache.spark.sql.parquet" => "parquet"
      case "orc" | "org.apache.spark.sql.execution.datasources.orc.orcfileformat" |
           "org.apache.spark.sql.hive.orc.orcfileformat" | "org.apache.spark.sql.hive.orc" => "orc"
    }
  }

  private[sparkclustering] def notAFileTable(function: String, name: String, t: CatalogTable): RuntimeException =
    SparkClusteringErrors.invalidArgument(function, s"$name is not a parquet or orc table (it is a " +
      s"${t.tableType.name.toLowerCase} ${t.provider.getOrElse("")} table${t.storage.serde.map(s => s" with serde $s")
        .getOrElse("")}); file statistics are kept for parquet and orc file tables only")
}
