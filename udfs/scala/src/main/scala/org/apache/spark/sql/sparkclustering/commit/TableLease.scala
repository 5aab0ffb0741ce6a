package org.apache.spark.sql.sparkclustering
package commit

import java.io.FileNotFoundException
import java.net.InetAddress
import java.nio.charset.StandardCharsets
import java.time.Instant
import java.util.UUID
import java.util.concurrent.{ConcurrentHashMap, Executors, ThreadFactory, TimeUnit}

import scala.jdk.CollectionConverters._
import scala.util.Try

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, FileSystem, Path}

import org.apache.spark.sql.SparkSession

/**
 * A lease per table: at most one writer of the package (clustered_table, recluster, recovery) works
 * on a table at a time, and recovery never touches staging that a live writer owns.
 *
 * A lease is a directory of generation files `lease.<n>`; the newest generation is the lease. To
 * take it a writer creates `lease.<n+1>` with create-if-absent (`overwrite=false`), which exactly
 * one writer wins, and only when `lease.<n>` is gone, released, expired, or held by a dead process
 * on this host. The newest [[KeptGenerations]] files are never deleted, so a writer that listed
 * before others took and gave up the lease (and then stalled) finds its `<n+1>` taken; one that
 * stalled through more generations than that creates a number below the newest, sees it on the
 * listing it takes right after creating, and gives that file up. The holder rewrites its file
 * with a later expiry every ttl/4 from a daemon thread of the driver that holds it, so a process
 * that dies stops renewing and its lease expires after the ttl (at once for a dead pid on the same
 * host). Renewal also stops when the run has not used the lease for `idleSeconds` (a client that
 * died over Thrift, a run-operation that failed) or after `maxHoldSeconds`, so a vanished client
 * cannot block a table for long.
 *
 * Before its commit point the holder checks that its generation is still the newest and has at
 * least ttl/2 left, so a writer that lost its lease (paused longer than the ttl) aborts instead of
 * racing the new holder.
 */
private[commit] object TableLease {

  val FilePrefix = "lease."

  /** Generations kept below the newest. Deleting every older one gave two holders at once: a
   *  local-disk listing reads the names, then each file's status, skipping files deleted in
   *  between, so a writer listing while another created `lease.<n+1>` and deleted `lease.<n>` saw
   *  no generation and created `lease.1`; and a writer that had listed `lease.<n>` and stalled
   *  could create `lease.<n+1>` again after it had been taken, given up and deleted. */
  val KeptGenerations = 16

  case class Holder(token: String, owner: String, host: String, pid: Long, appId: String,
      acquiredMs: Long, expiresMs: Long) {
    def describe: String =
      s"$owner (host $host, pid $pid, Spark application $appId, since ${Instant.ofEpochMilli(acquiredMs)}, " +
        s"lease expires ${Instant.ofEpochMilli(expiresMs)} unless renewed)"
  }

  private case class Held(holder: Holder, conf: Configuration, context: org.apache.spark.SparkContext,
      sessionId: String, ttlMs: Long, maxHoldMs: Long, idleMs: Long) {
    /** Taken so far: renewed from the first one on, while the next is still awaited. */
    @volatile var files: Seq[Path] = Seq.empty
    @volatile var lost: Option[String] = None
    @volatile var renewedMs: Long = holder.acquiredMs
    @volatile var usedMs: Long = System.currentTimeMillis()
  }

  private val held = new ConcurrentHashMap[String, Held]()

  private lazy val renewer = Executors.newSingleThreadScheduledExecutor(new ThreadFactory {
    override def newThread(r: Runnable): Thread = {
      val t = new Thread(r, "spark-clustering-lease-renewer")
      t.setDaemon(true)
      t
    }
  })
  @volatile private var renewerStarted = false

  lazy val host: String = Try(InetAddress.getLocalHost.getHostName).getOrElse("unknown")
  lazy val pid: Long = ProcessHandle.current().pid()

  def ttlMs(spark: SparkSession): Long =
    (SparkClusteringConf.LeaseTtlSeconds.get(spark) * 1000).toLong.max(1000L)

  /** A run that has not used its lease (recover, commit) for this long is taken to be gone (a
   *  client that died over Thrift, a run-operation that failed without giving it up). */
  /** One id per SparkSession (per Thrift client session; one for an embedded dbt). */
  private def sessionId(spark: SparkSession): String = Sessions.classic(spark).sessionUUID

  def idleMs(spark: SparkSession): Long =
    (SparkClusteringConf.LeaseIdleSeconds.get(spark) * 1000).toLong

  def maxHoldMs(spark: SparkSession): Long =
    (SparkClusteringConf.LeaseMaxHoldSeconds.get(spark) * 1000).toLong

  // ---- file format: one `key<TAB>value` line per field --------------------------------------

  private def encode(h: Holder): Array[Byte] =
    Seq("token" -> h.token, "owner" -> h.owner.replaceAll("[\t\n]", " "), "host" -> h.host, "pid" -> h.pid.toString,
      "app_id" -> h.appId, "acquired_ms" -> h.acquiredMs.toString, "expires_ms" -> h.expiresMs.toString)
      .map { case (k, v) => s"$k\t$v" }.mkString("", "\n", "\n").getBytes(StandardCharsets.UTF_8)

  /** None for a file read while it is being rewritten: a renewal truncates and writes, so a reader
   *  can get a prefix, and a prefix cut inside `expires_ms` would read as an expiry long past. */
  private def decode(bytes: Array[Byte]): Option[Holder] = Try {
    val text = new String(bytes, StandardCharsets.UTF_8)
    require(text.endsWith("\n"), "a part of a lease file")
    val m = text.split("\n").filter(_.contains("\t"))
      .map { l => val i = l.indexOf('\t'); l.substring(0, i) -> l.substring(i + 1) }.toMap
    Holder(m("token"), m("owner"), m("host"), m("pid").toLong, m("app_id"), m("acquired_ms").toLong,
      m("expires_ms").toLong)
  }.toOption

  /** The lease files' file system; on a local disk the raw one, without `.crc` sidecars that a
   *  reader could catch half-written. */
  private def fsOf(p: Path, conf: Configuration): FileSystem = p.getFileSystem(conf) match {
    case c: org.apache.hadoop.fs.ChecksumFileSystem => c.getRawFileSystem
    case other => other
  }

  /** The holder written in a lease file; None while it is being (re)written or when it is gone. */
  private def read(fs: FileSystem, file: Path): Option[Holder] = Try {
    val in = fs.open(file)
    try decode(in.readAllBytes()) finally in.close()
  }.toOption.flatten

  private def generation(p: Path): Option[Long] = {
    val name = p.getName
    if (name.startsWith(FilePrefix)) Try(name.stripPrefix(FilePrefix).toLong).toOption else None
  }

  private def generations(fs: FileSystem, dir: Path): Seq[(Long, Path)] =
    if (!fs.exists(dir)) Seq.empty
    else fs.listStatus(dir).toSeq.flatMap(s => generation(s.getPath).map(_ -> s.getPath)).sortBy(_._1)

  /** The holder of a lease file: Some(holder) while it is live, None when it may be taken. */
  private def liveHolder(fs: FileSystem, file: Path, ttl: Long, now: Long): Option[Option[Holder]] = {
    val status = try fs.getFileStatus(file) catch { case _: FileNotFoundException => return None }
    read(fs, file) match {
      // being written (create, then write): live while it is young
      case None => if (now - status.getModificationTime < ttl) Some(None) else None
      case Some(h) if h.expiresMs <= now => None
      case Some(h) if h.host == host && h.pid != pid && !ProcessHandle.of(h.pid).isPresent => None
      case Some(h) => Some(Some(h))
    }
  }

  /** Create `file` only if it does not exist, atomically: O_EXCL on a local disk (Hadoop's local
   *  create checks, then creates), the NameNode's create on HDFS, a conditional PUT on S3A (whose
   *  plain create(overwrite = false) checks with a HEAD, then writes: two writers could both win).
   *  Throws FileAlreadyExistsException, or on S3A RemoteFileChangedException (412) from the close. */
  private def createExclusive(fs: FileSystem, file: Path, h: Holder): Unit = fs match {
    case local: org.apache.hadoop.fs.RawLocalFileSystem =>
      try java.nio.file.Files.write(local.pathToFile(file).toPath, encode(h),
        java.nio.file.StandardOpenOption.CREATE_NEW, java.nio.file.StandardOpenOption.WRITE)
      catch { case _: java.nio.file.FileAlreadyExistsException => throw new FileAlreadyExistsException(file.toString) }
    case _ if fs.getScheme == "s3a" =>
      requireConditionalCreate(fs, file)
      conditionalPut(fs, file, encode(h))
    case _ =>
      val out = fs.create(file, false)
      try out.write(encode(h)) finally out.close()
  }

  /** S3A's create option for a PUT with `If-None-Match: *` (Hadoop 3.4.2+); the object store
   *  refuses it with 412 when the object exists, which S3A raises from close(). */
  private val ConditionalCreateOption = "fs.option.create.conditional.overwrite"
  private val ConditionalCreateCapability = "fs.s3a.create.conditional.enabled"

  private def conditionalPut(fs: FileSystem, file: Path, bytes: Array[Byte]): Unit = {
    val out = fs.createFile(file).overwrite(true).must(ConditionalCreateOption, true).build()
    try out.write(bytes) finally out.close()
  }

  /** The stores (scheme://bucket) whose conditional PUT was seen to refuse a second create. */
  private val conditionalStores = ConcurrentHashMap.newKeySet[String]()

  /** Fails, naming the setting, unless S3A sends conditional PUTs for `file` and the store honours
   *  them: checked once per store and JVM by creating a probe object twice (the second must be
   *  refused; a store that ignores If-None-Match accepts both), then deleting it. */
  private def requireConditionalCreate(fs: FileSystem, file: Path): Unit = {
    val store = fs.getUri.toString
    if (!conditionalStores.contains(store)) {
      if (!fs.hasPathCapability(file, ConditionalCreateCapability)) {
        throw SparkClusteringErrors.noConditionalCreate(file.toString,
          s"$ConditionalCreateCapability is false for ${fs.getUri}")
      }
      val probe = new Path(file.getParent, s"_sc_conditional_create_probe.${UUID.randomUUID()}")
      try {
        conditionalPut(fs, probe, Array[Byte](1))
        val honoured = try { conditionalPut(fs, probe, Array[Byte](2)); false } catch {
          // by name: hadoop-aws is on the classpath only where s3a:// is used
          case e: java.io.IOException if e.getClass.getName == "org.apache.hadoop.fs.s3a.RemoteFileChangedException" => true
          case _: FileAlreadyExistsException => true
        }
        if (!honoured) {
          throw SparkClusteringErrors.noConditionalCreate(file.toString,
            s"the store at ${fs.getUri} accepted a second conditional PUT of one object (it ignores If-None-Match)")
        }
      } finally Try(fs.delete(probe, false))
      conditionalStores.add(store)
    }
  }

  /** Rewrite an existing lease file; never creates it (or its directory) anew. */
  private def rewrite(fs: FileSystem, file: Path, h: Holder): Unit = fs match {
    case local: org.apache.hadoop.fs.RawLocalFileSystem =>
      java.nio.file.Files.write(local.pathToFile(file).toPath, encode(h),
        java.nio.file.StandardOpenOption.WRITE, java.nio.file.StandardOpenOption.TRUNCATE_EXISTING)
    case _ =>
      val out = fs.createNonRecursive(file, true, 4096, fs.getDefaultReplication(file), fs.getDefaultBlockSize(file), null)
      try out.write(encode(h)) finally out.close()
  }

  /**
   * Take the lease of every directory in `dirs` (in order) for `owner`, waiting up to `waitMs` for a
   * live holder; returns (token, milliseconds waited while another writer held a lease: not the
   * time taking a free lease costs). Throws, naming the holder, when the wait runs out; then no
   * lease is held.
   */
  def acquire(spark: SparkSession, conf: Configuration, dirs: Seq[Path], owner: String, waitMs: Long,
      what: String): (String, Long) = acquireOrBusy(spark, conf, dirs, owner, waitMs, what, failWhenBusy = true)

  /** As [[acquire]], but a lease still held when the wait runs out is an answer, not an error:
   *  Left(the error acquire would raise, naming the holder). Any other failure still throws. A
   *  run over many tables (dbt's maintain) reports a busy table and goes on with the others. */
  def tryAcquire(spark: SparkSession, conf: Configuration, dirs: Seq[Path], owner: String, waitMs: Long,
      what: String): Either[String, (String, Long)] =
    try Right(acquireOrBusy(spark, conf, dirs, owner, waitMs, what, failWhenBusy = false))
    catch {
      // the message alone: Spark's getMessage wraps it in the error class and the SQLSTATE
      case busy: Busy => Left(busy.error.getMessage.replaceFirst("^\\[[A-Z_.]+\\] ", "").replaceFirst(" SQLSTATE: \\w+$", ""))
    }

  /** Carries the busy error out of acquireOrBusy's loops when the caller wants it as an answer. */
  private final class Busy(val error: RuntimeException) extends RuntimeException(error.getMessage, null, false, false)

  private def acquireOrBusy(spark: SparkSession, conf: Configuration, dirs: Seq[Path], owner: String, waitMs: Long,
      what: String, failWhenBusy: Boolean): (String, Long) = {
    val ttl = ttlMs(spark)
    val start = System.currentTimeMillis()
    val token = UUID.randomUUID().toString
    val appId = Try(spark.sparkContext.applicationId).getOrElse("unknown")
    def holder(now: Long) = Holder(token, owner, host, pid, appId, start, now + ttl)
    val h = Held(holder(start), conf, spark.sparkContext, sessionId(spark), ttl, maxHoldMs(spark), idleMs(spark))
    held.put(token, h)
    startRenewer()
    // from the start of each look that found a live holder to the start of the next look (looks
    // that find the lease free are not waiting): what waitMs bounds and waited_ms reports
    var waited = 0L
    var heldSince: Option[Long] = None
    try {
      dirs.foreach { dir =>
        val fs = fsOf(dir, conf)
        var file: Option[Path] = None
        while (file.isEmpty) {
          val now = System.currentTimeMillis()
          heldSince.foreach(since => waited += now - since)
          heldSince = None
          val gens = generations(fs, dir)
          val live = gens.lastOption.flatMap { case (_, p) => liveHolder(fs, p, ttl, now) }
          if (live.flatten.exists(h => releaseIfLeftOver(spark, h, owner))) {
            // released: look again
          } else live match {
            case Some(Some(h)) if h.token == token =>
              // a create of ours that reported a failure after the store had taken it (a PUT whose
              // answer was lost and whose retry was refused): the generation is ours
              file = gens.lastOption.map(_._2)
              deleteBelowKept(fs, gens, gens.last._1)
            case Some(h) =>
              if (waited >= waitMs) {
                val busy = SparkClusteringErrors.leaseBusy(what, h.map(_.describe).getOrElse("a writer that is starting"),
                  waited / 1000.0, ttl / 1000)
                throw (if (failWhenBusy) busy else new Busy(busy))
              }
              // a short poll: a holder that takes the lease again right after giving it up would
              // otherwise win nearly every time against a waiter that sleeps longer
              heldSince = Some(now)
              Thread.sleep(math.min(100L, math.max(20L, waitMs - waited)))
            case None =>
              val n = gens.lastOption.map(_._1).getOrElse(0L) + 1
              val next = new Path(dir, FilePrefix + n)
              TestPausePoints.at(spark, "before_lease_create")
              // S3 has no directories to make (S3A's mkdirs costs a HEAD, a LIST and a PUT)
              if (fs.getUri.getScheme != "s3a") fs.mkdirs(dir)
              val created = try {
                createExclusive(fs, next, holder(now))
                true
              } catch {
                case _: FileAlreadyExistsException => false // another writer won this generation: look again
                // same on other stores (S3A: 412 from close); or ours after all, which the next look finds
                case _: java.io.IOException if fs.exists(next) => false
              }
              if (created) {
                if (generations(fs, dir).lastOption.exists(_._1 > n)) {
                  // stalled past deleted generations: a later one is the lease, give this one up
                  Try(rewrite(fs, next, holder(now).copy(expiresMs = 0L)))
                } else {
                  file = Some(next)
                  deleteBelowKept(fs, gens, n)
                }
              }
          }
        }
        h.synchronized {
          h.files = h.files :+ file.get
          h.usedMs = System.currentTimeMillis()
        }
      }
    } catch {
      case e: Throwable =>
        release(token)
        throw e
    }
    (token, waited)
  }

  /** dbt runs its invocations one after another on an embedded session, so a lease that another
   *  dbt invocation took through this very SparkSession is a leftover of a run that failed without
   *  giving it up (a run-operation has no on-run-end): release it instead of waiting for it. */
  private def releaseIfLeftOver(spark: SparkSession, h: Holder, owner: String): Boolean = {
    def invocation(o: String) = if (o.startsWith("dbt ")) o.split(" ").lift(1) else None
    Option(held.get(h.token)).exists { local =>
      val leftOver = local.sessionId == sessionId(spark) && invocation(h.owner).isDefined &&
        invocation(owner).isDefined && invocation(h.owner) != invocation(owner)
      if (leftOver) {
        System.err.println(s"spark_clustering: releasing a lease left over by an earlier dbt run: ${h.describe}")
        release(h.token)
      }
      leftOver
    }
  }

  /** Once generation `taken` is held: delete those of `gens` more than KeptGenerations below it. */
  private def deleteBelowKept(fs: FileSystem, gens: Seq[(Long, Path)], taken: Long): Unit =
    gens.filter(_._1 <= taken - KeptGenerations).foreach { case (_, p) => Try(fs.delete(p, false)) }

  private def mine(fs: FileSystem, file: Path, token: String): Boolean = read(fs, file).exists(_.token == token)

  private def startRenewer(): Unit = synchronized {
    if (!renewerStarted) {
      renewer.scheduleWithFixedDelay(() => renewAll(), 250L, 250L, TimeUnit.MILLISECONDS)
      renewerStarted = true
    }
  }

  private def renewAll(): Unit = held.asScala.foreach { case (token, h) => h.synchronized {
    val now = System.currentTimeMillis()
    // a long build or rewrite is activity: jobs running on this driver keep the lease in use
    if (h.context.statusTracker.getActiveJobIds().nonEmpty) h.usedMs = now
    if (now - h.holder.acquiredMs > h.maxHoldMs || now - h.usedMs > h.idleMs) {
      // the run that took it is gone: stop renewing, the lease expires after its ttl
      held.remove(token)
    } else if (now - h.renewedMs >= h.ttlMs / 4) {
      h.renewedMs = now
      h.files.foreach { file =>
        Try {
          val fs = fsOf(file, h.conf)
          val newest = generations(fs, file.getParent).lastOption.map(_._2)
          if (!newest.contains(file) || !mine(fs, file, token)) {
            h.lost = Some(s"the lease $file was taken over (it had expired)")
          } else {
            // never recreate a directory that was removed (a dropped table)
            rewrite(fs, file, h.holder.copy(expiresMs = now + h.ttlMs))
          }
        }.failed.foreach(e => h.lost = Some(s"the lease $file could not be renewed: ${e.getMessage}"))
      }
    }
  }}

  /** Throw unless `token` still holds its leases with at least half a ttl left (before a commit point). */
  def check(token: String, what: String): Unit = {
    val h = Option(held.get(token)).getOrElse(throw SparkClusteringErrors.leaseLost(what,
      "this run holds no lease (released, or renewal stopped)"))
    h.usedMs = System.currentTimeMillis()
    try checkHeld(h, token, what) catch {
      // a writer that lost one of its leases stops: give up the rest too
      case e: Throwable => release(token); throw e
    }
  }

  private def checkHeld(h: Held, token: String, what: String): Unit = {
    h.lost.foreach(why => throw SparkClusteringErrors.leaseLost(what, why))
    val now = System.currentTimeMillis()
    // the renewer rewrites these files: read them between its writes
    h.synchronized {
      h.files.foreach { file =>
        val fs = fsOf(file, h.conf)
        if (!fs.exists(file)) {
          throw SparkClusteringErrors.leaseLost(what, s"the lease $file was removed: another writer overwrote or " +
            "dropped the table's directory")
        }
        val newest = generations(fs, file.getParent).lastOption.map(_._2)
        val current = read(fs, file)
        if (!newest.contains(file) || !current.exists(_.token == token)) {
          throw SparkClusteringErrors.leaseLost(what, s"the lease $file was taken over")
        }
        if (current.get.expiresMs - now < h.ttlMs / 2) {
          throw SparkClusteringErrors.leaseLost(what, s"the lease $file was not renewed in time")
        }
      }
    }
  }

  /** Give the lease up; a no-op for an unknown token. Returns whether anything was released. The
   *  file stays, marked expired, so generation numbers only grow: a writer that listed before the
   *  release and stalled can never create a generation that outranks a later holder's. */
  def release(token: String): Boolean = Option(held.remove(token)) match {
    case None => false
    case Some(h) => h.synchronized {
      h.files.foreach { file =>
        Try {
          val fs = fsOf(file, h.conf)
          if (mine(fs, file, token)) rewrite(fs, file, h.holder.copy(expiresMs = 0L))
        }
      }
      true
    }
  }

  /** Release every lease whose owner starts with `ownerPrefix` (dbt's on-run-end: a failed run's). */
  def releaseOwned(ownerPrefix: String): Int =
    held.asScala.toSeq.filter(_._2.holder.owner.startsWith(ownerPrefix)).count { case (t, _) => release(t) }
}
