"""The mapping profile's API: the mapping itself and the sample domain it declares."""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Hashable, MutableMapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias, final

from ..._util import short_repr

# --------------------------------------------------------------------------- API and errors

MappingAPI: TypeAlias = MutableMapping[Any, Any]
"""
The API of the profile: the mapping itself, any :class:`collections.abc.MutableMapping`
that holds the keys and values of its sample domain (see :class:`MappingSamples`).
"""

SAMPLES_ATTRIBUTE: Final = "conformkit_samples"
"""The attribute in which a mapping (or a durable store) declares its :class:`MappingSamples`."""

_CHECKED: Final = 8  # how many samples a declaration is checked on


@final
@dataclass(frozen=True, slots=True)
class MappingSamples:
    """
    A mapping's sample domain: the keys and values that the cases not about types write.

    ``key(n)`` and ``value(n)`` give the n-th sample key and value, for any
    ``n >= 0``: distinct ``n`` give unequal keys, and unequal values. The cases
    use ``value(0)``, ``value(1)`` and ``value(2)`` most, so let those be the
    plainest values the store holds; ``read_your_writes`` writes the first six
    and ``large_value``, a value far larger than ``value(0)`` for an overwrite
    that outgrows its place.

    A mapping declares its domain in its attribute ``conformkit_samples``, on
    its class or on the instance::

        class BytesStore(MutableMapping[bytes, bytes]):
            conformkit_samples = BYTES_SAMPLES

    A mapping that declares nothing (a ``dict``) gets :data:`RICH_SAMPLES`.

    :raises TypeError: if ``key`` or ``value`` is not callable, or a key is unhashable.
    :raises ValueError: if two of the first eight keys, or values, are equal.
    """

    key: Callable[[int], Hashable]
    value: Callable[[int], object]
    large_value: object

    def __post_init__(self) -> None:
        if not callable(self.key) or not callable(self.value):
            raise TypeError(
                f"MappingSamples needs key(n) and value(n) functions, got key={self.key!r} "
                f"and value={self.value!r}"
            )
        for name, make in (("key", self.key), ("value", self.value)):
            made = [make(n) for n in range(_CHECKED)]
            if name == "key":
                for item in made:
                    hash(item)  # raises TypeError for an unhashable key
            equal = [
                (first, second)
                for first in range(_CHECKED)
                for second in range(first + 1, _CHECKED)
                if made[first] == made[second]
            ]
            if equal:
                first, second = equal[0]
                raise ValueError(
                    f"MappingSamples: {name}({first}) and {name}({second}) are equal, "
                    f"{made[first]!r}; distinct n must give unequal {name}s"
                )


RICH_VALUES: Final[tuple[object, ...]] = (
    "a value",
    42,
    2.5,
    b"\x00\xff",
    (1, "two"),
    {"nested": {"list": [1, 2], "set": {3}, "tuple": (4, 5)}},
)


def _rich_value(n: int) -> object:
    return RICH_VALUES[n] if n < len(RICH_VALUES) else f"value {n}"


def _text_key(n: int) -> str:
    return f"key-{n}"


def _bytes_key(n: int) -> bytes:
    return f"key-{n}".encode("ascii")


def _bytes_value(n: int) -> bytes:
    return f"value {n}".encode("ascii")


RICH_SAMPLES: Final = MappingSamples(
    key=_text_key, value=_rich_value, large_value="a much longer value " * 100
)
"""
The default domain: keys ``"key-0"``, ``"key-1"``, …; values ``"a value"``, ``42``,
``2.5``, ``b"\\x00\\xff"``, ``(1, "two")``, a nested dict, then ``"value 6"``, ….
"""


def _text_value(n: int) -> str:
    return f"value {n}"


STR_SAMPLES: Final = MappingSamples(
    key=_text_key, value=_text_value, large_value="a much longer value " * 100
)
"""Str keys ``"key-0"``, … and str values ``"value 0"``, …: a store of text, such as Redis."""

BYTES_VALUE_SAMPLES: Final = MappingSamples(
    key=_text_key, value=_bytes_value, large_value=b"a much longer value " * 100
)
"""Str keys ``"key-0"``, …, and bytes values ``b"value 0"``, …: a store of files by name."""

BYTES_SAMPLES: Final = MappingSamples(
    key=_bytes_key, value=_bytes_value, large_value=b"a much longer value " * 100
)
"""Bytes keys ``b"key-0"``, … and bytes values ``b"value 0"``, …: a store such as :mod:`dbm`."""


def samples_of(api: object) -> MappingSamples:
    """
    The sample domain a mapping (or a durable store) declares, :data:`RICH_SAMPLES` if none.

    The declaration is read as a plain attribute, of the object or of its class, without
    running the object's code: not its ``__getattr__`` (a store that delegates unknown
    attributes elsewhere, or refuses them), nor a property.

    :raises TypeError: if its ``conformkit_samples`` is not a :class:`MappingSamples`.
    """
    declared = inspect.getattr_static(api, SAMPLES_ATTRIBUTE, None)
    if isinstance(declared, types.MemberDescriptorType):  # a slot, read as Python reads it
        try:
            declared = declared.__get__(api, type(api))
        except AttributeError:  # an empty slot
            declared = None
    if declared is None:
        return RICH_SAMPLES
    if not isinstance(declared, MappingSamples):
        raise TypeError(
            f"{type(api).__qualname__}.{SAMPLES_ATTRIBUTE} must be a MappingSamples, "
            f"got {short_repr(declared)}"
        )
    return declared
