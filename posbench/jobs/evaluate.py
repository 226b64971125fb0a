"""``posbench-eval``'s job: a finished run directory scored again (other lengths, protocols or
variants), only what its metrics.json lacks, under the run's lock; the records it asked for printed
as one table on stdout."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch

from posbench.core.device import Runtime, resolve_device
from posbench.core.errors import PosbenchError
from posbench.core.files import check_writable_dir
from posbench.core.hydra_state import launch_command
from posbench.data.load import load_corpus
from posbench.evaluation.evaluate import evaluate_into
from posbench.evaluation.plan import RECORDS, evaluation_plan, missing, record_key, why_new
from posbench.evaluation.scored_text import with_scored_text
from posbench.evaluation.settings import EvalConfig
from posbench.jobs.corpora import check_same_corpus
from posbench.jobs.records_table import records_table
from posbench.spec import RunSpec
from posbench.store.rundir import CONFIG, METRICS, RunDir

log = logging.getLogger("posbench")


@dataclass(frozen=True)
class EvalRequest:
    """posbench-eval: score the run in ``run_dir`` with the evaluation settings ``eval``."""

    eval: EvalConfig
    run_dir: Optional[str]
    runtime: Runtime
    from_run: tuple[str, ...] = ()  # the eval settings taken from the run (with_run_defaults), as overrides: said in the log

    def check(self) -> None:
        """What posbench-train would refuse in ``eval`` for this run is refused here too: the same
        checks (RunSpec.check_evaluation), against the run's own settings."""
        self.run_spec()
        completed_metrics(self.folder())  # before the lock: a refusal leaves nothing behind
        self.runtime.check()
        check_writable_dir(self.run_dir, "run_dir")

    def folder(self) -> RunDir:
        """The run directory asked for (``run_dir=``, ``~`` expanded)."""
        if self.run_dir is None:
            raise PosbenchError("give the run to evaluate: posbench-eval run_dir=runs/<run_id>")
        return RunDir(Path(self.run_dir).expanduser())

    def run_spec(self):
        """The run's own spec (from its saved config.yaml), with this request's evaluation settings."""
        folder = self.folder()
        if not folder.has_config():
            raise PosbenchError(f"run_dir={self.run_dir} is not a run directory (no {CONFIG}); give a folder that "
                                "posbench-train made, e.g. runs/<run_id>")
        if folder.is_checkpoint_run():
            raise PosbenchError(f"run_dir={self.run_dir} was made by posbench-eval-hf from a Hugging Face checkpoint; "
                                "score it again with posbench-eval-hf CHECKPOINT --out <its folder> (docs/checkpoints.md)")
        try:
            spec = RunSpec.from_config(folder.read_run_config())
        except (ValueError, PosbenchError) as e:  # unreadable YAML, no train_len, a plug-in not installed here
            raise PosbenchError(f"{folder.path / CONFIG} is not a usable posbench run config ({e})") from None
        spec = spec.with_eval(self.eval)
        spec.check_evaluation()
        return spec


# the eval settings a re-evaluation takes from the run's own config.yaml unless the command line gives them:
# everything that says what is scored (the protocols and their strides, the scored tokens, the rows, the
# multiples, the attention diagnostics), so that new records join the run's own, on its token set and its
# protocols. Not kept: batch_tokens (how many tokens a forward pass holds: this machine's memory, not the
# run's records) and during_training (a training schedule; posbench-eval does not train)
NOT_FROM_RUN = ("batch_tokens", "during_training")


def with_run_defaults(asked: dict, run_eval: dict, given: set[str]) -> tuple[dict, dict]:
    """(the eval settings to use, those taken from the run): ``asked`` (composed from conf/eval and
    the command line) with every key the command line did not give (``given``: field names) and the
    run's config holds replaced by the run's value, except NOT_FROM_RUN. A sweep that turned the
    sliding protocol off must not get it back from a later ``posbench-eval run_dir=... eval.multiples=[...]``."""
    out, taken = dict(asked), {}
    for key, value in run_eval.items():
        if key in asked and key not in given and key not in NOT_FROM_RUN:
            out[key] = value
            if value != asked[key]:
                taken[key] = value
    return out, taken


def model_from_checkpoint(ckpt: dict, device: torch.device):
    """(the trained model of a checkpoint (RunDir.load_checkpoint), the run's RunSpec); one-line
    error if it does not fit."""
    try:
        cfg = RunSpec.from_config(ckpt["config"])
        model = cfg.build_model(ckpt["model"])  # with an extension run's method and row names (nothing for others)
    except PosbenchError:
        raise
    except Exception as e:  # noqa: BLE001 - keys or shapes of another model, a config without a field
        raise PosbenchError(f"checkpoint does not match its own config ({type(e).__name__}: "
                            f"{str(e).splitlines()[0][:160]}); train the run again") from None
    return model.to(device), cfg


def completed_metrics(folder: RunDir) -> dict:
    """The metrics of a run that can be evaluated; a one-line PosbenchError for any other."""
    try:
        metrics = folder.load_metrics()
    except ValueError as e:
        raise PosbenchError(f"{folder.path / METRICS} is unreadable ({e}); posbench-train with the run's config trains "
                            "it again") from None
    if metrics is None:
        raise PosbenchError(f"{folder} has no {METRICS}: its training has not finished (posbench-train resumes it)")
    if metrics["status"] != "completed":
        raise PosbenchError(f"{folder} has status {metrics['status']!r}: only a completed run can be evaluated")
    return metrics


def evaluate_run(folder: RunDir, eval_cfg: EvalConfig, runtime: Runtime = Runtime(), progress: bool = True,
                 only_missing: bool = False, command: str | None = None, show: bool = True,
                 from_run: tuple[str, ...] = ()) -> tuple[dict, int]:
    """Evaluate a trained run at the settings of ``eval_cfg`` and merge the records into its files;
    with ``only_missing``, only the records it does not have yet. Returns (metrics, records made).
    ``from_run``: the settings of ``eval_cfg`` that are the run's own (EvalRequest.from_run), said
    with what is scored, once every check has passed (a refusal stays one line)."""
    metrics = completed_metrics(folder)
    new = None
    if only_missing:
        # planned from the run's config.yaml, before its weights load: with every record there nothing is
        # loaded, so a run unpacked from kept records (posbench-records keeps no weights) is a finished no-op
        spec = RunSpec.from_config(folder.read_run_config())
        plan = asked_for(spec.with_eval(eval_cfg), metrics)
        new = missing(plan, metrics)
        if not new:
            _say_what_is_scored(folder, from_run, len(plan), new, metrics, spec.train_len)
            return metrics, 0
    device = resolve_device(runtime.device)
    model, cfg = model_from_checkpoint(folder.load_checkpoint(), device)
    corpus = load_corpus(cfg.data)
    check_same_corpus(folder, corpus)  # scored on the text it was trained on, or not at all
    cfg.with_eval(eval_cfg).check_corpus(corpus, evaluated=True)  # every window asked for fits, before anything is scored
    if only_missing:  # said once every check has passed, so that a refusal stays one line
        _say_what_is_scored(folder, from_run, len(plan), new, metrics, cfg.train_len)
    elif from_run:
        _say_what_is_scored(folder, from_run, 0, [], metrics, cfg.train_len, records=False)
    ev = with_scored_text(cfg.with_eval(eval_cfg).resolved_eval(corpus.fingerprint, runtime.attention), corpus)
    made, per_pos, token_losses = evaluate_into(metrics, model, ev, device, progress, only_missing, show=show)
    if not made:
        return metrics, 0
    if command:
        metrics["commands"] = list(dict.fromkeys([*metrics.get("commands", []), command.replace(str(folder), "<run_dir>")]))
    if per_pos:
        folder.write_per_position(per_pos)
    if token_losses:
        folder.write_token_losses(token_losses)
    folder.write_metrics(metrics)
    return metrics, made


def _say_what_is_scored(folder: RunDir, from_run: tuple[str, ...], planned: int, new: list, metrics: dict,
                        train_len: int, records: bool = True) -> None:
    """The settings taken from the run's config (not conf/eval's defaults: say so, and how to change them),
    and what a re-run skips and scores, so that a quick finish is not mistaken for a failure, with why each
    record is new (a changed token set rescores every length): a rescoring must not look arbitrary."""
    if from_run:
        log.info("%s: eval settings from the run's config.yaml (give them on the command line to change them): %s",
                 folder.name, " ".join(from_run))
    if records:
        log.info("%s: already have %d records; %s", folder.name, planned - len(new),
                 f"scoring {len(new)} new ({why_new(new, metrics, train_len)})" if new else "nothing new to score")


def asked_for(spec, metrics: dict) -> list:
    """The records a run's evaluation settings call for (``spec``: the run's RunSpec with them), on
    the corpus the run recorded: the plan posbench-train's skip decision reads too."""
    return evaluation_plan(spec.encoding.build(spec.shape), spec.resolved_eval(metrics.get("corpus") or {}))


def run(request: EvalRequest) -> None:
    """posbench-eval's job: score what the run does not have yet, merge the records into its files,
    and print the records asked for as one table on stdout (the scores are not logged as well). It
    holds the run's lock (waiting for another process working on the run), so that two evaluations
    of a run at once each add their records: the second reads the first's before it writes."""
    request.runtime.apply()
    folder = request.folder()
    with folder.lock(wait=True):
        metrics, _ = evaluate_run(folder, request.eval, request.runtime, only_missing=True,
                                  command=launch_command("posbench-eval"), show=False, from_run=request.from_run)
    keys = {p.key for p in asked_for(request.run_spec(), metrics)}
    shown = {kind: [r for r in metrics.get(field) or [] if record_key(kind, r) in keys] for kind, field in RECORDS.items()}
    print(records_table(shown["perplexity"], shown["task"]), end="")
