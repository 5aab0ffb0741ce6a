package org.apache.spark.sql.sparkclustering

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, IOException}
import java.net.URI
import java.nio.charset.StandardCharsets
import java.util.UUID
import java.util.concurrent.{Callable, ConcurrentHashMap, ExecutionException, Future, LinkedBlockingQueue, ThreadFactory,
  ThreadPoolExecutor, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger

import scala.jdk.CollectionConverters._
import scala.util.Try
import scala.util.control.NonFatal

import com.fasterxml.jackson.core.{JsonFactory, JsonGenerator}
import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, FSDataInputStream, Path}
import org.apache.orc.{BooleanColumnStatistics, DateColumnStatistics, DecimalColumnStatistics, DoubleColumnStatistics,
  IntegerColumnStatistics, OrcFile, StringColumnStatistics, TypeDescription}
import org.apache.parquet.format.{FileMetaData => ThriftFileMetaData, Util => ParquetThrift}
import org.apache.parquet.format.converter.ParquetMetadataConverter
import org.apache.parquet.io.api.Binary
import org.apache.parquet.schema.{LogicalTypeAnnotation, PrimitiveType, Type => ParquetType}
import org.apache.parquet.schema.LogicalTypeAnnotation.TimeUnit.{MICROS, MILLIS, NANOS}
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName

import org.apache.spark.sql.{Column, Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.apache.spark.sql.catalyst.util.{CharVarcharUtils, RebaseDateTime}
import org.apache.spark.sql.execution.command.{DDLUtils, LeafRunnableCommand}
import org.apache.spark.sql.execution.datasources.DataSource
import org.apache.spark.sql.functions.{count, lit, max, min}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/** What `FileStatsStore.statsFor` found: `stats` is aligned with the files asked about; every file
 *  counts once in `fromSidecar` (exact statistics the package wrote), `fromFooter` (read or cached
 *  from the file's own footer) or `unknown` (the footer could not be read). `footerReadNanos` is
 *  the wall time this call waited for footer reads. */
final case class StatsLookup(stats: IndexedSeq[FileStats], fromSidecar: Int, fromFooter: Int, unknown: Int,
    footerReadNanos: Long)

/**
 * Per-file min / max / null count of parquet and orc tables, for planning-time data skipping.
 *
 * Two sources, both checked against the live file's size and modification time:
 *  - the table's sidecar `<root>/_sc_file_stats/stats-<epochMillis>-<uuid>.json`, written by
 *    `write_file_stats` from Spark's own min/max over the rows (exact, every supported type);
 *  - the file's footer, read on the driver in parallel and cached (bounded LRU). A footer bound is
 *    used only when it provably bounds what Spark reads from the file; anything doubtful is None.
 */
object FileStatsStore {

  val FooterThreadsConf = "spark.sparkclustering.skipping.footerThreads"
  val CacheFilesConf = "spark.sparkclustering.skipping.cacheFiles"
  val DefaultFooterThreads = 16
  val DefaultCacheFiles = 100000

  /** Spark's file listing skips names starting with `_`, so the sidecar is never read as data. */
  val SidecarDir = "_sc_file_stats"
  val FormatVersion = 1
  /** Longer string bounds are recorded as unknown: they cost memory and rarely prune anything. */
  val MaxStringBytes = 4096

  private val GenerationName = """stats-(\d+)-([0-9A-Za-z-]+)\.json""".r
  private val TmpPrefix = ".tmp-"

  // ---- the API the skipping rule calls --------------------------------------------------------

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
  private def hasMtime(f: FileStatus): Boolean = f.getModificationTime > 0

  private def lookup(spark: SparkSession, roots: Seq[Path], ctx: ReadContext, dataSchema: StructType,
      listed: Seq[FileStatus]): StatsLookup = {
    val files = listed.toIndexedSeq // indexed below: a List would make every lookup O(files)
    val conf = ReclusterFiles.hadoopConf(spark)
    val format = ctx.format
    val fields = dataSchema.fields.toSeq.filter(recordable(_))
    val qualifiedRoots = roots.flatMap(r => Try(r.getFileSystem(conf).makeQualified(r)).toOption).distinct
      .sortBy(r => -r.toUri.getPath.length) // the innermost root that holds a file answers first
    // one listing of each root's sidecar per call: the only file-system access when nothing changed
    val generationsOf = qualifiedRoots.map(r => r -> Try(generations(conf, r)).getOrElse(Seq.empty)).toMap

    // The same files (path, size, mtime), sidecar generations, columns and read settings as a
    // previous call give the same statistics: answer from the memo, without touching every file.
    val memoKey = LookupMemo.Key(qualifiedRoots, fields, ctx,
      qualifiedRoots.map(r => generationsOf(r).map(g => (g.getPath.getName, g.getLen, g.getModificationTime))))
    if (files.forall(hasMtime)) {
      LookupMemo.get(memoKey, files).foreach(found => return found.copy(footerReadNanos = 0L))
    }

    val sidecars = new java.util.HashMap[Path, Sidecar]()
    def sidecarOf(root: Path): Sidecar =
      sidecars.computeIfAbsent(root, r => Try(readSidecarCached(conf, r, generationsOf(r))).getOrElse(Sidecar.Empty))

    val result = new Array[FileStats](files.size)
    var fromSidecar = 0
    val needFooter = Seq.newBuilder[Int]
    files.iterator.zipWithIndex.foreach { case (file, i) =>
      val hit = qualifiedRoots.iterator.filter(_ => hasMtime(file)).flatMap { root =>
        relativePath(root, file.getPath).flatMap(rel =>
          sidecarOf(root).entries.get(EntryKey(rel, file.getLen, file.getModificationTime)))
      }.find(_.ctx == ctx.sidecarContext)
      hit match {
        case Some(entry) =>
          result(i) = entry.toFileStats(fields)
          fromSidecar += 1
        case None => needFooter += i
      }
    }

    val pending = needFooter.result()
    val started = System.nanoTime()
    val footers = readFooters(spark, conf, format, pending.map(files))
    val footerReadNanos = if (pending.isEmpty) 0L else System.nanoTime() - started
    var fromFooter = 0
    var unknown = 0
    pending.zip(footers).foreach {
      case (i, Some(footer)) =>
        result(i) = footer.toFileStats(fields, ctx)
        fromFooter += 1
      case (i, None) =>
        result(i) = FileStats.Unknown
        unknown += 1
    }
    val found = StatsLookup(result.toIndexedSeq, fromSidecar, fromFooter, unknown, footerReadNanos)
    // a file without mtime is read every time (hasMtime); a failed footer read is retried next time
    if (files.forall(hasMtime) && unknown == 0) LookupMemo.put(memoKey, files, found)
    found
  }

  /** The last answers of `lookup`, per table (roots + columns + settings + sidecar generations),
   *  with the files they were for. */
  private object LookupMemo {
    final case class Key(roots: Seq[Path], fields: Seq[StructField], ctx: ReadContext,
        sidecarGenerations: Seq[Seq[(String, Long, Long)]])
    private final case class Answer(files: IndexedSeq[FileStatus], lookup: StatsLookup)
    private val capacity = 64
    private val answers = new java.util.LinkedHashMap[Key, Answer](16, 0.75f, true) {
      override def removeEldestEntry(e: java.util.Map.Entry[Key, Answer]): Boolean = size() > capacity
    }

    def get(key: Key, files: IndexedSeq[FileStatus]): Option[StatsLookup] =
      synchronized(Option(answers.get(key))).filter(a => sameFiles(a.files, files)).map(_.lookup)

    def put(key: Key, files: IndexedSeq[FileStatus], lookup: StatsLookup): Unit =
      synchronized(answers.put(key, Answer(files, lookup)))

    def clear(): Unit = synchronized(answers.clear())

    // Spark's in-memory index hands out the same FileStatus objects while its listing is cached,
    // so identity answers most checks; otherwise path + size + mtime decide.
    private def sameFiles(a: IndexedSeq[FileStatus], b: IndexedSeq[FileStatus]): Boolean =
      a.length == b.length && a.indices.forall { i =>
        val (x, y) = (a(i), b(i))
        (x eq y) || (x.getLen == y.getLen && x.getModificationTime == y.getModificationTime && x.getPath == y.getPath)
      }
  }

  /** `statsFor` over a catalog table's live files (for tests and inspection). */
  def statsForTable(spark: SparkSession, tableName: String): (Seq[ReclusterFiles.DataFile], StatsLookup) = {
    val t = ReclusterFiles.table(spark, tableName)
    val format = formatOf(t).getOrElse(throw notAFileTable("statsForTable", tableName, t))
    val files = ReclusterFiles.dataFiles(spark, t)
    val statuses = files.map(f => new FileStatus(f.size, false, 0, 0, f.modificationTime, f.path))
    val ctx = ReadContext(spark, format, readerOptions(t))
    (files, statsFor(spark, Seq(ReclusterFiles.location(t)), ctx, t.dataSchema, statuses))
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
    val types = ReclusterFiles.table(spark, tableName).dataSchema.fields.map(f => f.name -> f.dataType).toMap
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

  private def isDatetime(dt: DataType): Boolean = dt match {
    case DateType | TimestampType | TimestampNTZType => true
    case _ => false
  }

  // ---- footers ------------------------------------------------------------------------------------

  /** A top-level column as the file declares it; bounds are already in the file type's Catalyst
   *  representation (Long for every integral width, Float, Double, Boolean, UTF8String, Int days,
   *  Long micros, Decimal). */
  private[sparkclustering] sealed trait FileKind
  private[sparkclustering] object FileKind {
    final case class Integral(bits: Int) extends FileKind
    case object Float32 extends FileKind
    case object Float64 extends FileKind
    case object Bool extends FileKind
    case object Utf8 extends FileKind
    case object Date extends FileKind
    final case class Timestamp(adjustedToUtc: Boolean) extends FileKind
    final case class Dec(precision: Int, scale: Int) extends FileKind
    case object Other extends FileKind
  }
  import FileKind._

  /** ResolveDefaultColumns.EXISTS_DEFAULT_COLUMN_METADATA_KEY: the value Spark reads for a column
   *  a file lacks, when there is one. */
  private val ExistsDefaultKey = "EXISTS_DEFAULT"

  /** Whether a footer's date/timestamp values are what Spark reads (Spark rebases some files). */
  private[sparkclustering] sealed trait Datetimes
  private case object DatetimesExact extends Datetimes
  private case object DatetimesRebased extends Datetimes
  /** Not written by Spark: Spark rebases them only when the read mode is LEGACY. */
  private case object DatetimesByReadMode extends Datetimes

  private[sparkclustering] final case class FooterColumn(name: String, kind: FileKind, stats: ColumnStats)

  private[sparkclustering] final case class Footer(rowCount: Long, columns: IndexedSeq[FooterColumn],
      datetimes: Datetimes, byPosition: Boolean) {

    private lazy val byLowerName: Map[String, IndexedSeq[FooterColumn]] =
      columns.groupBy(_.name.toLowerCase(java.util.Locale.ROOT))

    /** `fields`: the table's recordable columns. */
    def toFileStats(fields: Seq[StructField], ctx: ReadContext): FileStats = {
      val datetimesKnown = datetimes match {
        case DatetimesExact => true
        case DatetimesRebased => false
        case DatetimesByReadMode => !ctx.parquetRebaseLegacy
      }
      val cols = if (byPosition) Map.empty[String, ColumnStats] else fields.iterator
        .filter(f => datetimesKnown || !isDatetime(f.dataType))
        .flatMap { f =>
          val stats = matchColumn(f.name, ctx.caseSensitive) match {
            // a table column the file lacks is read as NULL in every row, or as its existence
            // default (a column added with DEFAULT): no statistics then
            case Seq() if f.metadata.contains(ExistsDefaultKey) => None
            case Seq() => Some(ColumnStats(None, None, Some(rowCount)))
            case Seq(c) => convert(c, f.dataType)
            case _ => None // Spark fails the read on several matches: no statistics claimed
          }
          stats.map(f.name -> _)
        }.toMap
      FileStats(Some(rowCount), cols)
    }

    /** The file's columns Spark's reader matches to a table column: the exact name when
     *  case-sensitive, else every column of that name in any case. */
    private def matchColumn(name: String, caseSensitive: Boolean): IndexedSeq[FooterColumn] = {
      val sameLetters = byLowerName.getOrElse(name.toLowerCase(java.util.Locale.ROOT), IndexedSeq.empty)
      if (caseSensitive) sameLetters.filter(_.name == name) else sameLetters
    }
  }

  /** The file column's statistics as the table's type, when Spark reads the one as the other
   *  without changing any value (integral widening only). */
  private def convert(c: FooterColumn, target: DataType): Option[ColumnStats] = {
    val f: Option[Any => Any] = (c.kind, target) match {
      case (Integral(b), ByteType) if b <= 8 => Some(v => v.asInstanceOf[Long].toByte)
      case (Integral(b), ShortType) if b <= 16 => Some(v => v.asInstanceOf[Long].toShort)
      case (Integral(b), IntegerType) if b <= 32 => Some(v => v.asInstanceOf[Long].toInt)
      case (Integral(_), LongType) => Some(identity)
      case (Float32, FloatType) | (Float64, DoubleType) | (Bool, BooleanType) | (Date, DateType) => Some(identity)
      case (Utf8, _: StringType) => Some(identity)
      case (Timestamp(true), TimestampType) | (Timestamp(false), TimestampNTZType) => Some(identity)
      // Decimal is mutable: every caller gets its own
      case (Dec(p, s), d: DecimalType) if d.precision == p && d.scale == s => Some(v => v.asInstanceOf[Decimal].clone())
      case _ => None
    }
    f.map(g => ColumnStats(c.stats.min.map(g), c.stats.max.map(g), c.stats.nullCount))
  }

  private def intConf(spark: SparkSession, key: String, default: Int): Int =
    Try(spark.conf.get(key, default.toString).trim.toInt).toOption.filter(_ > 0).getOrElse(default)

  private object FooterCache {
    final case class Key(path: String, size: Long, modificationTime: Long)
    private var capacity = DefaultCacheFiles
    private val entries = new java.util.LinkedHashMap[Key, Footer](1024, 0.75f, true) {
      override def removeEldestEntry(e: java.util.Map.Entry[Key, Footer]): Boolean = size() > capacity
    }
    def get(k: Key): Option[Footer] = synchronized(Option(entries.get(k)))
    def put(k: Key, v: Footer): Unit = synchronized(entries.put(k, v))
    def resize(n: Int): Unit = synchronized {
      if (n != capacity) {
        capacity = n
        val it = entries.entrySet().iterator()
        while (entries.size() > capacity && it.hasNext) { it.next(); it.remove() }
      }
    }
    def clear(): Unit = synchronized(entries.clear())
  }

  /** For tests: forget every cached footer and sidecar. */
  def clearCaches(): Unit = { FooterCache.clear(); SidecarCache.clear(); LookupMemo.clear() }

  /** Shared by every session of the driver; idle threads end after a minute. */
  private lazy val footerPool: ThreadPoolExecutor = {
    val n = new AtomicInteger(0)
    val pool = new ThreadPoolExecutor(DefaultFooterThreads, DefaultFooterThreads, 60L, TimeUnit.SECONDS,
      new LinkedBlockingQueue[Runnable](), new ThreadFactory {
        def newThread(r: Runnable): Thread = {
          val t = new Thread(r, s"spark-clustering-footer-${n.incrementAndGet()}")
          t.setDaemon(true)
          t
        }
      })
    pool.allowCoreThreadTimeOut(true)
    pool
  }

  private def poolOfSize(n: Int): ThreadPoolExecutor = {
    val pool = footerPool
    pool.synchronized {
      if (pool.getMaximumPoolSize != n) {
        // grow the maximum first, shrink the core first: the pool refuses core > maximum
        if (n > pool.getMaximumPoolSize) { pool.setMaximumPoolSize(n); pool.setCorePoolSize(n) }
        else { pool.setCorePoolSize(n); pool.setMaximumPoolSize(n) }
      }
    }
    pool
  }

  /** Footers of `files`, aligned; None where the footer could not be read. */
  private[sparkclustering] def readFooters(spark: SparkSession, conf: Configuration, format: String,
      listed: Seq[FileStatus]): IndexedSeq[Option[Footer]] = {
    val files = listed.toIndexedSeq
    if (files.isEmpty) return IndexedSeq.empty
    FooterCache.resize(intConf(spark, CacheFilesConf, DefaultCacheFiles))
    val read: FileStatus => Footer = format.toLowerCase match {
      case "parquet" => parquetFooter(conf, _)
      case "orc" =>
        val footerConf = orcFooterConf(conf)
        orcFooter(footerConf, _)
      case other => _ => throw new IOException(s"no footer statistics for format $other")
    }
    def cacheKey(f: FileStatus) =
      Some(FooterCache.Key(f.getPath.toString, f.getLen, f.getModificationTime)).filter(_ => hasMtime(f))
    def readOne(f: FileStatus): Option[Footer] = {
      cacheKey(f).flatMap(FooterCache.get).orElse {
        // any failure (unreadable, not this format, encrypted, vanished) only costs the skipping;
        // failures are not cached, the next query tries again
        val footer = try Some(read(f)) catch { case NonFatal(_) => None }
        for (k <- cacheKey(f); v <- footer) FooterCache.put(k, v)
        footer
      }
    }
    val cached = files.map(f => cacheKey(f).flatMap(FooterCache.get))
    val missing = files.indices.filter(i => cached(i).isEmpty)
    if (missing.size <= 1) return files.indices.map(i => cached(i).orElse(readOne(files(i))))
    val pool = poolOfSize(intConf(spark, FooterThreadsConf, DefaultFooterThreads))
    val futures: Map[Int, Future[Option[Footer]]] = missing.map { i =>
      i -> pool.submit(new Callable[Option[Footer]] { def call(): Option[Footer] = readOne(files(i)) })
    }.toMap
    try {
      files.indices.map { i =>
        cached(i).orElse(futures.get(i).flatMap { fu =>
          try fu.get() catch { case _: ExecutionException => None }
        })
      }
    } catch {
      case e: InterruptedException =>
        futures.values.foreach(_.cancel(true))
        throw e
    }
  }

  // ---- parquet footers ----------------------------------------------------------------------------

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
    val columns = meta.getSchema.getFields.asScala.toIndexedSeq.map { field =>
      val kind = parquetKind(field)
      val stats = if (kind == Other) ColumnStats(None, None, None)
        else Try(parquetColumn(converter, createdBy, typedOrder, field.asPrimitiveType(), kind, rowGroups.map(_.getNum_rows),
          chunks.map(_.get(field.getName)))).getOrElse(ColumnStats(None, None, None))
      FooterColumn(field.getName, kind, stats)
    }
    Footer(rowCount, columns, datetimes, byPosition = false)
  }

  /** One column over every row group: a bound is known only if every row group holding a
   *  non-NULL value has it. */
  private def parquetColumn(converter: ParquetMetadataConverter, createdBy: String, typedOrder: Boolean, p: PrimitiveType,
      kind: FileKind, rows: IndexedSeq[Long],
      chunks: IndexedSeq[Option[org.apache.parquet.format.ColumnMetaData]]): ColumnStats = {
    var lo: Option[Any] = None
    var hi: Option[Any] = None
    var loKnown = true
    var hiKnown = true
    var nulls: Option[Long] = Some(0L)
    // order of the kind's representation (the writer's order for integers, dates, decimals, times;
    // byte order for strings)
    val ordering: Ordering[Any] = (kind match {
      case Integral(_) | Timestamp(_) => Ordering.Long
      case Date => Ordering.Int
      case Float32 => Ordering.Float.TotalOrdering
      case Float64 => Ordering.Double.TotalOrdering
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
              val loValue = if (ts.isSetIs_min_value_exact && !ts.is_min_value_exact) None
                else parquetValue(kind, p, st.genericGetMin, roundUp = false)
              val hiValue = if (ts.isSetIs_max_value_exact && !ts.is_max_value_exact) None
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
      // writers leave NaN out of min/max, but NaN is Spark's largest double: a footer max proves
      // nothing; a NaN min (from a NaN-first writer) neither
      case Float32 => (lo.filterNot(_.asInstanceOf[Float].isNaN), None)
      case Float64 => (lo.filterNot(_.asInstanceOf[Double].isNaN), None)
      case _ => (lo, hi)
    }
    ColumnStats(if (loKnown) minOut else None, if (hiKnown) maxOut else None, nulls)
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
        if (b.length > MaxStringBytes) None else Some(UTF8String.fromBytes(b.getBytes.clone()))
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

  // ---- orc footers ----------------------------------------------------------------------------------

  /** The row count in the file's footer. */
  private[sparkclustering] def footerRowCount(conf: Configuration, format: String, status: FileStatus): Option[Long] =
    Try(format.toLowerCase match {
      case "parquet" => parquetFooter(conf, status).rowCount
      case "orc" => orcFooter(orcFooterConf(conf), status).rowCount
    }).toOption

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
    .map(UTF8String.fromString).filter(_.numBytes <= MaxStringBytes)

  // ---- paths -------------------------------------------------------------------------------------

  /** `file` relative to `root` (forward slashes, not URL-encoded), if it lies below it. */
  private[sparkclustering] def relativePath(root: Path, file: Path): Option[String] = {
    val r = root.toUri
    val f = file.toUri
    val sameFs = Option(r.getScheme).map(_.toLowerCase) == Option(f.getScheme).map(_.toLowerCase) &&
      Option(r.getAuthority).filter(_.nonEmpty) == Option(f.getAuthority).filter(_.nonEmpty)
    val prefix = r.getPath.stripSuffix("/") + "/"
    if (sameFs && f.getPath.startsWith(prefix) && f.getPath.length > prefix.length) Some(f.getPath.substring(prefix.length))
    else None
  }

  // ---- the sidecar ---------------------------------------------------------------------------------

  private[sparkclustering] final case class EntryKey(path: String, size: Long, modificationTime: Long)

  /** One column of a sidecar entry: the Spark type it was computed for, and its statistics. */
  private[sparkclustering] final case class EntryColumn(dataType: String, stats: ColumnStats)

  private[sparkclustering] final case class Entry(key: EntryKey, rows: Long, ctx: String,
      columns: Map[String, EntryColumn]) {

    /** `fields`: the table's recordable columns. */
    def toFileStats(fields: Seq[StructField]): FileStats = {
      def own(v: Any): Any = v match { case d: Decimal => d.clone() case other => other }
      val cols = fields.iterator.flatMap { f =>
        columns.get(f.name).filter(_.dataType == f.dataType.catalogString)
          .map(c => f.name -> c.stats.copy(min = c.stats.min.map(own), max = c.stats.max.map(own)))
      }.toMap
      FileStats(Some(rows), cols)
    }

    /** Written under the same settings for exactly these columns: nothing to recompute. */
    def covers(ctxNow: String, wanted: Seq[StructField]): Boolean =
      ctx == ctxNow && columns.size == wanted.size &&
        wanted.forall(f => columns.get(f.name).exists(_.dataType == f.dataType.catalogString))
  }

  /** Merged generations of one root: `entries` by path + size + mtime (the newer generation wins),
   *  `read` the generation files whose content was taken in (a writer deletes those, and only
   *  those, once its own generation is in place). */
  private[sparkclustering] final case class Sidecar(entries: Map[EntryKey, Entry], read: Seq[Path])
  private[sparkclustering] object Sidecar { val Empty: Sidecar = Sidecar(Map.empty, Nil) }

  private object SidecarCache {
    final case class Listed(signature: Seq[(String, Long, Long)], sidecar: Sidecar)
    private val capacity = 256
    private val entries = new java.util.LinkedHashMap[String, Listed](64, 0.75f, true) {
      override def removeEldestEntry(e: java.util.Map.Entry[String, Listed]): Boolean = size() > capacity
    }
    def get(root: String): Option[Listed] = synchronized(Option(entries.get(root)))
    def put(root: String, v: Listed): Unit = synchronized(entries.put(root, v))
    def clear(): Unit = synchronized(entries.clear())
  }

  private def generations(conf: Configuration, root: Path): Seq[FileStatus] = {
    val dir = new Path(root, SidecarDir)
    val fs = dir.getFileSystem(conf)
    val listed = try fs.listStatus(dir).toSeq catch { case _: java.io.FileNotFoundException => Seq.empty }
    listed.filter(s => s.isFile && GenerationName.pattern.matcher(s.getPath.getName).matches())
      .sortBy(s => s.getPath.getName match {
        case GenerationName(millis, id) => (BigInt(millis), id)
      })
  }

  /** The root's sidecar, parsed again only when its listing (name, size, mtime of every
   *  generation) changed. */
  private[sparkclustering] def readSidecarCached(conf: Configuration, root: Path): Sidecar =
    readSidecarCached(conf, root, generations(conf, root))

  private def readSidecarCached(conf: Configuration, root: Path, gens: Seq[FileStatus]): Sidecar = {
    val signature = gens.map(s => (s.getPath.getName, s.getLen, s.getModificationTime))
    SidecarCache.get(root.toString).filter(_.signature == signature).map(_.sidecar).getOrElse {
      val sidecar = parseGenerations(conf, gens)
      SidecarCache.put(root.toString, SidecarCache.Listed(signature, sidecar))
      sidecar
    }
  }

  private def parseGenerations(conf: Configuration, gens: Seq[FileStatus]): Sidecar = {
    val merged = scala.collection.mutable.HashMap[EntryKey, Entry]()
    val read = Seq.newBuilder[Path]
    gens.foreach { g => // oldest first, so a newer generation overwrites
      readGeneration(conf, g.getPath).foreach { entries =>
        entries.foreach(e => merged.update(e.key, e))
        read += g.getPath
      }
    }
    Sidecar(merged.toMap, read.result())
  }

  private val mapper = new ObjectMapper()
  private val jsonFactory = new JsonFactory()

  /** Entries of one generation file; None when it was written by a format version this reader
   *  does not know (it is then neither used nor deleted). Unparsable lines are skipped. */
  private def readGeneration(conf: Configuration, path: Path): Option[Seq[Entry]] = {
    val text = try {
      val in = path.getFileSystem(conf).open(path)
      try new String(in.readAllBytes(), StandardCharsets.UTF_8) finally in.close()
    } catch { case NonFatal(_) => return Some(Nil) } // vanished or unreadable: nothing from it
    val nodes = text.split("\n").iterator.filter(_.trim.nonEmpty).map(l => Try(mapper.readTree(l)).toOption).toSeq
    val versions = nodes.flatten.filter(_.isObject).flatMap(n => Option(n.get("v"))).map(_.asText).toSet
    if (versions.exists(_ != FormatVersion.toString)) None
    else Some(nodes.flatten.flatMap(n => Try(parseEntry(n)).toOption.flatten))
  }

  private val DecimalName = """decimal\((\d+),(\d+)\)""".r
  private val typeCache = new ConcurrentHashMap[String, Option[DataType]]()
  /** A recorded type name back to its type (the common names without Spark's SQL parser). */
  private def parseType(s: String): Option[DataType] =
    typeCache.computeIfAbsent(s, t => Try(t match {
      case "boolean" => BooleanType
      case "tinyint" => ByteType
      case "smallint" => ShortType
      case "int" => IntegerType
      case "bigint" => LongType
      case "float" => FloatType
      case "double" => DoubleType
      case "date" => DateType
      case "timestamp" => TimestampType
      case "timestamp_ntz" => TimestampNTZType
      case "string" => StringType
      case DecimalName(p, sc) => DecimalType(p.toInt, sc.toInt)
      case other => CatalystSqlParser.parseDataType(other)
    }).toOption.filter(dt => FileStats.supported(dt) && dt.catalogString == t))

  private def parseEntry(n: JsonNode): Option[Entry] = {
    def req(name: String): JsonNode = Option(n.get(name)).filterNot(_.isNull)
      .getOrElse(throw new IllegalArgumentException(s"no $name"))
    if (req("v").asText != FormatVersion.toString) return None
    val key = EntryKey(req("path").textValue, req("size").asText.toLong, req("mtime").asText.toLong)
    if (key.path == null || key.path.isEmpty) return None
    val cols = req("cols").properties().asScala.map { e =>
      val c = e.getValue
      val typeName = c.get("type").textValue
      val dt = parseType(typeName).getOrElse(throw new IllegalArgumentException(s"type $typeName"))
      def bound(name: String): Option[Any] = Option(c.get(name)).filterNot(_.isNull).map(decodeValue(_, dt))
      val nulls = Option(c.get("nulls")).filterNot(_.isNull).map(_.asText.toLong)
      e.getKey -> EntryColumn(typeName, ColumnStats(bound("min"), bound("max"), nulls))
    }.toMap
    Some(Entry(key, req("rows").asText.toLong, req("ctx").textValue, cols))
  }

  // Typed encoding that round-trips exactly: integers as decimal text, floats as their raw IEEE
  // bits in hex (NaN, infinities, -0.0 survive), decimals as plain text, dates as Int days,
  // timestamps as Long micros, strings as JSON strings, booleans as JSON booleans.

  private def encodeValue(g: JsonGenerator, v: Any, dt: DataType): Unit = (dt, v) match {
    case (ByteType | ShortType | IntegerType | LongType | DateType | TimestampType | TimestampNTZType, n) =>
      g.writeString(n.toString)
    case (FloatType, f: Float) => g.writeString(f"${java.lang.Float.floatToRawIntBits(f)}%08x")
    case (DoubleType, d: Double) => g.writeString(f"${java.lang.Double.doubleToRawLongBits(d)}%016x")
    case (_: DecimalType, d: Decimal) => g.writeString(d.toJavaBigDecimal.toPlainString)
    case (_: StringType, s: UTF8String) => g.writeString(s.toString)
    case (BooleanType, b: Boolean) => g.writeBoolean(b)
    case _ => throw new IllegalArgumentException(s"cannot encode $v as $dt")
  }

  /** Whether `v` survives `encodeValue` exactly (a string that is not valid UTF-8 does not). */
  private def encodable(v: Any): Boolean = v match {
    case s: UTF8String => s.numBytes <= MaxStringBytes && UTF8String.fromString(s.toString) == s
    case _ => true
  }

  private def decodeValue(n: JsonNode, dt: DataType): Any = {
    def text = Option(n.textValue).getOrElse(throw new IllegalArgumentException("expected a string"))
    dt match {
      case ByteType => text.toByte
      case ShortType => text.toShort
      case IntegerType | DateType => text.toInt
      case LongType | TimestampType | TimestampNTZType => text.toLong
      case FloatType =>
        require(text.length == 8)
        java.lang.Float.intBitsToFloat(java.lang.Integer.parseUnsignedInt(text, 16))
      case DoubleType =>
        require(text.length == 16)
        java.lang.Double.longBitsToDouble(java.lang.Long.parseUnsignedLong(text, 16))
      case d: DecimalType =>
        val bd = new java.math.BigDecimal(text)
        require(bd.scale == d.scale)
        Decimal(bd, d.precision, d.scale)
      case _: StringType => UTF8String.fromString(text)
      case BooleanType =>
        require(n.isBoolean)
        n.booleanValue
      case other => throw new IllegalArgumentException(s"type $other")
    }
  }

  private def json(body: JsonGenerator => Unit): String = {
    val out = new ByteArrayOutputStream()
    val g = jsonFactory.createGenerator(out)
    try body(g) finally g.close()
    new String(out.toByteArray, StandardCharsets.UTF_8)
  }

  private[sparkclustering] def encodeEntry(e: Entry, types: Map[String, DataType]): String = json { g =>
    g.writeStartObject()
    g.writeNumberField("v", FormatVersion)
    g.writeStringField("path", e.key.path)
    g.writeNumberField("size", e.key.size)
    g.writeNumberField("mtime", e.key.modificationTime)
    g.writeNumberField("rows", e.rows)
    g.writeStringField("ctx", e.ctx)
    g.writeObjectFieldStart("cols")
    e.columns.toSeq.sortBy(_._1).foreach { case (name, c) =>
      val dt = types(name)
      g.writeObjectFieldStart(name)
      g.writeStringField("type", c.dataType)
      c.stats.min.filter(encodable).foreach { v => g.writeFieldName("min"); encodeValue(g, v, dt) }
      c.stats.max.filter(encodable).foreach { v => g.writeFieldName("max"); encodeValue(g, v, dt) }
      c.stats.nullCount.foreach(n => g.writeNumberField("nulls", n))
      g.writeEndObject()
    }
    g.writeEndObject()
    g.writeEndObject()
  }

  /** Publish one generation: written under a `.tmp-` name, then renamed into place. */
  private[sparkclustering] def writeGeneration(conf: Configuration, root: Path, lines: Iterator[String]): Path = {
    val dir = new Path(root, SidecarDir)
    val fs = dir.getFileSystem(conf)
    fs.mkdirs(dir)
    val name = s"stats-${System.currentTimeMillis()}-${UUID.randomUUID()}.json"
    val tmp = new Path(dir, TmpPrefix + name)
    val out = fs.create(tmp, false)
    try lines.foreach(l => out.write((l + "\n").getBytes(StandardCharsets.UTF_8))) finally out.close()
    val target = new Path(dir, name)
    if (!fs.rename(tmp, target)) {
      fs.delete(tmp, false)
      throw new IOException(s"spark_clustering: could not publish the file statistics $target")
    }
    target
  }

  /** `.tmp-` files of writers that died more than a day ago. */
  private[sparkclustering] def deleteStaleTemporaries(conf: Configuration, root: Path): Unit = {
    val dir = new Path(root, SidecarDir)
    val fs = dir.getFileSystem(conf)
    val dayAgo = System.currentTimeMillis() - 24L * 3600 * 1000
    Try(fs.listStatus(dir).toSeq).getOrElse(Seq.empty)
      .filter(s => s.getPath.getName.startsWith(TmpPrefix) && s.getModificationTime < dayAgo)
      .foreach(s => Try(fs.delete(s.getPath, false)))
  }

  // ---- tables --------------------------------------------------------------------------------------

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

/** `select * from write_file_stats('db.t', rebuild)`: compute exact per-file statistics (Spark's own
 *  min / max / count over the rows) of the table's data files that the sidecar does not cover yet
 *  (every file with rebuild = true), in one Spark job, and publish one new sidecar generation
 *  holding every live file. One row (table, files, files_scanned, sidecar, elapsed_ms, rows, bytes):
 *  rows and bytes add up the entries of the published generation (what clustered_table checks a
 *  new table's row count against). */
case class WriteFileStats(tableName: String, rebuild: Boolean) extends LeafRunnableCommand {
  import FileStatsStore._

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
    val t = ReclusterFiles.table(spark, tableName)
    val format = formatOf(t).getOrElse(throw notAFileTable(f, tableName, t))
    val dataSchema = t.dataSchema
    val conf = ReclusterFiles.hadoopConf(spark)
    val root = {
      val r = ReclusterFiles.location(t)
      r.getFileSystem(conf).makeQualified(r)
    }
    // the sidecar holds the files below the table's root (a partition elsewhere keeps its footers)
    // that have a modification time (part of the key)
    val files = ReclusterFiles.dataFiles(spark, t).filter(_.modificationTime > 0)
      .flatMap(d => relativePath(root, d.path).map(rel => EntryKey(rel, d.size, d.modificationTime) -> d))
    if (files.isEmpty) return Seq(Row(tableName, 0L, 0L, null, elapsed, 0L, 0L, Seq.empty[String]))

    // the values the table's readers read: its own options, the session's and Hadoop's settings
    val options = readerOptions(t)
    val ctx = ReadContext(spark, format, options)
    val columns = dataSchema.fields.toSeq.filter(recordable(_))
    val existing = try readSidecarCached(conf, root) catch { case NonFatal(_) => Sidecar.Empty }
    val kept = if (rebuild) Map.empty[EntryKey, Entry] else files.flatMap { case (key, _) =>
      existing.entries.get(key).filter(_.covers(ctx.sidecarContext, columns)).map(key -> _)
    }.toMap
    val toScan = files.filterNot { case (key, _) => kept.contains(key) }
    // per file, the columns its footer proves exactly (none when it could not be read, and none
    // under a read setting footers do not model: the rows are read as those settings read them)
    val proven = if (ctx.unmodelled.nonEmpty) Map.empty[EntryKey, Entry]
      else exactFromFooters(spark, conf, format, columns, ctx, toScan)
    // a file whose footer proves every column exactly needs no read of its rows
    val fromFooters = proven.filter { case (_, e) => e.columns.size == columns.size }
    val toRead = toScan.filterNot { case (key, _) => fromFooters.contains(key) }
    // the job reads only the columns some file to read cannot take from its footer (Spark writes
    // INT96 timestamps without statistics and a double's footer maximum cannot be trusted: a table
    // of such columns and many others reads those few, not every column again)
    val scanColumns = columns.filter(c => toRead.exists { case (key, _) => !proven.get(key).exists(_.columns.contains(c.name)) })
    val scanned = if (toRead.isEmpty) Map.empty[EntryKey, Entry]
      else scan(spark, format, options, dataSchema, scanColumns, root, toRead.map(_._2), toRead.size == files.size,
        ctx.sidecarContext).map { case (key, e) =>
          // the job's row count and columns, the footer's exact bounds for the columns it did not read
          key -> e.copy(columns = proven.get(key).map(_.columns).getOrElse(Map.empty) ++ e.columns)
        }

    val entries = files.flatMap { case (key, _) => kept.get(key).orElse(fromFooters.get(key)).orElse(scanned.get(key)) }
    val unchanged = toScan.isEmpty && existing.read.size == 1 && existing.entries.size == entries.size
    val published = if (unchanged) existing.read.head else {
      val types = columns.map(c => c.name -> c.dataType).toMap
      val path = writeGeneration(conf, root, entries.iterator.map(encodeEntry(_, types)))
      // every generation read here is subsumed by the new one; a concurrent writer's is not touched
      existing.read.foreach(p => Try(p.getFileSystem(conf).delete(p, false)))
      deleteStaleTemporaries(conf, root)
      path
    }
    Seq(Row(tableName, files.size.toLong, toScan.size.toLong, published.toString, elapsed,
      entries.map(_.rows).sum, entries.map(_.key.size).sum,
      if (toRead.isEmpty) Seq.empty[String] else scanColumns.map(_.name)))
  }

  /** Per file, an entry of the columns its footer proves (read in parallel on the driver, no Spark
   *  job): a column whose exact min and max (or, with no non-NULL value, nothing) and NULL count the
   *  footer gives. Parquet and orc record the data's own min / max; the values footers cannot be
   *  trusted for (INT96 and legacy-rebased datetimes, float / double maxima, strings without a
   *  column order, ...) come back unknown from `Footer.toFileStats`, and that column is read
   *  instead. No entry for a file whose footer could not be read. */
  private def exactFromFooters(spark: SparkSession, conf: Configuration, format: String, columns: Seq[StructField],
      ctx: ReadContext, files: Seq[(EntryKey, ReclusterFiles.DataFile)]): Map[EntryKey, Entry] = {
    if (files.isEmpty) return Map.empty
    val statuses = files.map { case (_, d) => new FileStatus(d.size, false, 0, 0L, d.modificationTime, d.path) }
    files.zip(readFooters(spark, conf, format, statuses)).flatMap {
      case ((key, _), Some(footer)) =>
        val stats = footer.toFileStats(columns, ctx)
        val rows = footer.rowCount
        val exact = columns.flatMap { c =>
          stats.columns.get(c.name).filter { s =>
            s.nullCount.exists(n => n >= 0 && n <= rows) &&
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
      columns: Seq[StructField], root: Path, files: Seq[ReclusterFiles.DataFile], all: Boolean,
      ctx: String): Map[EntryKey, Entry] = {
    val reader = ReclusterFiles.classic(spark).read.format(format).options(options).schema(dataSchema)
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
    val fs = root.getFileSystem(ReclusterFiles.hadoopConf(spark))
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
    val conf = ReclusterFiles.hadoopConf(spark)
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
