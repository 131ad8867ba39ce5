"""User operators written as Python functions.

A function of scalars becomes an operator of index notation by tracing: it is called once
with symbolic arguments, and what it builds from them (``+ - * / **``, comparisons,
``abs``, and this module's functions) is the operator's body. The kernel then computes
that body in compiled code; Python is not called per entry::

    from sparsec import operators as ops

    @ops.operator(identity=0)
    def absmax(a, b):
        return ops.where(abs(a) >= abs(b), a, b)

    relu = ops.operator(lambda x: ops.max(x, 0), name="relu")

    C = sparsec.evaluate("C(i,j) = A(i,k) * B(k,j) over (absmax, *)", A=A, B=B,
                         operators=[absmax])
    R = sparsec.evaluate("R(i,j) = relu(A(i,j))", A=A, operators=[relu])

An operator used as a semiring's reduction needs ``identity``; sparsec checks that it is
associative and commutative with that identity on sample values, and refuses it with a
counterexample otherwise. Python control flow on an argument (``if a < b:``) cannot be
traced and raises ``TypeError``: write ``where(a < b, x, y)`` instead.
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "Operator",
    "Symbol",
    "operator",
    "where",
    "max",
    "min",
    "sqrt",
    "exp",
    "log",
    "sin",
    "cos",
    "tan",
    "floor",
    "ceil",
    "pow",
]


class Symbol:
    """A traced value: the text of an index-notation expression over the parameters."""

    __slots__ = ("text",)
    # Comparisons build expressions, so a symbol is no dictionary key.
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Symbol({self.text!r})"

    def __bool__(self) -> bool:
        raise TypeError(
            "an operator's arguments are traced, not known: Python's `if`, `and`, `or` "
            "and `not` cannot branch on them; use sparsec.operators.where(cond, x, y)"
        )

    def _binary(self, symbol: str, other: Any, swapped: bool = False) -> Symbol:
        left, right = _text(self), _text(other)
        if swapped:
            left, right = right, left
        return Symbol(f"({left} {symbol} {right})")

    def __add__(self, o: Any) -> Symbol:
        return self._binary("+", o)

    def __radd__(self, o: Any) -> Symbol:
        return self._binary("+", o, True)

    def __sub__(self, o: Any) -> Symbol:
        return self._binary("-", o)

    def __rsub__(self, o: Any) -> Symbol:
        return self._binary("-", o, True)

    def __mul__(self, o: Any) -> Symbol:
        return self._binary("*", o)

    def __rmul__(self, o: Any) -> Symbol:
        return self._binary("*", o, True)

    def __truediv__(self, o: Any) -> Symbol:
        return self._binary("/", o)

    def __rtruediv__(self, o: Any) -> Symbol:
        return self._binary("/", o, True)

    def __pow__(self, o: Any) -> Symbol:
        return pow(self, o)

    def __rpow__(self, o: Any) -> Symbol:
        return pow(o, self)

    def __neg__(self) -> Symbol:
        return Symbol(f"(-{_text(self)})")

    def __pos__(self) -> Symbol:
        return self

    def __abs__(self) -> Symbol:
        return _call("abs", self)

    def __lt__(self, o: Any) -> Symbol:  # type: ignore[override]
        return self._binary("<", o)

    def __le__(self, o: Any) -> Symbol:  # type: ignore[override]
        return self._binary("<=", o)

    def __gt__(self, o: Any) -> Symbol:  # type: ignore[override]
        return self._binary(">", o)

    def __ge__(self, o: Any) -> Symbol:  # type: ignore[override]
        return self._binary(">=", o)

    def __eq__(self, o: Any) -> Symbol:  # type: ignore[override]
        return self._binary("==", o)

    def __ne__(self, o: Any) -> Symbol:  # type: ignore[override]
        return self._binary("!=", o)


def _text(x: Any) -> str:
    if isinstance(x, Symbol):
        return x.text
    if isinstance(x, bool):
        return "1" if x else "0"
    if isinstance(x, numbers.Real):
        value = float(x)
        # Index notation writes finite numbers: the others as the quotient that gives them.
        if math.isnan(value):
            return "(0.0 / 0.0)"
        if math.isinf(value):
            return "(1.0 / 0.0)" if value > 0 else "(-1.0 / 0.0)"
        return repr(value)
    raise TypeError(f"an operator's body cannot hold {x!r} ({type(x).__name__})")


def _call(name: str, *args: Any) -> Symbol:
    return Symbol(f"{name}({', '.join(_text(a) for a in args)})")


def where(cond: Any, x: Any, y: Any) -> Symbol:
    """``x`` where ``cond`` is not zero, else ``y``."""
    return _call("where", cond, x, y)


def max(a: Any, b: Any) -> Symbol:  # noqa: A001 - the notation's name
    """The larger of ``a`` and ``b`` (the one that is not NaN)."""
    return _call("max", a, b)


def min(a: Any, b: Any) -> Symbol:  # noqa: A001
    """The smaller of ``a`` and ``b`` (the one that is not NaN)."""
    return _call("min", a, b)


def pow(a: Any, b: Any) -> Symbol:  # noqa: A001
    """``a`` to the power ``b``."""
    return _call("pow", a, b)


def _unary(name: str) -> Callable[[Any], Symbol]:
    def function(x: Any) -> Symbol:
        return _call(name, x)

    function.__name__ = name
    function.__doc__ = f"``{name}(x)``, element by element."
    return function


sqrt = _unary("sqrt")
exp = _unary("exp")
log = _unary("log")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
floor = _unary("floor")
ceil = _unary("ceil")


class Operator:
    """A traced operator: its name, parameters, body and (for a reduction) identity.

    ``definition`` is the ``let`` line that :func:`sparsec.compile` puts before the
    statement.
    """

    def __init__(self, name: str, parameters: list[str], body: str, identity: float | None):
        self.name = name
        self.parameters = parameters
        self.body = body
        self.identity = identity

    @property
    def definition(self) -> str:
        """``let name(a, b) = body [identity v];``"""
        text = f"let {self.name}({', '.join(self.parameters)}) = {self.body}"
        if self.identity is not None:
            value = float(self.identity)
            text += " identity " + ("inf" if value == math.inf else
                                    "-inf" if value == -math.inf else repr(value))
        return text + ";"

    def __repr__(self) -> str:
        return f"Operator({self.definition!r})"


def _trace(function: Callable[..., Any], name: str | None, identity: float | None) -> Operator:
    name = name or getattr(function, "__name__", "")
    if not name.isidentifier() or name == "<lambda>":
        raise ValueError("give the operator a name: operator(fn, name='relu')")
    parameters = [
        p.name
        for p in inspect.signature(function).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if not 1 <= len(parameters) <= 2:
        raise ValueError(
            f"operator `{name}` takes {len(parameters)} parameters; an operator takes 1 "
            "(element-wise) or 2 (element-wise, or a semiring's operation)"
        )
    result = function(*(Symbol(p) for p in parameters))
    return Operator(name, parameters, _text(result), identity)


def operator(
    function: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    identity: float | None = None,
) -> Any:
    """Trace ``function`` into an :class:`Operator` (usable as a decorator, with or
    without arguments). ``name`` defaults to the function's; ``identity`` makes it usable
    as a semiring's reduction."""
    if function is None:
        return lambda f: _trace(f, name, identity)
    return _trace(function, name, identity)


def definitions(operators: Iterable[Operator] | None) -> str:
    """The ``let`` lines of ``operators``, to put before a statement."""
    if operators is None:
        return ""
    lines = []
    for op in operators:
        if not isinstance(op, Operator):
            raise TypeError(
                f"operators= takes sparsec.operators.operator(...) results, not {op!r}"
            )
        lines.append(op.definition)
    return " ".join(lines) + (" " if lines else "")
