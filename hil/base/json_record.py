"""A frozen JSON record: typed fields, unknown keys kept, written back byte for byte.

profile.json and manifest.json are read by people and by other tools, and grow new top-level keys
(each feature adds its own section). A record therefore keeps three things beside its typed
fields: the keys it was read with, in their order; the values of keys it has no field for; and
which fields were present at all. `to_json` writes the keys it was read with in that order, then
any field that now differs from its default, in declaration order: a record read and written
again is the same JSON, and a record made in code writes only what it holds.

Nested JSON is frozen on the way in (objects become read-only mappings, arrays tuples) and thawed
on the way out, so a record can be shared without copying and never changes under its reader.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from functools import cached_property
from types import MappingProxyType
from typing import Any


def freeze(value: Any) -> Any:
    """JSON value -> the same value, read-only: objects as mappings, arrays as tuples."""
    if isinstance(value, Mapping) and not isinstance(value, JsonRecord):
        return MappingProxyType({str(k): freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """A frozen value (or a record) -> plain JSON: dicts and lists, fresh on every call."""
    if isinstance(value, JsonRecord):
        return value.to_json()
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


class JsonRecord(Mapping[str, Any]):
    """Base of the frozen records: the bookkeeping fields and the read-only mapping view.

    Subclasses are `@dataclass(frozen=True, eq=False)` with two trailing fields, `key_order` and
    `extra`; equality is the mapping's (a record equals the dict its JSON is).
    """

    key_order: tuple[str, ...]
    extra: Mapping[str, Any]
    # Collection fields the JSON held as null: read as their empty default, written back as null.
    null_keys: frozenset[str]
    # Fields whose JSON form is a nested record type: name -> callable building it from JSON.
    _NESTED: Mapping[str, Any] = MappingProxyType({})
    _BOOKKEEPING = ("key_order", "extra", "null_keys")

    @classmethod
    def _fields(cls) -> tuple[dataclasses.Field, ...]:
        return tuple(f for f in dataclasses.fields(cls) if f.name not in cls._BOOKKEEPING)  # type: ignore[arg-type]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Any:
        """The record of one JSON object; keys without a field are kept in `extra`, in order."""
        if isinstance(data, cls):
            return data
        fields = {f.name: f for f in cls._fields()}
        values: dict[str, Any] = {}
        nulls = set()
        for key, value in data.items():
            if key in fields and value is None and isinstance(_default(fields[key]), (tuple, Mapping)):
                nulls.add(key)
            elif key in fields:
                values[key] = cls._build(key, value)
        extra = MappingProxyType({k: freeze(v) for k, v in data.items() if k not in fields})
        return cls(**values, key_order=tuple(data), extra=extra, null_keys=frozenset(nulls))  # type: ignore[call-arg]

    def replace(self, **changes: Any) -> Any:
        """A copy with `changes`: fields set, other keys kept in `extra`; a key new to the record is
        written after the ones it already has, in the order given here."""
        names = {f.name for f in self._fields()}
        fields = {k: self._build(k, v) for k, v in changes.items() if k in names}
        extra = {**self.extra, **{k: freeze(v) for k, v in changes.items() if k not in names}}
        order = (*self.key_order, *(k for k in changes if k not in self.key_order))
        return dataclasses.replace(self, **fields, key_order=order, extra=MappingProxyType(extra),  # type: ignore[type-var]
                                   null_keys=self.null_keys - set(changes))

    @classmethod
    def _build(cls, key: str, value: Any) -> Any:
        build = cls._NESTED.get(key)
        return build(value) if build is not None and value is not None else freeze(value)

    @cached_property
    def _emitted(self) -> tuple[str, ...]:
        fields = self._fields()
        added = [f.name for f in fields if f.name not in self.key_order and getattr(self, f.name) != _default(f)]
        added += [k for k in self.extra if k not in self.key_order]
        return (*self.key_order, *added)

    def _raw(self, key: str) -> Any:
        if key in self.null_keys:
            return None
        return self.extra[key] if key in self.extra else getattr(self, key)

    def to_json(self) -> dict[str, Any]:
        """The JSON object: read keys in their order, then new fields; fresh dicts and lists."""
        return {key: thaw(self._raw(key)) for key in self._emitted}

    # -- the read-only mapping view: what `record["key"]` code written against the JSON reads --

    def __getitem__(self, key: str) -> Any:
        if key not in self._emitted:
            raise KeyError(key)
        return thaw(self._raw(key))

    def __iter__(self) -> Iterator[str]:
        return iter(self._emitted)

    def __len__(self) -> int:
        return len(self._emitted)

    def __contains__(self, key: object) -> bool:
        return key in self._emitted

    __hash__ = None  # type: ignore[assignment]


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return field.default_factory()  # type: ignore[misc]
    return dataclasses.MISSING


EMPTY: Mapping[str, Any] = MappingProxyType({})
