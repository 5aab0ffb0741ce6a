package org.apache.spark.sql.sparkclustering
package stats

import java.io.IOException
import java.util.concurrent.{Callable, ExecutionException, Future, LinkedBlockingQueue, ThreadFactory, ThreadPoolExecutor,
  TimeUnit}
import java.util.concurrent.atomic.AtomicInteger

import scala.util.Try
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.FileStatus

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.types._

/**
 * Statistics from the data files' own footers (parquet row-group statistics, orc file statistics),
 * read on the driver in parallel and cached (bounded LRU, keyed by path + size + mtime). Each
 * format's `FooterFormat` (ParquetFooters, OrcFooters) reads a footer into a `Footer`: the file's
 * top-level columns as the file declares them, bounds in the file type's representation. A bound
 * becomes a table column's statistics only when it provably bounds what Spark's reader reads from
 * the file under the scan's settings (`Footer.toFileStats`); anything doubtful is unknown.
 */
private[sparkclustering] object Footers {

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
  private[sparkclustering] val ExistsDefaultKey = "EXISTS_DEFAULT"

  /** Whether a footer's date/timestamp values are what Spark reads (Spark rebases some files). */
  private[sparkclustering] sealed trait Datetimes
  private[sparkclustering] case object DatetimesExact extends Datetimes
  private[sparkclustering] case object DatetimesRebased extends Datetimes
  /** Not written by Spark: Spark rebases them only when the read mode is LEGACY. */
  private[sparkclustering] case object DatetimesByReadMode extends Datetimes

  private[sparkclustering] final case class FooterColumn(name: String, kind: FileKind, stats: ColumnStats)

  /** `writer`: the file's writer as it names itself (parquet's created_by; '' when unknown). */
  private[sparkclustering] final case class Footer(rowCount: Long, columns: IndexedSeq[FooterColumn],
      datetimes: Datetimes, byPosition: Boolean, writer: String = "") {

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
    f.map(g => ColumnStats(c.stats.min.map(g), c.stats.max.map(g), c.stats.nullCount, c.stats.cut))
  }

  private object FooterCache {
    final case class Key(path: String, size: Long, modificationTime: Long, etag: Option[String])
    private var capacity = SparkClusteringConf.SkippingCacheFiles.default
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

  private[sparkclustering] def clearCache(): Unit = FooterCache.clear()

  /** Shared by every session of the driver; idle threads end after a minute. */
  private lazy val footerPool: ThreadPoolExecutor = {
    val n = new AtomicInteger(0)
    val threads = SparkClusteringConf.SkippingFooterThreads.default
    val pool = new ThreadPoolExecutor(threads, threads, 60L, TimeUnit.SECONDS,
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
    FooterCache.resize(SparkClusteringConf.SkippingCacheFiles.get(spark))
    val read: FileStatus => Footer = FooterFormat.of(format) match {
      case Some(f) => f.reader(conf)
      case None => _ => throw new IOException(s"no footer statistics for format $format")
    }
    def cacheKey(f: FileStatus) =
      Some(FooterCache.Key(f.getPath.toString, f.getLen, f.getModificationTime, FileStatsStore.etagOf(f))).filter(_ => FileStatsStore.hasMtime(f))
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
    val pool = poolOfSize(SparkClusteringConf.SkippingFooterThreads.get(spark))
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

  /** The row count in the file's footer. */
  private[sparkclustering] def footerRowCount(conf: Configuration, format: String, status: FileStatus): Option[Long] =
    FooterFormat.of(format).flatMap(f => Try(f.reader(conf)(status).rowCount).toOption)

  private[sparkclustering] def isDatetime(dt: DataType): Boolean = dt match {
    case DateType | TimestampType | TimestampNTZType => true
    case _ => false
  }
}

/** How one file format's footers are read. */
private[stats] trait FooterFormat {
  /** A reader of footers under `conf`, made once for a batch of files. Throws for a file it cannot
   *  read (the caller counts it unknown). */
  def reader(conf: Configuration): FileStatus => Footers.Footer
}

private[stats] object FooterFormat {
  def of(format: String): Option[FooterFormat] = format.toLowerCase(java.util.Locale.ROOT) match {
    case "parquet" => Some(ParquetFooters)
    case "orc" => Some(OrcFooters)
    case _ => None
  }
}

/** Footers as a statistics source: every file whose footer can be read. */
private[stats] final class FooterStatsSource(spark: SparkSession, conf: Configuration) extends FileStatsSource {
  override def statsFor(files: IndexedSeq[FileStatus], fields: Seq[StructField], ctx: ReadContext): IndexedSeq[Option[FileStats]] =
    Footers.readFooters(spark, conf, ctx.format, files).map(_.map(_.toFileStats(fields, ctx)))
}
