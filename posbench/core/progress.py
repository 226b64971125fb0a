"""Progress for a terminal and for a log file alike.

On a terminal, tqdm's bar. Where stderr is not one (a log file, nohup, a SLURM job, a pipe) a bar
would be nothing at all (tqdm hides itself there) or a mess of carriage returns, so instead plain
log lines: one at every tenth of the work or every 30 seconds, whichever comes first, with the
postfix the caller sets (loss, tokens/s) and the time left; and one whenever the description
changes (each evaluation row and length as it starts)."""

from __future__ import annotations

import logging
import sys
import time
from datetime import timedelta

from tqdm.auto import tqdm

log = logging.getLogger("posbench")
EVERY_FRACTION = 0.1
EVERY_SECONDS = 30.0


def _duration(seconds: float) -> str:
    if not seconds < timedelta.max.total_seconds():  # timedelta overflows (a C int of days): no traceback for a time left
        return "more than 2.7 million years"
    return str(timedelta(seconds=round(seconds)))


class PlainProgress:
    """tqdm's interface as posbench uses it (iterate, update, set_postfix, set_description, close),
    writing log lines instead of redrawing a bar."""

    def __init__(self, iterable=None, total: int = 0, initial: int = 0, desc: str = "", unit: str = "it",
                 every_fraction: float = EVERY_FRACTION, every_seconds: float = EVERY_SECONDS, clock=time.monotonic):
        self.iterable, self.total, self.n, self.desc = iterable, total, initial, desc
        self.unit = {"tok": "tokens"}.get(unit, unit)  # a bar's short unit, written out in a sentence
        self.every_fraction, self.every_seconds, self.clock = every_fraction, every_seconds, clock
        self.start_n, self.t0 = initial, clock()
        self.last_t, self.next_fraction = self.t0, self._next_mark(initial)
        self.postfix: dict[str, str] = {}

    def _next_mark(self, n: int) -> float:
        done = n / self.total if self.total else 0.0
        return (int(done / self.every_fraction + 1e-9) + 1) * self.every_fraction

    def __iter__(self):
        for x in self.iterable:
            yield x
            self.update(1)

    def update(self, n: int = 1) -> None:
        self.n += n
        now = self.clock()
        fraction = self.n / self.total if self.total else 0.0
        if fraction >= self.next_fraction - 1e-9 or now - self.last_t >= self.every_seconds:
            self._line(now)

    def _line(self, now: float) -> None:
        self.last_t, self.next_fraction = now, self._next_mark(self.n)
        parts = [f"{self.unit} {self.n:,}/{self.total:,}" + (f" ({100 * self.n / self.total:.0f}%)" if self.total else "")]
        parts += [f"{v} {k}" if k.endswith("/s") else f"{k} {v}" for k, v in self.postfix.items()]
        rate = (self.n - self.start_n) / max(now - self.t0, 1e-9)
        if self.total and self.n < self.total and self.n > self.start_n:
            parts.append(f"ETA {_duration((self.total - self.n) / rate)}")
        log.info("%s: %s", self.desc, ", ".join(parts))

    def set_postfix(self, **values) -> None:
        self.postfix = {k.replace("tok_s", "tokens/s"): str(v) for k, v in values.items()}

    def set_description(self, desc: str) -> None:
        if desc != self.desc:
            self.desc = desc
            log.info("%s: starting (%.0f%% of %s %s done)", desc, 100 * self.n / self.total if self.total else 0,
                     f"{self.total:,}", self.unit)

    def close(self) -> None:
        pass


def progress(iterable=None, *, total: int, initial: int = 0, desc: str = "", unit: str = "it", enabled: bool = True):
    """A tqdm bar on a terminal; PlainProgress's log lines elsewhere; nothing when not ``enabled``."""
    if not enabled or sys.stderr.isatty():
        return tqdm(iterable, total=total, initial=initial, desc=desc, unit=unit, leave=False,
                    disable=None if enabled else True)
    return PlainProgress(iterable, total=total, initial=initial, desc=desc, unit=unit)
