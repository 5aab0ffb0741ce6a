package org.apache.spark.sql.sparkclustering
package curves

/**
 * Key arithmetic shared by the generated code and the interpreted eval, so both paths are the same
 * code. Static forwarders make these callable from Janino as `CurveKeys.method(...)`; the JIT
 * inlines them into the generated loop. Every method works in place on the caller's scratch array
 * and the bigint variants allocate nothing.
 */
object CurveKeys {

  final val MaxBits = 31
  final val MaxIds = 32
  final val MaxLongKeyBits = 63

  def usesLongKey(n: Int, bits: Int): Boolean = n * bits <= MaxLongKeyBits

  def keyBytes(n: Int, bits: Int): Int = (n * bits + 7) >>> 3

  /** Throws for the first id outside [0, 2^bits); `firstArgument` is the 1-based argument of x(0). */
  def checkRange(function: String, x: Array[Long], n: Int, bits: Int, firstArgument: Int): Unit = {
    val max = (1L << bits) - 1
    var i = 0
    while (i < n) {
      val v = x(i)
      if (v < 0 || v > max) throw SparkClusteringErrors.idOutOfRange(function, firstArgument + i, v, bits)
      i += 1
    }
  }

  /**
   * spreadTables(n)(b) = the 8 bits of b moved to positions 0, n, 2n, ... A bit j with j * n >= 64
   * is dropped: a long key has n * bits <= 63, so j >= bits and no valid id has that bit set.
   */
  private val spreadTables: Array[Array[Long]] = Array.tabulate(MaxIds + 1) { n =>
    Array.tabulate(256) { b =>
      var spread = 0L
      var j = 0
      while (j < 8) {
        if (((b >>> j) & 1) != 0 && j * n < 64) spread |= 1L << (j * n)
        j += 1
      }
      spread
    }
  }

  /**
   * Bit L of x(i) goes to position L*n + (n-1-i): x(0) is the most significant within a level.
   * One table lookup per id byte instead of one step per bit. Needs n * bits <= 63 and ids in range.
   */
  def interleaveLong(x: Array[Long], n: Int, bits: Int): Long = {
    val table = spreadTables(n)
    val bytes = (bits + 7) >>> 3
    var key = 0L
    var i = 0
    while (i < n) {
      val v = x(i)
      var spread = 0L
      var k = 0
      while (k < bytes) {
        spread |= table(((v >>> (8 * k)) & 0xFF).toInt) << (8 * k * n)
        k += 1
      }
      key |= spread << (n - 1 - i)
      i += 1
    }
    key
  }

  /**
   * Same bit order as interleaveLong, written as a big-endian unsigned integer left-padded with zero
   * bits, so Spark's unsigned lexicographic BINARY ordering equals key order.
   */
  def interleaveBytes(x: Array[Long], n: Int, bits: Int): Array[Byte] = {
    val out = new Array[Byte](keyBytes(n, bits))
    var pos = out.length * 8 - n * bits // leading pad bits
    var level = bits - 1
    while (level >= 0) {
      var i = 0
      while (i < n) {
        if (((x(i) >>> level) & 1L) != 0) {
          out(pos >>> 3) = (out(pos >>> 3) | (0x80 >>> (pos & 7))).toByte
        }
        pos += 1
        i += 1
      }
      level -= 1
    }
    out
  }

  /**
   * Skilling's AxesToTranspose ("Programming the Hilbert curve", 2004), in place. Branch-free: the
   * data-dependent `if (X[i] & Q)` of the reference is a mask, because on real data that branch is
   * a coin flip and its mispredictions cost more than the rest of the key.
   */
  def axesToTranspose(x: Array[Long], n: Int, bits: Int): Unit = {
    var x0 = x(0)
    var level = bits - 1
    while (level > 0) {
      val p = (1L << level) - 1
      // i = 0 on its own: the exchange branch of the reference is a no-op for X[0] with itself.
      x0 ^= p & -((x0 >>> level) & 1L)
      var i = 1
      while (i < n) {
        val xi = x(i)
        val set = -((xi >>> level) & 1L) // all ones when bit `level` of X[i] is set
        x0 ^= p & set // invert the low bits of X[0]
        val t = (x0 ^ xi) & p & ~set // or exchange them with X[i]'s
        x0 ^= t
        x(i) = xi ^ t
        i += 1
      }
      level -= 1
    }
    x(0) = x0
    // Gray encode.
    var i = 1
    while (i < n) {
      x(i) ^= x(i - 1)
      i += 1
    }
    var t = 0L
    val last = x(n - 1)
    level = bits - 1
    while (level > 0) {
      t ^= ((1L << level) - 1) & -((last >>> level) & 1L)
      level -= 1
    }
    i = 0
    while (i < n) {
      x(i) ^= t
      i += 1
    }
  }

  def zorderLong(x: Array[Long], n: Int, bits: Int): Long = interleaveLong(x, n, bits)

  def zorderBytes(x: Array[Long], n: Int, bits: Int): Array[Byte] = interleaveBytes(x, n, bits)

  /** Largest n served by a state table (n = 4: 384 states x 16 digits; n = 5 would be 480 KB). */
  final val HilbertTableMaxIds = 4

  /**
   * Skilling's transform as a Mealy machine over levels, top level first: the input symbol is the
   * n-bit Morton digit of a level (id_1's bit first), the output the key's n-bit digit there.
   *
   * Why it is finite: the operations at level L only touch bits below L and are inversions of the
   * low bits of X[0] and exchanges of the low bits of X[0] and X[i]. Their effect on the levels
   * below is therefore a signed permutation of the axes (perm, comp: bit i of the current X[i] is
   * bit perm(i) of the input, flipped when comp bit i is set). The Gray code is per level and the
   * final XOR with t is the parity of X[n-1]'s higher Gray bits: one more bit of state.
   *
   * Entry (state << n) | digit holds (next state << n) | output digit, so the next lookup's base
   * is the entry with its low n bits cleared. The tests compare this path (n <= 4) and the
   * axesToTranspose loop (n >= 5, BINARY keys) with the Python reference.
   */
  private def buildHilbertTable(n: Int): Array[Int] = {
    final case class State(perm: Vector[Int], comp: Int, parity: Int)
    val index = scala.collection.mutable.HashMap[State, Int]()
    val states = scala.collection.mutable.ArrayBuffer[State]()
    def id(state: State): Int = index.getOrElseUpdate(state, { states += state; states.length - 1 })
    id(State(Vector.range(0, n), 0, 0))
    val table = scala.collection.mutable.ArrayBuffer[Int]()
    var k = 0
    while (k < states.length) {
      val State(perm, comp, parity) = states(k)
      for (u <- 0 until (1 << n)) {
        val v = Array.tabulate(n)(i => ((u >>> (n - 1 - perm(i))) & 1) ^ ((comp >>> i) & 1))
        var gray = 0
        var digit = 0
        for (i <- 0 until n) {
          gray ^= v(i)
          digit = (digit << 1) | (gray ^ parity)
        }
        val p = perm.toArray
        var c = comp
        for (i <- 0 until n) {
          if (v(i) == 1) {
            c ^= 1
          } else if (i > 0) {
            val p0 = p(0); p(0) = p(i); p(i) = p0
            val (c0, ci) = (c & 1, (c >>> i) & 1)
            c = (c & ~1 & ~(1 << i)) | ci | (c0 << i)
          }
        }
        table += (id(State(p.toVector, c, parity ^ gray)) << n) | digit
      }
      k += 1
    }
    table.toArray
  }

  /**
   * The one-level table and its composition over `levels` levels per lookup (same entry layout
   * with n * levels bits per digit): the lookups form a dependent chain, so fewer, larger steps are
   * faster as long as the table stays small enough for the L1 cache (<= 4096 entries).
   */
  private final class HilbertTable(val n: Int, val one: Array[Int]) {
    val levels: Int = {
      val states = one.length >>> n
      var k = 1
      while (states.toLong << (n * (k + 1)) <= 4096) k += 1
      k
    }
    val multi: Array[Int] = if (levels == 1) one else {
      val width = n * levels
      val mask = (1 << n) - 1
      Array.tabulate((one.length >>> n) << width) { entry =>
        var state = entry >>> width
        var out = 0
        var j = levels - 1
        while (j >= 0) {
          val e = one((state << n) | ((entry >>> (j * n)) & mask))
          out = (out << n) | (e & mask)
          state = e >>> n
          j -= 1
        }
        (state << width) | out
      }
    }
    /** bits % levels: the single-level steps that come first (a table read, not a division). */
    val leadLevels: Array[Int] = Array.tabulate(MaxBits + 1)(_ % levels)
  }

  private val hilbertTables: Array[HilbertTable] =
    Array.tabulate(HilbertTableMaxIds + 1)(n => if (n >= 2) new HilbertTable(n, buildHilbertTable(n)) else null)

  /** May overwrite x (with its transpose). */
  def hilbertLong(x: Array[Long], n: Int, bits: Int): Long = {
    if (n == 1) {
      x(0)
    } else if (n <= HilbertTableMaxIds) {
      val tables = hilbertTables(n)
      val morton = interleaveLong(x, n, bits)
      val mask = (1 << n) - 1
      var key = 0L
      var level = bits - 1
      // Single levels until the rest is a multiple of the multi-level step.
      var base = 0
      var lead = tables.leadLevels(bits)
      while (lead > 0) {
        val e = tables.one(base | ((morton >>> (level * n)).toInt & mask))
        key = (key << n) | (e & mask)
        base = e & ~mask
        level -= 1
        lead -= 1
      }
      val width = n * tables.levels
      val wideMask = (1 << width) - 1
      base = (base >>> n) << width
      while (level >= 0) {
        val e = tables.multi(base | ((morton >>> ((level - tables.levels + 1) * n)).toInt & wideMask))
        key = (key << width) | (e & wideMask)
        base = e & ~wideMask
        level -= tables.levels
      }
      key
    } else {
      axesToTranspose(x, n, bits)
      interleaveLong(x, n, bits)
    }
  }

  /** Overwrites x with its transpose. */
  def hilbertBytes(x: Array[Long], n: Int, bits: Int): Array[Byte] = {
    axesToTranspose(x, n, bits)
    interleaveBytes(x, n, bits)
  }
}
