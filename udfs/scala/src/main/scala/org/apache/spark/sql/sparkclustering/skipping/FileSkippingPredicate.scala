package org.apache.spark.sql.sparkclustering
package skipping

import scala.util.control.NonFatal

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.types.PhysicalDataType
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.apache.spark.sql.sparkclustering.stats.FileStats

/**
 * Decides from one file's min/max/null counts whether the file may hold a row for which a scan's
 * data filters are true. A file is skipped only when some filter is proven false or NULL for every
 * row of it; anything the evaluator does not understand (an unsupported type, function or cast, a
 * column without statistics) keeps the file.
 *
 * Each expression is reduced to two facts about the file's rows (over-approximated): can it be
 * TRUE for some row, can it be FALSE for some row. NULL is neither, so NOT, AND and OR follow
 * SQL's three-valued logic: NOT swaps the two, AND is true only where both can be true, OR is
 * false only where both can be false.
 *
 * A test of one column (a comparison, IN, IS NULL, ...) is the union of two parts: what the rows
 * holding NULL in the column give, and what the rows holding values give. The NULL part, and the
 * value part of a file whose column holds one value (min = max), are not reasoned out: Spark
 * evaluates the filter's own expression with the column replaced by that literal, so its
 * semantics (e.g. `NULL IN ()`, which Spark versions answer differently) are Spark's. Only the
 * value part over a range [min, max] is reasoned from the orderings.
 */
private[skipping] object FileSkippingPredicate {

  final case class Possible(canBeTrue: Boolean, canBeFalse: Boolean) {
    def unary_! : Possible = Possible(canBeFalse, canBeTrue)
    /** Some rows behave as `this`, the others as `that`. */
    def |(that: Possible): Possible = Possible(canBeTrue || that.canBeTrue, canBeFalse || that.canBeFalse)
  }
  private val Anything = Possible(canBeTrue = true, canBeFalse = true)
  private val Nothing = Possible(canBeTrue = false, canBeFalse = false)
  private val True = Possible(canBeTrue = true, canBeFalse = false)
  private val False = Possible(canBeTrue = false, canBeFalse = true)

  /** The filters' conjuncts this evaluator can use (deterministic, no subquery); empty = no use. */
  def usable(filters: Seq[Expression]): Seq[Expression] =
    filters.flatMap(splitConjunctivePredicates).filter { f =>
      f.deterministic && !SubqueryExpression.hasSubquery(f) && hasColumnTest(f)
    }

  /** The test of one file, compiled once per listing (columns, literals and orderings resolved
   *  here, not per file): true = the file may hold a row passing every filter (read it); false =
   *  skip it. `statsKey` names a column's statistics (`FileStats.columns`) as the reader resolves
   *  the column; None: no statistics (the column is then unknown). A filter that cannot be
   *  compiled keeps every file; the returned function may throw for a file (its caller keeps it). */
  def compile(filters: Seq[Expression], statsKey: Attribute => Option[String]): FileStats => Boolean = {
    val tests = filters.map(f => try test(f, statsKey) catch { case NonFatal(_) => anything }).toArray
    stats => stats.rowCount.forall(_ > 0) && tests.forall(t => t(stats).canBeTrue)
  }

  /** `e` evaluated for one file, its columns' statistics under their own names (tests and one-off
   *  checks; a listing compiles once). */
  def eval(e: Expression, s: FileStats): Possible = test(e, a => Some(a.name))(s)

  private type Test = FileStats => Possible
  private val anything: Test = _ => Anything

  private def splitConjunctivePredicates(e: Expression): Seq[Expression] = e match {
    case And(a, b) => splitConjunctivePredicates(a) ++ splitConjunctivePredicates(b)
    case other => Seq(other)
  }

  private def hasColumnTest(e: Expression): Boolean = e.exists {
    case _: BinaryComparison | _: In | _: InSet | _: IsNull | _: IsNotNull | _: StartsWith => true
    case a: AttributeReference => a.dataType == BooleanType
    case _ => false
  }

  /** A column whose values the stats bound, seen through an order-preserving cast: `dataType` is
   *  the type after the cast, `attribute` the column itself. */
  private final case class Column(attribute: AttributeReference, dataType: DataType, cast: Option[Any => Any])

  private object ColumnRef {
    def unapply(e: Expression): Option[Column] = e match {
      case a: AttributeReference if FileStats.supported(a.dataType) => Some(Column(a, a.dataType, None))
      // Widening casts are monotonic, so the cast bounds bound the cast values (Spark adds them
      // where the optimizer could not unwrap a comparison, e.g. int_col = 1.5D).
      case c @ Cast(a: AttributeReference, to, _, _)
          if FileStats.supported(a.dataType) && FileStats.supported(to) && monotonicCast(a.dataType, to) =>
        Some(Column(a, to, Some((v: Any) => c.copy(child = Literal(v, a.dataType)).eval())))
      case _ => None
    }
  }

  private def monotonicCast(from: DataType, to: DataType): Boolean = (from, to) match {
    case (_: StringType, _) | (_, _: StringType) | (BooleanType, _) | (_, BooleanType) => false
    case (DateType, TimestampType | TimestampNTZType) => true
    case (TimestampType | TimestampNTZType, _) | (_, DateType) => false
    case _ => Cast.canUpCast(from, to)
  }

  private object Lit {
    def unapply(e: Expression): Option[Any] = e match {
      case l: Literal => Some(l.value)
      case f if f.foldable && f.deterministic && FileStats.supported(f.dataType) => Some(f.eval())
      case _ => None
    }
  }

  private def test(e: Expression, statsKey: Attribute => Option[String]): Test = {
    def t(x: Expression): Test = test(x, statsKey)
    // a test of one column: NULL part and single-value part evaluated by Spark, ranges by `values`
    def leaf(c: Column)(values: Bounds => Possible): Test = columnTest(e, c, statsKey)(values)
    e match {
      case And(a, b) =>
        val (x, y) = (t(a), t(b))
        s => { val (p, q) = (x(s), y(s)); Possible(p.canBeTrue && q.canBeTrue, p.canBeFalse || q.canBeFalse) }
      case Or(a, b) =>
        val (x, y) = (t(a), t(b))
        s => { val (p, q) = (x(s), y(s)); Possible(p.canBeTrue || q.canBeTrue, p.canBeFalse && q.canBeFalse) }
      case Not(a) =>
        val x = t(a)
        s => !x(s)
      case Literal(null, BooleanType) => _ => Nothing
      case Literal(true, BooleanType) => _ => True
      case Literal(false, BooleanType) => _ => False
      // a boolean column used as a predicate is `column = true`
      case ColumnRef(c) if c.dataType == BooleanType => leaf(c)(compare(c, true, Eq))

      case IsNull(ColumnRef(c)) => leaf(c)(_ => False)
      case IsNotNull(ColumnRef(c)) => leaf(c)(_ => True)

      case EqualTo(ColumnRef(c), Lit(v)) => leaf(c)(compare(c, v, Eq))
      case EqualTo(Lit(v), ColumnRef(c)) => leaf(c)(compare(c, v, Eq))
      case EqualNullSafe(ColumnRef(c), Lit(v)) => leaf(c)(nullSafeEqual(c, v))
      case EqualNullSafe(Lit(v), ColumnRef(c)) => leaf(c)(nullSafeEqual(c, v))
      case LessThan(ColumnRef(c), Lit(v)) => leaf(c)(compare(c, v, Lt))
      case LessThan(Lit(v), ColumnRef(c)) => leaf(c)(compare(c, v, Gt))
      case LessThanOrEqual(ColumnRef(c), Lit(v)) => leaf(c)(compare(c, v, LtEq))
      case LessThanOrEqual(Lit(v), ColumnRef(c)) => leaf(c)(compare(c, v, GtEq))
      case GreaterThan(ColumnRef(c), Lit(v)) => leaf(c)(compare(c, v, Gt))
      case GreaterThan(Lit(v), ColumnRef(c)) => leaf(c)(compare(c, v, Lt))
      case GreaterThanOrEqual(ColumnRef(c), Lit(v)) => leaf(c)(compare(c, v, GtEq))
      case GreaterThanOrEqual(Lit(v), ColumnRef(c)) => leaf(c)(compare(c, v, LtEq))

      case In(ColumnRef(c), list) if list.forall(Lit.unapply(_).isDefined) =>
        leaf(c)(inList(c, list.map(l => Lit.unapply(l).get)))
      case InSet(ColumnRef(c), values) => leaf(c)(inList(c, values.toSeq))

      case StartsWith(ColumnRef(c), Lit(prefix: UTF8String)) if c.cast.isEmpty && c.dataType.isInstanceOf[StringType] =>
        val n = prefix.numBytes()
        leaf(c) { b =>
          // The strings starting with `prefix` are one interval in byte order: [prefix, the first
          // string after all of them). It meets [min, max] unless max < prefix or min's first
          // |prefix| bytes sort after prefix.
          val possible = b.max.forall(hi => hi.asInstanceOf[UTF8String].compareTo(prefix) >= 0) &&
            b.min.forall(lo => bytePrefix(lo.asInstanceOf[UTF8String], n).compareTo(prefix) <= 0)
          Possible(possible, canBeFalse = true)
        }

      case _ => anything
    }
  }

  private def bytePrefix(s: UTF8String, n: Int): UTF8String =
    if (s.numBytes() <= n) s else UTF8String.fromBytes(s.getBytes, 0, n)

  /** A file's bounds of the non-NULL values of one column, after the column's cast; None bounds
   *  are unknown. There is at least one non-NULL value. */
  private final case class Bounds(min: Option[Any], max: Option[Any])

  /** What Spark's own `e` gives with column `c` replaced by the literal `v` (NULL or a value of
   *  the column's type); anything when it cannot be evaluated. */
  private def evalWith(e: Expression, c: Column, v: Any): Possible =
    try {
      val id = c.attribute.exprId
      e.transform { case a: AttributeReference if a.exprId == id => Literal(v, c.attribute.dataType) }.eval(null) match {
        case true => True
        case false => False
        case null => Nothing
        case _ => Anything
      }
    } catch { case NonFatal(_) => Anything }

  /** The test `e` of column `c`: the rows holding NULL give what Spark evaluates for NULL; the
   *  rows holding values give what Spark evaluates for the one value of a file whose min = max,
   *  else `values(bounds)`. A column without statistics can be anything. */
  private def columnTest(e: Expression, c: Column, statsKey: Attribute => Option[String])(
      values: Bounds => Possible): Test = {
    val key = statsKey(c.attribute)
    // the same for every file: evaluated once, on first use
    lazy val whenNull = evalWith(e, c, null)
    s => key.flatMap(s.columns.get) match {
      case None => Anything
      case Some(cs) =>
        val nullsPossible = cs.nullCount.forall(_ > 0)
        val valuesPossible = (s.rowCount, cs.nullCount) match {
          case (Some(rows), Some(nulls)) => rows > nulls
          case _ => true
        }
        val nullPart = if (nullsPossible) whenNull else Nothing
        val valuePart =
          if (!valuesPossible) Nothing
          else (cs.min, cs.max) match {
            // one value in the file (compared as stored: -0.0 and 0.0 are two values here)
            case (Some(lo), Some(hi)) if java.util.Objects.equals(lo, hi) => evalWith(e, c, lo)
            case (lo, hi) =>
              def cast(v: Option[Any]): Option[Any] = c.cast.fold(v)(f => v.flatMap(x => Option(f(x))))
              values(Bounds(cast(lo), cast(hi)))
          }
        nullPart | valuePart
    }
  }

  private sealed trait Op
  private case object Eq extends Op
  private case object Lt extends Op
  private case object LtEq extends Op
  private case object Gt extends Op
  private case object GtEq extends Op

  /** `column <op> value` over the non-NULL values; a NULL literal makes the comparison NULL. */
  private def compare(c: Column, value: Any, op: Op): Bounds => Possible =
    if (value == null) _ => Nothing
    else {
      val o = PhysicalDataType.ordering(c.dataType)
      b => compareBounds(b, o, value, op)
    }

  private def compareBounds(b: Bounds, o: Ordering[Any], value: Any, op: Op): Possible = {
    def minIs(p: Any => Boolean) = b.min.forall(p)
    def maxIs(p: Any => Boolean) = b.max.forall(p)
    op match {
      case Eq =>
        val only = b.min.exists(o.equiv(_, value)) && b.max.exists(o.equiv(_, value))
        Possible(minIs(o.lteq(_, value)) && maxIs(o.gteq(_, value)), !only)
      case Lt => Possible(minIs(o.lt(_, value)), maxIs(o.gteq(_, value)))
      case LtEq => Possible(minIs(o.lteq(_, value)), maxIs(o.gt(_, value)))
      case Gt => Possible(maxIs(o.gt(_, value)), minIs(o.lteq(_, value)))
      case GtEq => Possible(maxIs(o.gteq(_, value)), minIs(o.lt(_, value)))
    }
  }

  /** `column <=> value` over the non-NULL values: never NULL; against a NULL literal, FALSE. */
  private def nullSafeEqual(c: Column, value: Any): Bounds => Possible =
    if (value == null) _ => False
    else compare(c, value, Eq)

  /** `column IN (values)` over the non-NULL values: TRUE needs a listed value inside [min, max];
   *  with a NULL listed, a value matching none is NULL, not FALSE. */
  private def inList(c: Column, values: Seq[Any]): Bounds => Possible = {
    val nonNull = values.filter(_ != null)
    val noNullListed = nonNull.size == values.size
    val o = PhysicalDataType.ordering(c.dataType)
    b => {
      val hits = nonNull.map(v => compareBounds(b, o, v, Eq))
      // FALSE needs a value matching no listed one: not when every value equals one listed value
      Possible(hits.exists(_.canBeTrue), noNullListed && hits.forall(_.canBeFalse))
    }
  }
}
