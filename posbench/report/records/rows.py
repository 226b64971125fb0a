"""What a report row is: its identity, read from the records that carry it or, for records made
before they did, from its name.

A row name packs the encoding with how it was evaluated (``rope+yarn@4x+ft100``, ``alibi+temp0.1``,
``xpos+bca``). Reading it back is ``parse_row_name``'s job alone, so that when records carry these as
fields, one function changes.

An evaluation record made by the current code says what its row is (``Row.record()``,
posbench/evaluation/variants/); the loader (records/load.py, and the task records' reader) remembers it
here by row name, and ``row_record`` gives it back, else reads it from the name
(posbench.evaluation.variants.parse_row). The registry is module-global: a row name means one row in
every report, and a record that says otherwise replaces it (``generation`` counts the changes, so that
what is cached from a row, its style in drawing/style.py, is recomputed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from posbench.evaluation.variants import BCA_SUFFIX, RANDPOS_SUFFIX, base_variant, temperature_of
from posbench.evaluation.variants import parse_row as read_name

# what each row is, from the records that carry it; rows of records made before that are read from their names
_ROWS: dict[str, dict] = {}
_GENERATION = [0]


def remember_row(name: str, row: dict | None) -> None:
    """Record what row ``name`` is (from an evaluation record), for its style."""
    if isinstance(row, dict) and _ROWS.get(name) != row:
        _ROWS[name] = row
        _GENERATION[0] += 1


def row_record(name: str) -> dict:
    """What row ``name`` is: as its records said (``remember_row``), else as its name says."""
    return _ROWS.get(name) or read_name(name)


def generation() -> int:
    """How many times a remembered row changed: a cache of anything read from ``row_record`` keys on it."""
    return _GENERATION[0]


# an extension run's row (posbench/training/extend.py): <encoding>[+<method>]@<factor>x+ft<steps>
EXTENSION = re.compile(r"^(?P<encoding>.+?)(?:\+(?P<method>[A-Za-z0-9_]+))?@(?P<factor>[0-9.]+)x\+ft(?P<steps>\d+)$")


@dataclass(frozen=True)
class ExtensionName:
    """What an extension run's row name says: the encoding continued at ``factor`` x train_len for
    ``steps`` steps with ``method`` ("plain": no RoPE method)."""

    encoding: str
    method: str
    factor: float
    steps: int


@dataclass(frozen=True)
class RowName:
    """A report row's name, read back. ``key``: the encoding with its RoPE scaling (``rope+yarn``),
    what its colour belongs to; ``window``: an evaluation-only window (bca, randpos);
    ``temperature``: c of an attention-temperature row; ``extension``: set for extension runs."""

    name: str
    encoding: str
    key: str
    window: str | None
    temperature: float | None
    extension: ExtensionName | None


def parse_row_name(name: str) -> RowName:
    """The one place that reads a row name (see the module doc)."""
    key = base_variant(name).split("@")[0]
    window = next((s.lstrip("+") for s in (BCA_SUFFIX, RANDPOS_SUFFIX) if name.endswith(s)), None)
    m = EXTENSION.match(name)
    ext = None
    if m is not None and m["factor"].count(".") <= 1 and m["factor"] != ".":  # "1.5", not "1.2.3"
        ext = ExtensionName(m["encoding"], m["method"] or "plain", float(m["factor"]), int(m["steps"]))
    return RowName(name, key.split("+")[0], key, window, temperature_of(name), ext)
