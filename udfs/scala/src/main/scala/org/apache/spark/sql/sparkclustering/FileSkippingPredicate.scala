package org.apache.spark.sql.sparkclustering

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.types.PhysicalDataType
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

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
 */
object FileSkippingPredicate {

  final case class Possible(canBeTrue: Boolean, canBeFalse: Boolean) {
    def unary_! : Possible = Possible(canBeFalse, canBeTrue)
  }
  private val Anything = Possible(canBeTrue = true, canBeFalse = true)
  private val Nothing = Possible(canBeTrue = false, canBeFalse = false)

  /** The filters' conjuncts this evaluator can use (deterministic, no subquery); empty = no use. */
  def usable(filters: Seq[Expression]): Seq[Expression] =
    filters.flatMap(splitConjunctivePredicates).filter { f =>
      f.deterministic && !SubqueryExpression.hasSubquery(f) && hasColumnTest(f)
    }

  /** The test of one file, compiled once per listing (columns, literals and orderings resolved
   *  here, not per file): true = the file may hold a row passing every filter (read it); false =
   *  skip it. */
  def compile(filters: Seq[Expression]): FileStats => Boolean = {
    val tests = filters.map(test).toArray
    stats => stats.rowCount.forall(_ > 0) && tests.forall(t => t(stats).canBeTrue)
  }

  private type Test = FileStats => Possible

  private def splitConjunctivePredicates(e: Expression): Seq[Expression] = e match {
    case And(a, b) => splitConjunctivePredicates(a) ++ splitConjunctivePredicates(b)
    case other => Seq(other)
  }

  private def hasColumnTest(e: Expression): Boolean = e.exists {
    case _: BinaryComparison | _: In | _: InSet | _: IsNull | _: IsNotNull | _: StartsWith => true
    case a: AttributeReference => a.dataType == BooleanType
    case _ => false
  }

  /** A column whose values the stats bound, seen through order-preserving casts. */
  private final case class Column(name: String, dataType: DataType, cast: Option[Any => Any])

  private object ColumnRef {
    def unapply(e: Expression): Option[Column] = e match {
      case a: AttributeReference if FileStats.supported(a.dataType) => Some(Column(a.name, a.dataType, None))
      // Widening casts are monotonic, so the cast bounds bound the cast values (Spark adds them
      // where the optimizer could not unwrap a comparison, e.g. int_col = 1.5D).
      case c @ Cast(a: AttributeReference, to, _, _)
          if FileStats.supported(a.dataType) && FileStats.supported(to) && monotonicCast(a.dataType, to) =>
        Some(Column(a.name, to, Some((v: Any) => c.copy(child = Literal(v, a.dataType)).eval())))
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

  private def test(e: Expression): Test = e match {
    case And(a, b) =>
      val (x, y) = (test(a), test(b))
      s => { val (p, q) = (x(s), y(s)); Possible(p.canBeTrue && q.canBeTrue, p.canBeFalse || q.canBeFalse) }
    case Or(a, b) =>
      val (x, y) = (test(a), test(b))
      s => { val (p, q) = (x(s), y(s)); Possible(p.canBeTrue || q.canBeTrue, p.canBeFalse && q.canBeFalse) }
    case Not(a) =>
      val x = test(a)
      s => !x(s)
    case Literal(null, BooleanType) => _ => Nothing
    case Literal(true, BooleanType) => _ => Possible(canBeTrue = true, canBeFalse = false)
    case Literal(false, BooleanType) => _ => Possible(canBeTrue = false, canBeFalse = true)
    // a boolean column used as a predicate is `column = true`
    case ColumnRef(c) if c.dataType == BooleanType => compare(c, true, Eq)

    case IsNull(ColumnRef(c)) => withColumn(c)(b => Possible(b.nullsPossible, b.valuesPossible))
    case IsNotNull(ColumnRef(c)) => withColumn(c)(b => Possible(b.valuesPossible, b.nullsPossible))

    case EqualTo(ColumnRef(c), Lit(v)) => compare(c, v, Eq)
    case EqualTo(Lit(v), ColumnRef(c)) => compare(c, v, Eq)
    case EqualNullSafe(ColumnRef(c), Lit(v)) => nullSafeEqual(c, v)
    case EqualNullSafe(Lit(v), ColumnRef(c)) => nullSafeEqual(c, v)
    case LessThan(ColumnRef(c), Lit(v)) => compare(c, v, Lt)
    case LessThan(Lit(v), ColumnRef(c)) => compare(c, v, Gt)
    case LessThanOrEqual(ColumnRef(c), Lit(v)) => compare(c, v, LtEq)
    case LessThanOrEqual(Lit(v), ColumnRef(c)) => compare(c, v, GtEq)
    case GreaterThan(ColumnRef(c), Lit(v)) => compare(c, v, Gt)
    case GreaterThan(Lit(v), ColumnRef(c)) => compare(c, v, Lt)
    case GreaterThanOrEqual(ColumnRef(c), Lit(v)) => compare(c, v, GtEq)
    case GreaterThanOrEqual(Lit(v), ColumnRef(c)) => compare(c, v, LtEq)

    case In(ColumnRef(c), list) if list.forall(Lit.unapply(_).isDefined) =>
      inList(c, list.map(l => Lit.unapply(l).get))
    case InSet(ColumnRef(c), values) => inList(c, values.toSeq)

    case StartsWith(ColumnRef(c), Lit(prefix: UTF8String)) if c.cast.isEmpty && c.dataType.isInstanceOf[StringType] =>
      val n = prefix.numBytes()
      withColumn(c) { b =>
        // The strings starting with `prefix` are one interval in byte order: [prefix, the first
        // string after all of them). It meets [min, max] unless max < prefix or min's first
        // |prefix| bytes sort after prefix.
        val possible = b.valuesPossible &&
          b.max.forall(hi => hi.asInstanceOf[UTF8String].compareTo(prefix) >= 0) &&
          b.min.forall(lo => bytePrefix(lo.asInstanceOf[UTF8String], n).compareTo(prefix) <= 0)
        Possible(possible, b.valuesPossible)
      }

    case _ => _ => Anything
  }

  /** `e` evaluated for one file (tests and one-off checks; a listing compiles once). */
  def eval(e: Expression, s: FileStats): Possible = test(e)(s)

  private def bytePrefix(s: UTF8String, n: Int): UTF8String =
    if (s.numBytes() <= n) s else UTF8String.fromBytes(s.getBytes, 0, n)

  /** A file's bounds for one column, after casts; None bounds are unknown. */
  private final case class Bounds(min: Option[Any], max: Option[Any], nullsPossible: Boolean,
      valuesPossible: Boolean)

  private def withColumn(c: Column)(f: Bounds => Possible): Test = s => {
    val stats = s.columns.get(c.name).orElse {
      val matches = s.columns.filter(_._1.equalsIgnoreCase(c.name))
      if (matches.size == 1) Some(matches.head._2) else None
    }
    stats match {
      case None => Anything
      case Some(cs) =>
        val nullsPossible = cs.nullCount.forall(_ > 0)
        val valuesPossible = (s.rowCount, cs.nullCount) match {
          case (Some(rows), Some(nulls)) => rows > nulls
          case _ => true
        }
        def bound(v: Option[Any]): Option[Any] = c.cast.fold(v)(f => v.flatMap(x => Option(f(x))))
        f(Bounds(bound(cs.min), bound(cs.max), nullsPossible, valuesPossible))
    }
  }

  private sealed trait Op
  private case object Eq extends Op
  private case object Lt extends Op
  private case object LtEq extends Op
  private case object Gt extends Op
  private case object GtEq extends Op

  /** `column <op> value` for a non-NULL literal; a NULL literal makes the comparison NULL. */
  private def compare(c: Column, value: Any, op: Op): Test =
    if (value == null) _ => Nothing
    else withColumn(c)(b => compareBounds(b, PhysicalDataType.ordering(c.dataType), value, op))

  private def compareBounds(b: Bounds, o: Ordering[Any], value: Any, op: Op): Possible =
    if (!b.valuesPossible) Nothing
    else {
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

  private def nullSafeEqual(c: Column, value: Any): Test =
    if (value == null) withColumn(c)(b => Possible(b.nullsPossible, b.valuesPossible))
    else {
      val o = PhysicalDataType.ordering(c.dataType)
      withColumn(c) { b =>
        val eq = compareBounds(b, o, value, Eq)
        Possible(eq.canBeTrue, eq.canBeFalse || b.nullsPossible)
      }
    }

  /** `column IN (values)`: TRUE needs a value inside [min, max]; a NULL in the list only adds NULL. */
  private def inList(c: Column, values: Seq[Any]): Test = {
    val nonNull = values.filter(_ != null)
    val noNullListed = nonNull.size == values.size
    val o = PhysicalDataType.ordering(c.dataType)
    withColumn(c) { b =>
      val canBeTrue = b.valuesPossible && nonNull.exists(v => compareBounds(b, o, v, Eq).canBeTrue)
      Possible(canBeTrue, b.valuesPossible && noNullListed)
    }
  }
}
