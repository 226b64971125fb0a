"""Stopping training at a step boundary: the first SIGINT (Ctrl-C) or SIGTERM (SLURM's, timeout's) asks,
the training loop answers after its current optimizer step, and a second one stops at once.

Without this a Ctrl-C at step 49 of 600 lost every step since the last periodic resume state (none
before step 100) while the line said the run would continue, and a SIGTERM killed the process with
no word. Now the loop (posbench/training/trainer.py) asks ``requested()`` after each step, writes a
resume state at that step and raises ``Interrupted`` with a line that names the step the same command
resumes from. Nothing is written from inside a handler: it only notes the request, so the state that
is saved is a whole step's, and a resumed run is bit for bit the run never interrupted.

A request that arrives in the last step cannot be a resume state (the run is trained): the loop ends,
the run's checkpoint is written, and ``raise_deferred()`` then stops before the evaluation.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading

from posbench.core.errors import Interrupted

log = logging.getLogger("posbench")
SIGNALS = (signal.SIGINT, signal.SIGTERM)
_deferred: Interrupted | None = None  # a request of the last step, raised once the run is saved


class StopRequest:
    """The signal that asked training to stop (None: none yet). Installed by ``stop_at_step_boundary``."""

    def __init__(self, what: str):
        self.what, self.signum = what, None

    def requested(self) -> bool:
        return self.signum is not None

    def handle(self, signum, frame) -> None:
        name = signal.Signals(signum).name
        if self.signum is not None:  # the second: at once, the last resume state on disk is whole
            raise Interrupted(signum, f"posbench: interrupted again ({name}): stopped at once, in the middle of a "
                                      f"step; run the same command again to resume from the last resume state")
        self.signum = signum
        log.warning("%s: %s received: stopping after the current step with a resume state (%s again stops at once)",
                    self.what, name, name)

    def stop(self, step: int, steps: int, saved: bool) -> Interrupted:
        """The interrupt that ends training after ``step`` of ``steps``, its state saved (or not: no resume_dir)."""
        name = signal.Signals(self.signum).name
        how = (f"resume state saved; run the same command again to resume from step {step}" if saved
               else "no resume state (this training keeps none)")
        return Interrupted(self.signum, f"posbench: interrupted ({name}) after step {step} of {steps} ({self.what}); {how}")

    def trained(self, steps: int) -> Interrupted:
        """The interrupt of a request in the last step: the training is complete and is saved first."""
        name = signal.Signals(self.signum).name
        return Interrupted(self.signum, f"posbench: interrupted ({name}) in the last step of {steps} ({self.what}); "
                                        "the training is complete and saved; run the same command again to go on")


@contextlib.contextmanager
def stop_at_step_boundary(what: str):
    """While training: SIGINT and SIGTERM become a ``StopRequest`` the loop answers at its next step
    boundary; the handlers before are put back after. Outside the main thread (where Python delivers
    signals) nothing is installed and the request never comes."""
    global _deferred
    _deferred = None
    request = StopRequest(what)
    if threading.current_thread() is not threading.main_thread():
        yield request
        return
    before = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        signal.signal(s, request.handle)
    try:
        yield request
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def defer(interrupt: Interrupted) -> None:
    """Keep the interrupt of a run's last step, to raise once the caller has saved the trained run."""
    global _deferred
    _deferred = interrupt


def raise_deferred() -> None:
    """Raise (once) the interrupt that arrived in the last step of the training just saved."""
    global _deferred
    interrupt, _deferred = _deferred, None
    if interrupt is not None:
        raise interrupt
