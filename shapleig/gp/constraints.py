"""Declarative constraints of option fields: one per field, validating and normalising it.

As scikit-learn's ``_parameter_constraints``: an options dataclass declares each field's constraint
in its metadata (:func:`option`), and :func:`validate_fields` checks and normalises every field
from that declaration. Every error names the field. Each constraint also gives values it refuses
(:meth:`Constraint.invalid`), from which the test suite feeds every field a bad value and checks
that the error names it (``tests/design/test_options.py``).

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Example:
...     size: int = option(8, Interval(int, 1))
...     def __post_init__(self):
...         validate_fields(self)
>>> Example(size=0)
Traceback (most recent call last):
...
ValueError: size must be an int >= 1, got 0
"""

from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


class Constraint:
    """What a field accepts: :meth:`check` returns the normalised value or raises naming the field."""

    def check(self, name: str, value: Any) -> Any:
        """The normalised ``value``, or ``ValueError`` / ``TypeError`` naming the field ``name``.

        Args:
            name: the field's name (named in the error message).
            value: the value given.

        Returns:
            the normalised value.
        """
        raise NotImplementedError

    def invalid(self) -> tuple:
        """Values this constraint refuses (for the generated tests).

        Returns:
            values to feed the field in the tests; each must raise.
        """
        return ()


def _none_note(allow_none: bool) -> str:
    return " or None" if allow_none else ""


@dataclass(frozen=True)
class Interval(Constraint):
    """A number of ``kind`` (``int`` or ``float``) in ``[low, high]`` (None: unbounded).

    ``open`` excludes the bounds (``float`` only); ``none`` also accepts None. Floats must be
    finite; bools are not numbers here.

    Attributes:
        kind: ``int`` or ``float``.
        low: the lower bound; None: unbounded.
        high: the upper bound; None: unbounded.
        open: exclude the bounds (``float`` only).
        none: also accept None.
    """

    kind: type
    low: float | None = None
    high: float | None = None
    open: bool = False
    none: bool = False

    def _text(self) -> str:
        if self.kind is float and self.low == 0 and self.open and self.high is None:
            text = "a positive finite number"
        else:
            noun = "an int" if self.kind is int else "a finite number"
            lo, hi = (">", "<") if self.open else (">=", "<=")
            bounds = [f"{lo} {self.low}"] if self.low is not None else []
            bounds += [f"{hi} {self.high}"] if self.high is not None else []
            text = f"{noun} {' and '.join(bounds)}".strip()
        return text + _none_note(self.none)

    def check(self, name: str, value: Any) -> Any:
        """The value as ``kind`` if in the interval, else ``ValueError`` naming the field.

        Args:
            name: the field's name.
            value: the value given.

        Returns:
            the value as an int or a float (or None).
        """
        if value is None and self.none:
            return None
        ok = isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
        if ok and self.kind is int:
            ok = isinstance(value, numbers.Integral) or (float(value).is_integer())
        if ok:
            x = float(value)
            ok = bool(np.isfinite(x))
            if ok and self.low is not None:
                ok = x > self.low if self.open else x >= self.low
            if ok and self.high is not None:
                ok = x < self.high if self.open else x <= self.high
        if not ok:
            raise ValueError(f"{name} must be {self._text()}, got {value!r}")
        return int(value) if self.kind is int else float(value)

    def invalid(self) -> tuple:
        """Values outside the interval, of the wrong type, NaN, and None unless accepted.

        Returns:
            the refused values.
        """
        out: list[Any] = ["x", float("nan")]
        if self.low is not None:
            out.append(self.low if self.open else self.low - 1)
        if self.high is not None:
            out.append(self.high + 1)
        if not self.none:
            out.append(None)
        return tuple(out)


@dataclass(frozen=True)
class OneOf(Constraint):
    """One of ``choices`` (``what`` names the kind of value in the message).

    Attributes:
        choices: the accepted values.
        what: the kind of value, named in the message.
    """

    choices: tuple
    what: str = "value"

    def check(self, name: str, value: Any) -> Any:
        """The value if it is one of ``choices``, else ``ValueError`` naming the field and the choices.

        Args:
            name: the field's name.
            value: the value given.

        Returns:
            the value.
        """
        try:
            ok = value in self.choices
        except TypeError:  # an unhashable or incomparable value
            ok = False
        if not ok:
            raise ValueError(f"unknown {self.what} {value!r} for {name}; choose one of {self.choices}")
        return value

    def invalid(self) -> tuple:
        """A name that is not among the choices.

        Returns:
            the refused values.
        """
        return ("no-such-" + self.what.replace(" ", "-"),)


@dataclass(frozen=True)
class Boolean(Constraint):
    """True or False (numpy bools too); ``none`` also accepts None.

    Attributes:
        none: also accept None.
    """

    none: bool = False

    def check(self, name: str, value: Any) -> Any:
        """The value as a bool, else ``ValueError`` naming the field.

        Args:
            name: the field's name.
            value: the value given.

        Returns:
            ``bool(value)`` (or None).
        """
        if value is None and self.none:
            return None
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{name} must be True or False{_none_note(self.none)}, got {value!r}")
        return bool(value)

    def invalid(self) -> tuple:
        """Values that are not bools (and None unless accepted).

        Returns:
            the refused values.
        """
        return ("yes", 2) if self.none else ("yes", 2, None)


@dataclass(frozen=True)
class Checked(Constraint):
    """Whatever ``function(value)`` accepts.

    ``function`` returns the normalised value or raises ``ValueError`` / ``TypeError`` (re-raised
    naming the field when its message does not).

    Attributes:
        function: ``function(value)`` returns the normalised value or raises ``ValueError`` / ``TypeError``.
        bad: values it refuses, for the generated tests.
    """

    function: Callable[[Any], Any]
    bad: tuple = ()

    def check(self, name: str, value: Any) -> Any:
        """``function(value)``; its error re-raised naming the field when its message does not.

        Args:
            name: the field's name.
            value: the value given.

        Returns:
            the normalised value.
        """
        try:
            return self.function(value)
        except (ValueError, TypeError) as exc:
            if name in str(exc):
                raise
            raise type(exc)(f"{name}: {exc}") from exc

    def invalid(self) -> tuple:
        """The values given as ``bad``.

        Returns:
            the refused values.
        """
        return self.bad


def option(default: Any, constraint: Constraint) -> Any:
    """A dataclass field with its ``default`` (immutable) and its constraint.

    Args:
        default: the field's default (immutable).
        constraint: the field's constraint.

    Returns:
        a ``dataclasses.field`` carrying the constraint in its metadata.
    """
    return dataclasses.field(default=default, metadata={"constraint": constraint})


def constraint_of(field: dataclasses.Field) -> Constraint | None:
    """The constraint a field declares (None: unconstrained).

    Args:
        field: a dataclass field.

    Returns:
        the constraint, or None.
    """
    return field.metadata.get("constraint")


def validate_fields(obj: Any) -> None:
    """Check and normalise every constrained field of the (frozen) dataclass instance ``obj``.

    Args:
        obj: a frozen dataclass instance whose fields declare constraints (:func:`option`).
    """
    for f in dataclasses.fields(obj):
        constraint = constraint_of(f)
        if constraint is not None:
            object.__setattr__(obj, f.name, constraint.check(f.name, getattr(obj, f.name)))
