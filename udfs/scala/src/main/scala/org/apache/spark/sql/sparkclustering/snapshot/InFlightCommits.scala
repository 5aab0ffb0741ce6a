package org.apache.spark.sql.sparkclustering
package snapshot

import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.internal.Logging
import org.apache.spark.sql.execution.datasources.PartitionDirectory
import org.apache.spark.sql.sparkclustering.commit.CommitJournal
import org.apache.spark.sql.sparkclustering.tables.DataFiles

/**
 * One set of files for a scan planned while a `recluster()` commit is in flight on a plain
 * parquet/orc table (the reader's half of the commit journal, commit.CommitJournal).
 *
 * A commit publishes its journal `<table>/_sc_recluster_<run>/_sc_manifest` (the commit point),
 * puts its new files `sc-l<level>-<run>-*` in place (renames, or completed uploads on S3A), deletes
 * the files they replace, and removes the journal last. A listing taken meanwhile can hold both the
 * new files and the old ones: read as is, every rewritten row twice. For every run whose files a
 * listing holds and whose journal exists, the scan reads instead:
 *
 *  - the new set (the listing without the replaced files), once every new file of the scan's
 *    directories is in place. Before that it waits for them (re-listing), since the old files are
 *    deleted right after the last new one lands: a scan that read them would fail on a deleted file;
 *  - the old set (the listing without the new files) when the new files are not all in place within
 *    `commitView.waitSeconds` of the journal's publication (a commit that died mid-way: the next
 *    writer's recovery rolls it forward; or one that is rolling back);
 *  - the listing as it is when neither set is whole in two listings in a row taken at least
 *    `commitView.waitSeconds` after the journal's publication (a commit damaged by deletes behind
 *    its back: the table holds the rows of the files present). Sooner, or while the listings
 *    differ, it lists again: a listing of a local directory names its files first and then reads
 *    each one's status, so one taken across the commit's moves and deletes can hold some new files
 *    and miss some old ones (read as is: rows twice and rows missing).
 *
 * On a local file system the journals present under the roots are looked up too (the names of each
 * root's `_sc_recluster_*` entries, no status read), so a listing taken across a commit that holds
 * none of its new files but misses some of the files it deleted is caught the same way; and a listing
 * stretched over a whole commit (its files named before the first move, their status read after the
 * last delete: neither side, and no journal left to tell) by the root's modification time, which the
 * end of every commit sets (resolve). Object stores and HDFS list a directory's entries with their
 * status in one answer, so there the runs named in the listing are the only ones looked up.
 *
 * A run whose journal is gone is settled for good (run ids are never reused): one check per run and
 * JVM (a HEAD on S3), then none. Files without a run in their name (builds, appends) cost nothing.
 */
private[sparkclustering] object InFlightCommits extends Logging {

  /** `sc-l<level>-<run>-...`: the run of a file a recluster commit put in place. */
  private val RunOfFile = ("^" + CommitJournal.RunPrefixPattern + "-").r

  def runOf(fileName: String): Option[String] = RunOfFile.findPrefixMatchOf(fileName).map(_.group(1))

  // "<journal root>/<run>" of runs whose journal was gone when a listing held their files
  private val settled = ConcurrentHashMap.newKeySet[String]()
  private val MaxSettled = 200000

  private[sparkclustering] def forgetSettled(): Unit = settled.clear()

  /** A commit's journal as the reader needs it: when it was published, the new files, the replaced ones. */
  private case class Journal(publishedAt: Long, added: Set[String], replaced: Set[String])

  /** What a listing became: the directories to read, one line per in-flight run for the log. */
  final case class Resolved(directories: Seq[PartitionDirectory], notes: Seq[String])

  /**
   * The directories a scan reads: `list()` (the relation's listing), resolved against the commits in
   * flight. `relist()` drops the cached listing, so that the next `list()` lists the store again.
   * `journalRoots`: where a run's journal lies (the table's location; for a path read, its root
   * paths). Never fails: a journal it cannot read leaves the listing as it is, and says so.
   */
  def resolve(conf: Configuration, journalRoots: Seq[Path], waitMillis: Long, label: String,
      list: () => Seq[PartitionDirectory], relist: () => Unit): Resolved = {
    val roots = journalRoots.flatMap(r => scala.util.Try(r.getFileSystem(conf).makeQualified(r)).toOption).distinct
      .sortBy(_.toUri.getPath.length)
    val localRoots = roots.filter(_.toUri.getScheme == "file")
    if (localRoots.isEmpty) return resolveListing(conf, roots, localRoots, waitMillis, label, list(), list, relist)
    // A local listing names a directory's files, then reads each one's status, skipping those gone by
    // then: one that names them before a commit's first move and reads them after its last delete
    // holds neither side of it, and by the time the journals are looked up the commit's is gone
    // too. Every commit ends by removing its staging directory from the table's root, which sets
    // the root's time: a resolution counts when the root did not change after its listing began
    // and before its journals were looked up. The listing handed in was taken at an unknown moment
    // shortly before the scan: after a change of a root in the last RecentChangeMillis it counts
    // when it is of an unpartitioned root that holds the same data files now (their names, no
    // status of each: ~20 ms for 10,000 files, ~300 ms listed again), else the scan lists again.
    val deadline = System.currentTimeMillis() + math.max(waitMillis, MinWholeListingWaitMillis)
    var listedAt = System.currentTimeMillis() - RecentChangeMillis
    var directories = list()
    var handedIn = true
    while (true) {
      val resolved = resolveListing(conf, roots, localRoots, waitMillis, label, directories, list, relist)
      val changed = lastChange(localRoots)
      if (changed < listedAt - ClockGrainMillis) return resolved
      if (handedIn && resolved.notes.isEmpty && sameDataFiles(localRoots, resolved.directories)) return resolved
      handedIn = false
      val now = System.currentTimeMillis()
      if (now >= deadline) {
        logWarning(s"spark_clustering: $label: the table's root kept changing for ${waitMillis / 1000.0} s; " +
          "the last listing is read as it is")
        return resolved
      }
      // file times lag the wall clock by up to a tick: list once the last change is surely behind
      Thread.sleep(math.max(1L, changed + ClockGrainMillis + 1 - now))
      listedAt = System.currentTimeMillis()
      relist()
      directories = list()
    }
    Resolved(directories, Nil) // not reached
  }

  /** How long before a scan its listing may have been taken (at the query's analysis). */
  private val RecentChangeMillis = 30000L
  /** File times come from the kernel's coarse clock: up to one tick (1-10 ms) behind the wall clock. */
  private val ClockGrainMillis = 50L
  private val MinWholeListingWaitMillis = 1000L

  /** The latest modification time of the roots (ms): one status of each, no listing. */
  private def lastChange(roots: Seq[Path]): Long = roots.map { root =>
    try java.nio.file.Files.getLastModifiedTime(java.nio.file.Paths.get(root.toUri)).toMillis catch {
      case NonFatal(_) => Long.MinValue // a root gone: nothing to list there
    }
  }.max

  /** Whether the listing's files lie in the roots themselves and each root holds exactly the listed
   *  data files now (names only; a name the listing lacks counts only when it is a directory). Not
   *  for partitions: a listing could lack a whole partition, with no directory left to look at. */
  private def sameDataFiles(localRoots: Seq[Path], directories: Seq[PartitionDirectory]): Boolean = {
    val files = directories.flatMap(_.files).map(_.getPath.toString) // as listed: qualified, as the roots are
    val roots = localRoots.map(_.toString.stripSuffix("/")).toSet
    val byDirectory = files.groupBy(parentOf)
    files.nonEmpty && byDirectory.keySet.subsetOf(roots) && byDirectory.forall { case (dir, listed) =>
      try {
        val local = java.nio.file.Paths.get(new Path(dir).toUri)
        val stream = java.nio.file.Files.newDirectoryStream(local)
        val present = try {
          stream.iterator().asScala.map(_.getFileName.toString).filterNot(DataFiles.isHidden).toSet
        } finally stream.close()
        val names = listed.map(p => p.substring(p.lastIndexOf('/') + 1)).toSet
        names.subsetOf(present) && (present -- names).forall(n => java.nio.file.Files.isDirectory(local.resolve(n)))
      } catch {
        case NonFatal(_) => false
      }
    }
  }

  /** `listing` (the latest) resolved against the commits in flight; see resolve. */
  private def resolveListing(conf: Configuration, roots: Seq[Path], localRoots: Seq[Path], waitMillis: Long,
      label: String, listing: Seq[PartitionDirectory], list: () => Seq[PartitionDirectory],
      relist: () => Unit): Resolved = {
    var directories = listing
    if (localRoots.isEmpty && !directories.exists(_.files.exists(f => runOf(f.getPath.getName).isDefined))) {
      return Resolved(directories, Nil)
    }
    if (roots.isEmpty) return Resolved(directories, Nil)
    val journals = new ConcurrentHashMap[String, Journal]() // read once per call: a journal never changes
    var waited = 0L
    var relistedAfterSettling = false
    var previous = Option.empty[Set[String]]
    while (true) {
      val runs = (directories.flatMap(_.files).flatMap { f =>
        runOf(f.getPath.getName).map(run => journalKey(rootOf(roots, f.getPath), run))
      } ++ publishedRuns(localRoots)).distinct.filterNot(settled.contains)
      // one request per run (a HEAD on S3), up to 16 at once: a table holds the files of a few runs
      val found = new ConcurrentHashMap[String, Option[Journal]]()
      Parallel.foreach(runs)(key => found.put(key, journal(conf, key, journals)))
      val checked = runs.map(key => key -> found.get(key))
      val inFlight = checked.collect { case (key, Some(j)) => key -> j }
      if (checked.exists(_._2.isEmpty) && !relistedAfterSettling) {
        // A run seen settled for the first time may have finished between the listing and the
        // check, so the listing may be from inside its commit: list once more.
        relistedAfterSettling = true
        relist()
        directories = list()
      } else if (inFlight.isEmpty) {
        return Resolved(directories, Nil)
      } else {
        val listed = directories.flatMap(_.files).map(f => qualified(conf, f.getPath)).toSet
        val stable = previous.contains(listed)
        previous = Some(listed)
        val scope = listed.map(parentOf)
        val now = System.currentTimeMillis()
        val decisions = inFlight.map { case (key, j) =>
          // only the directories this scan reads (partition pruning) decide
          val added = j.added.filter(p => scope.contains(parentOf(p)))
          val replaced = j.replaced.filter(p => scope.contains(parentOf(p)))
          val run = key.substring(key.lastIndexOf('/') + 1)
          if (added.subsetOf(listed)) {
            Some(replaced) -> s"commit $run in flight: its new files are read (${replaced.size} replaced file(s) left out)"
          } else if (replaced.subsetOf(listed)) {
            // none of the new files in place yet: the old side, whole (no wait: a run found by
            // its journal alone, before its moves, is this)
            if (!added.exists(listed.contains)) Some(Set.empty[String]) -> s"commit $run in flight: none of its new files in place yet; the files it replaces are read"
            else if (now < j.publishedAt + waitMillis) None -> ""
            else Some(added) -> (s"commit $run in flight: its new files were not all in place " +
              s"${(now - j.publishedAt) / 1000.0} s after its journal; the files it replaces are read")
          } else if (!stable || now < j.publishedAt + waitMillis) {
            None -> "" // a listing taken across the commit's moves and deletes: list again
          } else {
            Some(Set.empty[String]) -> (s"commit $run in flight: neither its new nor its old files are all present " +
              "(files were removed behind spark_clustering's back); the files present are read")
          }
        }
        if (decisions.forall(_._1.isDefined)) {
          val dropped = decisions.flatMap(_._1.get).toSet
          val kept = directories.map(d => d.copy(files = d.files.filterNot(f => dropped.contains(qualified(conf, f.getPath)))))
            .filter(_.files.nonEmpty)
          val notes = decisions.map(_._2) ++ (if (waited > 0) Seq(s"waited $waited ms for its new files") else Nil)
          logInfo(s"spark_clustering: $label: ${notes.mkString("; ")}")
          return Resolved(kept, notes)
        }
        // the new files are being put in place, and the old ones go right after: list again shortly
        Thread.sleep(20L)
        waited += 20L
        relist()
        directories = list()
      }
    }
    Resolved(directories, Nil) // not reached
  }

  /** The runs whose journal lies under a local root, as journal keys: the root's entries named
   *  `_sc_recluster_*` (names only, no status of each of the root's files: a root of 10,000 files
   *  costs ~1 ms), those holding a manifest. */
  private def publishedRuns(localRoots: Seq[Path]): Seq[String] = localRoots.flatMap { root =>
    try {
      val stream = java.nio.file.Files.newDirectoryStream(java.nio.file.Paths.get(root.toUri), CommitJournal.StagingPrefix + "*")
      try {
        stream.iterator().asScala.toList
          .filter(dir => java.nio.file.Files.exists(dir.resolve(CommitJournal.ManifestName)))
          .map(dir => journalKey(root, dir.getFileName.toString.stripPrefix(CommitJournal.StagingPrefix)))
      } finally stream.close()
    } catch {
      case NonFatal(_) => Nil // a root gone or unreadable: the runs the listing names still count
    }
  }

  private def parentOf(path: String): String = path.substring(0, math.max(0, path.lastIndexOf('/')))

  private def qualified(conf: Configuration, p: Path): String = p.getFileSystem(conf).makeQualified(p).toString

  /** The innermost journal root holding `file`, else the outermost (a partition elsewhere). */
  private def rootOf(roots: Seq[Path], file: Path): Path = {
    val path = file.toString
    roots.filter(r => path.startsWith(r.toString.stripSuffix("/") + "/")).lastOption.getOrElse(roots.head)
  }

  private def journalKey(root: Path, run: String): String = s"${root.toString.stripSuffix("/")}/$run"

  /** The run's journal, or None when it is gone (the run is then settled). */
  private def journal(conf: Configuration, key: String, read: ConcurrentHashMap[String, Journal]): Option[Journal] = {
    val split = key.lastIndexOf('/')
    val staging = new Path(key.substring(0, split), CommitJournal.StagingPrefix + key.substring(split + 1))
    val manifest = new Path(staging, CommitJournal.ManifestName)
    val fs = manifest.getFileSystem(conf)
    val published = try Some(fs.getFileStatus(manifest).getModificationTime) catch {
      case _: java.io.FileNotFoundException => None
    }
    published match {
      case None =>
        read.remove(key)
        if (settled.size > MaxSettled) settled.clear()
        settled.add(key)
        None
      case Some(at) =>
        Option(read.get(key)).orElse {
          val steps = try CommitJournal.readManifest(conf, staging) catch {
            case NonFatal(e) => logWarning(s"spark_clustering: could not read the commit journal $manifest", e); None
          }
          steps.map { s =>
            val j = Journal(at,
              s.collect { case m: CommitJournal.Move => m.to case c: CommitJournal.Complete => c.to }
                .map(qualified(conf, _)).toSet,
              s.collect { case d: CommitJournal.Delete => qualified(conf, d.path) }.toSet)
            read.put(key, j)
            j
          }
        }
    }
  }
}
