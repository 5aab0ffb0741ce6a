package org.apache.spark.sql.sparkclustering

/** File operations on a short-lived thread pool: each is one request to the file system (an
 *  object store's round trip), so they overlap. */
private[sparkclustering] object Parallel {

  /** Run `f` over `items` on up to 16 threads (in the caller's thread when there is one), rethrowing the first
   *  failure: the moves (and the deletes) of a commit land close together, which keeps the window
   *  in which a reader's listing sees both old and new files short; a reader looks up the
   *  journals of a few runs with one request each. */
  def foreach[T](items: Seq[T])(f: T => Unit): Unit = {
    if (items.size <= 1) items.foreach(f)
    else {
      val pool = java.util.concurrent.Executors.newFixedThreadPool(math.min(16, items.size))
      try {
        val futures = items.map(i => pool.submit(new java.util.concurrent.Callable[Unit] { def call(): Unit = f(i) }))
        futures.foreach(fu => try fu.get() catch { case e: java.util.concurrent.ExecutionException => throw e.getCause })
      } finally pool.shutdown()
    }
  }
}
