package org.apache.spark.sql.sparkclustering
package stats

import java.io.{ByteArrayOutputStream, IOException}
import java.nio.charset.StandardCharsets
import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._
import scala.util.Try
import scala.util.control.NonFatal

import com.fasterxml.jackson.core.{JsonFactory, JsonGenerator}
import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, Path}

import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.apache.spark.sql.sparkclustering.commit.ObjectStore

/**
 * The statistics sidecar of a table: `<root>/_sc_file_stats/stats-<epochMillis>-<uuid>.json`,
 * generations of JSON lines, one entry per data file (its path relative to the table's root, size,
 * modification time, the store's ETag where the listing gives one, row count, the read settings it was computed under, and per column min / max /
 * NULL count, exact), written by `write_file_stats`. Generations are merged oldest first; a writer
 * publishes a new one by rename and deletes only the generations it read.
 */
private[stats] object FileStatsSidecar {

  /** Spark's file listing skips names starting with `_`, so the sidecar is never read as data. */
  val SidecarDir = "_sc_file_stats"
  val FormatVersion = 1

  private val GenerationName = """stats-(\d+)-([0-9A-Za-z-]+)\.json""".r
  private val TmpPrefix = ".tmp-"

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

  private[sparkclustering] final case class EntryKey(path: String, size: Long, modificationTime: Long)

  /** One column of a sidecar entry: the Spark type it was computed for, and its statistics. */
  private[sparkclustering] final case class EntryColumn(dataType: String, stats: ColumnStats)

  private[sparkclustering] final case class Entry(key: EntryKey, rows: Long, ctx: String,
      columns: Map[String, EntryColumn], etag: Option[String] = None) {

    /** For a file listed with this ETag (None: the listing gives none): an entry written with an
     *  ETag answers only for the same one, so a file rewritten within the second its mtime
     *  resolves to, or copied with its mtime kept, is never taken for the one it replaced. */
    def sameContent(listedEtag: Option[String]): Boolean = etag.isEmpty || listedEtag.isEmpty || etag == listedEtag

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

  private[sparkclustering] object SidecarCache {
    final case class Listed(signature: Seq[(String, Long, Long)], sidecar: Sidecar)
    private val capacity = 256
    private val entries = new java.util.LinkedHashMap[String, Listed](64, 0.75f, true) {
      override def removeEldestEntry(e: java.util.Map.Entry[String, Listed]): Boolean = size() > capacity
    }
    def get(root: String): Option[Listed] = synchronized(Option(entries.get(root)))
    def put(root: String, v: Listed): Unit = synchronized(entries.put(root, v))
    def clear(): Unit = synchronized(entries.clear())
  }

  private[sparkclustering] def generations(conf: Configuration, root: Path): Seq[FileStatus] = {
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

  private[sparkclustering] def readSidecarCached(conf: Configuration, root: Path, gens: Seq[FileStatus]): Sidecar = {
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
  private[sparkclustering] val jsonFactory = new JsonFactory()

  /** Entries of one generation file; None when it was written by a format version this reader
   *  does not know (it is then neither used nor deleted). Unparsable lines are skipped. */
  private def readGeneration(conf: Configuration, path: Path): Option[Seq[Entry]] = {
    val text = try {
      val in = path.getFileSystem(conf).open(path)
      try new String(in.readAllBytes(), StandardCharsets.UTF_8) finally in.close()
    } catch { case NonFatal(_) => return Some(Nil) } // vanished or unreadable: nothing from it
    val nodes = text.split("\n").toSeq.filter(_.trim.nonEmpty).flatMap(l => Try(mapper.readTree(l)).toOption)
    val versions = nodes.filter(_.isObject).flatMap(n => Option(n.get("v"))).map(_.asText).toSet
    if (versions.exists(_ != FormatVersion.toString)) None
    else Some(nodes.flatMap(n => Try(parseEntry(n)).toOption.flatten.toSeq))
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
      // string bounds are exact only where the entry says so (entries of older jars may hold a
      // footer's cut bounds)
      val cut = dt.isInstanceOf[StringType] && !Option(c.get("exact")).exists(_.asBoolean(false))
      e.getKey -> EntryColumn(typeName, ColumnStats(bound("min"), bound("max"), nulls, cut))
    }.toMap
    val etag = Option(n.get("etag")).filterNot(_.isNull).map(_.textValue).filter(e => e != null && e.nonEmpty)
    Some(Entry(key, req("rows").asText.toLong, req("ctx").textValue, cols, etag))
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
    case s: UTF8String => s.numBytes <= FileStats.MaxStringBytes && UTF8String.fromString(s.toString) == s
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

  private[sparkclustering] def json(body: JsonGenerator => Unit): String = {
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
    e.etag.foreach(g.writeStringField("etag", _))
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
      if (dt.isInstanceOf[StringType] && !c.stats.cut) g.writeBooleanField("exact", true)
      g.writeEndObject()
    }
    g.writeEndObject()
    g.writeEndObject()
  }

  /** Publish one generation: written under a `.tmp-` name, then renamed into place; on an object
   *  store, where a rename is a copy and an object appears only once its upload completed, written
   *  under its own name. */
  private[sparkclustering] def writeGeneration(conf: Configuration, root: Path, lines: Iterator[String]): Path = {
    val dir = new Path(root, SidecarDir)
    val fs = dir.getFileSystem(conf)
    val name = s"stats-${System.currentTimeMillis()}-${UUID.randomUUID()}.json"
    if (ObjectStore.is(fs)) {
      val target = new Path(dir, name)
      val out = fs.create(target, false)
      try lines.foreach(l => out.write((l + "\n").getBytes(StandardCharsets.UTF_8))) finally out.close()
      return target
    }
    fs.mkdirs(dir)
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
}

/** The sidecars of a scan's roots as a statistics source: a file with an entry for its path, size
 *  and modification time, computed under the scan's read settings. One listing of each root's
 *  sidecar directory per lookup (`signature`); its content is parsed again only when that changed. */
private[stats] final class SidecarStatsSource(conf: Configuration, roots: Seq[Path]) extends FileStatsSource {
  import FileStatsSidecar._

  private val generationsOf: Map[Path, Seq[FileStatus]] =
    roots.map(r => r -> Try(generations(conf, r)).getOrElse(Seq.empty)).toMap

  /** Name, size and mtime of every generation of every root: equal signatures, equal sidecars. */
  val signature: Seq[Seq[(String, Long, Long)]] =
    roots.map(r => generationsOf(r).map(g => (g.getPath.getName, g.getLen, g.getModificationTime)))

  private val sidecars = new java.util.HashMap[Path, Sidecar]()
  private def sidecarOf(root: Path): Sidecar =
    sidecars.computeIfAbsent(root, r => Try(readSidecarCached(conf, r, generationsOf(r))).getOrElse(Sidecar.Empty))

  override def statsFor(files: IndexedSeq[FileStatus], fields: Seq[StructField], ctx: ReadContext): IndexedSeq[Option[FileStats]] =
    files.map { file =>
      // the innermost root that holds a file answers first (roots come sorted so)
      roots.iterator.filter(_ => FileStatsStore.hasMtime(file)).flatMap { root =>
        relativePath(root, file.getPath).flatMap(rel =>
          sidecarOf(root).entries.get(EntryKey(rel, file.getLen, file.getModificationTime))
            .filter(_.sameContent(FileStatsStore.etagOf(file))))
      }.find(_.ctx == ctx.sidecarContext).map(_.toFileStats(fields))
    }
}
