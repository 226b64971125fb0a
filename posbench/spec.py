"""The run spec: everything one run is, typed and frozen, made once from its resolved config.

``RunSpec.from_config(raw)`` is the one way a config becomes settings, for a run about to train
(``raw``: the composed config, resolved, as ``config.yaml`` will hold it) and for a run trained
long ago (``raw``: its saved ``config.yaml``, read through ``migrate``). Below it, every part gets
only its own settings: ``spec.train`` for the trainer, ``spec.data`` for the corpus, ``spec.eval``
for the evaluator, ``spec.encoding.build(shape)`` for the encoding; ``spec.build_model()`` is the one
place a run's model is built, and ``spec.folder`` its run directory (posbench/store/rundir.py).

The run's identity (its id, posbench/store/identity.py) is computed from ``raw`` as saved, never from a
migrated copy, so that a run keeps the id it was made with.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping, Optional

import torch

from posbench.core.device import Runtime
from posbench.core.errors import PosbenchError
from posbench.core.files import check_writable_dir
from posbench.core.params import make_typed
from posbench.core.registry import plugin_code
from posbench.core.settings import from_mapping, to_dict
from posbench.core.suggest import did_you_mean
from posbench.core.tracking import LoggerConfig
from posbench.data.corpus import DataConfig
from posbench.data.tokenizer import vocab_size as tokenizer_vocab
from posbench.encodings import ModelShape, PositionalEncoding, encoding_class
from posbench.encodings import available as encoding_names
from posbench.evaluation.protocols import PROTOCOLS
from posbench.evaluation.resolved import ResolvedEval, resolve_eval
from posbench.evaluation.scored_text import check_corpus_fits
from posbench.evaluation.settings import EvalConfig
from posbench.evaluation.variants import settings_without_rows
from posbench.evaluation.windows import eval_lengths
from posbench.mixers import ATTENTION
from posbench.model.transformer import LanguageModel, ModelConfig
from posbench.store.identity import run_id
from posbench.store.rundir import RunDir
from posbench.tasks import LM, Task, task_class
from posbench.tasks import available as task_names
from posbench.training import extend as extension
from posbench.training.extend import ExtendConfig
from posbench.training.trainer import TrainConfig

# keys of the encoding and task sections that the harness reads; the rest are the plug-in's Params
ENCODING_KEYS = ("name", "lr_mult", "_target_")
TASK_KEYS = ("name", "_target_")


@dataclass(frozen=True)
class EncodingSpec:
    """``encoding.name`` (a built-in, an installed plug-in or a ``module:attr``), its checked
    Params, the learning-rate multiplier of its own parameters and, for a plug-in named in the
    config, its ``_target_``."""

    name: str
    params: Any
    lr_mult: float = 1.0
    target: Optional[str] = None

    @classmethod
    def from_mapping(cls, section: Mapping[str, Any]) -> "EncodingSpec":
        if not isinstance(section, Mapping) or not section.get("name"):
            raise PosbenchError(f"encoding config has no 'name'; valid names: {', '.join(encoding_names())}")
        name, target = str(section["name"]), section.get("_target_")
        try:
            lr_mult = float(section.get("lr_mult", 1.0))
        except (TypeError, ValueError):
            raise PosbenchError(f"encoding.lr_mult must be a number, got {section.get('lr_mult')!r}") from None
        if not lr_mult > 0:
            raise PosbenchError(f"encoding.lr_mult must be positive, got {section.get('lr_mult')}")
        params = {k: v for k, v in section.items() if k not in ENCODING_KEYS}
        return cls(name, make_typed("encoding", name, encoding_class(name, target).Params, params), lr_mult, target)

    @property
    def cls(self) -> type[PositionalEncoding]:
        return encoding_class(self.name, self.target)

    def build(self, shape: ModelShape) -> PositionalEncoding:
        """The encoding at ``shape``; a plug-in that raises here is one line naming it (RunSpec.check
        builds it first, so that happens before anything is written)."""
        cls = self.cls
        with plugin_code("encoding", self.name, cls.__module__, "being built"):
            return cls(shape, self.params)


@dataclass(frozen=True)
class TaskSpec:
    """``task.name``: ``lm`` (language modelling, scored by perplexity) or a synthetic task."""

    name: str = LM
    params: Any = None  # None: the task's defaults (language modelling has none)
    target: Optional[str] = None

    @classmethod
    def from_mapping(cls, section: Mapping[str, Any] | None) -> "TaskSpec":
        if section is None:  # runs made before tasks existed
            return cls()
        if not isinstance(section, Mapping) or not section.get("name"):
            raise PosbenchError(f"task config has no 'name'; valid names: {', '.join(task_names())}")
        name, target = str(section["name"]), section.get("_target_")
        params = {k: v for k, v in section.items() if k not in TASK_KEYS}
        return cls(name, make_typed("task", name, task_class(name, target).Params, params), target)

    @property
    def is_lm(self) -> bool:
        return self.name == LM

    def build(self) -> Task:
        """The task object (language modelling included); a plug-in that raises here is one line."""
        cls = task_class(self.name, self.target)
        with plugin_code("task", self.name, cls.__module__, "being built"):
            return cls(self.params)


@dataclass(frozen=True)
class RunSpec:
    encoding: EncodingSpec
    task: TaskSpec
    model: ModelConfig
    data: DataConfig
    train: TrainConfig
    eval: EvalConfig
    logger: LoggerConfig
    extend: ExtendConfig
    runtime: Runtime
    train_len: int = 64
    seed: int = 0
    runs_dir: str = "runs"
    evaluate_after_training: bool = True  # a completed run re-run with new eval settings evaluates what is missing
    retry_diverged: bool = False  # a diverged run is final; true trains it again from step 0
    raw: dict = field(default_factory=dict, compare=False, repr=False)  # the resolved config, as config.yaml holds it

    # -- conversion -------------------------------------------------------------------------------
    @classmethod
    def from_config(cls, raw: Mapping[str, Any]) -> "RunSpec":
        """The spec of a resolved config (plain mapping; ``hydra`` ignored). Raises PosbenchError
        with one line for an unknown key or a bad plug-in parameter."""
        raw = {k: v for k, v in raw.items() if k != "hydra"}
        m = migrate(raw)
        top = {f.name for f in fields(cls)} - {"encoding", "task", "runtime", "raw"} | set(RUNTIME_KEYS)
        if bad := sorted(set(m) - top - {"encoding", "task"}):
            valid = sorted(top | {"encoding", "task"})
            raise PosbenchError(f"unknown config key {bad[0]!r}{did_you_mean(bad[0], valid)}; valid keys at the top "
                                f"level: {', '.join(valid)}")
        runtime = from_mapping(Runtime, {k: m[k] for k in RUNTIME_KEYS if k in m})
        model, data = from_mapping(ModelConfig, m.get("model"), "model."), from_mapping(DataConfig, m.get("data"), "data.")
        if model.vocab_size is None:  # the model's vocabulary is the tokenizer's (a saved run's config has it written)
            model = replace(model, vocab_size=tokenizer_vocab(data.tokenizer))
        return cls(
            encoding=EncodingSpec.from_mapping(m["encoding"]), task=TaskSpec.from_mapping(m.get("task")),
            model=model, data=data,
            train=from_mapping(TrainConfig, m.get("train"), "train."), eval=from_mapping(EvalConfig, m.get("eval"), "eval."),
            logger=from_mapping(LoggerConfig, m.get("logger"), "logger."),
            extend=from_mapping(ExtendConfig, m.get("extend"), "extend."), runtime=runtime,
            **{k: m[k] for k in RUN_KEYS if k in m},
            raw=copy.deepcopy(raw),
        )

    def with_eval(self, eval_cfg: EvalConfig) -> "RunSpec":
        """The same run, scored with other evaluation settings (posbench-eval)."""
        from dataclasses import replace

        return replace(self, eval=eval_cfg)

    def parent(self) -> "RunSpec":
        """The run an extension run continues: this config with ``extend`` at its defaults."""
        raw = copy.deepcopy(self.raw)
        raw["extend"] = to_dict(ExtendConfig())
        return RunSpec.from_config(raw)

    def resolved(self) -> dict:
        """What the run directory's config.yaml holds: ``raw`` with the encoding and task sections
        complete (a plug-in's defaults written out, so that the id changes if they do)."""
        out = copy.deepcopy(self.raw)
        # the vocabulary the model was built with (null in the yaml: the tokenizer's, 256 for bytes,
        # which is what byte runs always saved, so their ids do not change)
        out["model"] = {**out.get("model", {}), "vocab_size": self.model.vocab_size}
        # only the Params' defaults are added: what a migration moved (e.g. lr_mult) stays where it was saved
        out["encoding"] = {**out["encoding"], **{k: v for k, v in to_dict(self.encoding.params).items()
                                                 if k not in out["encoding"]}}
        if not self.task.is_lm:
            out["task"] = {**out["task"], **{k: v for k, v in to_dict(self.task.params).items() if k not in out["task"]}}
        return out

    # -- checks -----------------------------------------------------------------------------------
    def check(self) -> None:
        """Every check of one run that needs no data; PosbenchError with one line. Each settings
        class checks its own values; here, what involves two of them."""
        if self.train_len < 1:
            raise PosbenchError(f"train_len must be a positive integer, got {self.train_len}")
        if self.seed < 0:
            raise PosbenchError(f"seed must be a non-negative integer, got {self.seed}")
        self.model.check()
        self.data.check()
        # the embedding and output rows are the tokenizer's: a larger table has rows no token ever
        # reads and a softmax spread over outputs the data never holds (and another run id)
        if self.model.vocab_size != (want := tokenizer_vocab(self.data.tokenizer)):
            raise PosbenchError(f"model.vocab_size={self.model.vocab_size} contradicts the tokenizer: "
                                f"data.tokenizer={self.data.tokenizer.label} has {want} tokens; leave model.vocab_size "
                                f"unset (null: the tokenizer's) or set it to {want}")
        # building the encoding is cheap and runs its own constraints (e.g. RoPE's even head dimension)
        encoding = self.encoding.build(self.shape)
        if not self.model.attention_layers and not encoding.uses_input and self.encoding.name != "nope":
            # a model of recurrent mixers only: the encoding would reach no layer, and the run would be
            # reported under an encoding it does not have
            raise PosbenchError(f"model.mixers={list(self.model.mixers)} has no attention layer, so encoding="
                                f"{self.encoding.name} reaches no layer (recurrent mixers take no positional encoding); "
                                "use encoding=nope, or put attention in model.mixers")
        self.check_evaluation()
        self.logger.check()
        self.runtime.check()
        self.train.check(self.train_len)
        if self.train.random_positions_kind == "float" and (
                encoding.integer_positions or any(encoding.at(i).integer_positions for i in self.model.attention_layers)):
            raise PosbenchError(f"train.random_positions_kind=float gives real-valued positions, and encoding="
                                f"{self.encoding.name} indexes a table by position or distance; use "
                                "train.random_positions_kind=integer, or an encoding that computes from positions (rope, alibi, sinusoidal, ...)")
        if self.train.budgets and self.is_extension:
            raise PosbenchError(f"train.budgets={list(self.train.budgets)} trains from scratch: set train.budgets=[] "
                                f"for an extension run (extend.length={self.extend.length})")
        self.extend.check(self.train_len, encoding, self.train, self.model)  # the throwaway built above: the method is tried on it
        check_writable_dir(self.runs_dir, "runs_dir")

    def check_evaluation(self) -> None:
        """The evaluation settings for this run: posbench-train checks them before training,
        posbench-eval before scoring a finished run (the same checks, so the same refusals)."""
        self.eval.check(self.train_len)
        if self.is_extension:
            if self.eval.rope_scaling:
                raise PosbenchError("an extension run is evaluated with its own method: set eval.rope_scaling=[] "
                                    f"(got {list(self.eval.rope_scaling)})")
            if self.eval.during_training:
                raise PosbenchError("eval.during_training is for training from scratch: set eval.during_training=[] "
                                    "for an extension run")
        if self.task.is_lm:
            bytes_only = [p for p in self.eval.protocols if PROTOCOLS.get(p).bytes_only]
            if not self.data.tokenizer.is_bytes and bytes_only:
                raise PosbenchError(f"eval.protocols: {bytes_only[0]} {PROTOCOLS.get(bytes_only[0]).bytes_only}; with "
                                    f"data.tokenizer={self.data.tokenizer.label} use nonoverlapping, sliding or press_sliding")
            return
        task = self.task.build()
        if not self.data.tokenizer.is_bytes:
            # the examples are built from byte tokens (digits, markers, keys are bytes: posbench/tasks/)
            raise PosbenchError(f"task {task.name} builds its examples from byte tokens and needs data.tokenizer=byte "
                                f"(got {self.data.tokenizer.label}); use task=lm with a subword tokenizer")
        if self.train_len < task.min_length():
            raise PosbenchError(f"task {task.name} needs windows of at least {task.min_length()} tokens, got "
                                f"train_len={self.train_len}")
        task.check_window(self.train_len)
        if self.eval.during_training:
            raise PosbenchError("eval.during_training scores perplexity: set eval.during_training=[] for a task run "
                                f"(task={task.name})")
        if self.is_extension:
            raise PosbenchError(f"extend continues language models: set extend.length=null for a task run (task={task.name})")

    def check_corpus(self, corpus, evaluated: bool | None = None) -> None:
        """The corpus holds the windows this run trains on and, when it is evaluated (``evaluated``;
        None: as ``evaluate_after_training`` says), every window its evaluation asks for (a task's
        filler comes from the validation split)."""
        evaluated = self.evaluate_after_training if evaluated is None else evaluated
        check_corpus_fits(corpus, self.train_len, self.eval if evaluated and self.task.is_lm else None,
                          self.data.doc_separator)
        if not self.task.is_lm and evaluated:
            longest = max(eval_lengths(self.train_len, self.eval.multiples))
            if len(corpus.val) < longest + 2:
                raise PosbenchError(f"task {self.task.name} at {longest} tokens needs filler from a validation split of "
                                    f"more than {longest + 1} tokens; it has {len(corpus.val)}: lower eval.multiples")

    # -- what the parts need to know ----------------------------------------------------------------
    @property
    def max_position(self) -> int:
        """Largest position index + 1 seen in training (random positions reach beyond train_len)."""
        return max(self.train_len, self.train.random_positions or 0)

    @property
    def shape(self) -> ModelShape:
        m = self.model
        return ModelShape(m.d_model, m.n_heads, m.n_layers, self.train_len, self.max_position,
                          self.train.random_positions_kind == "float" and self.train.random_positions is not None)

    @property
    def is_extension(self) -> bool:
        return self.extend.length is not None

    @property
    def row(self) -> str:
        """The row's name in progress bars and log lines: the encoding, or for a model with recurrent
        layers its model name with its attention layers' encoding (``small_hybrid/p_rope``; a pure
        recurrent model ``small_gdn``), as the report names the hybrids' rows by the model."""
        if all(m == ATTENTION for m in self.model.mixers):
            return self.encoding.name
        return self.model.name + (f"/{self.encoding.name}" if ATTENTION in self.model.mixers else "")

    @property
    def run_id(self) -> str:
        return run_id(self.resolved())

    @property
    def run_dir(self) -> Path:
        return Path(self.runs_dir).expanduser() / self.run_id

    @property
    def folder(self) -> RunDir:
        """The run's folder, with the reads and writes of its files (posbench/store/rundir.py)."""
        return RunDir(self.run_dir)

    def build_model(self, weights: dict | None = None) -> LanguageModel:
        """The run's model, on the CPU: built with torch seeded by the run's seed (so every process of a
        data-parallel run, and a WSD trunk, starts from the weights the plain run starts from), then
        given ``weights`` (a state dict: an extension run's parent, a checkpoint's own) and, for an
        extension run, its method (posbench/training/extend.py; nothing for any other run)."""
        torch.manual_seed(self.seed)
        model = LanguageModel(self.model, self.encoding.build(self.shape))
        if weights is not None:
            model.load_state_dict(weights)
        extension.apply(model, self.extend, self.train_len)
        return model

    def resolved_eval(self, fingerprint: dict | None, kernel: str = "auto") -> ResolvedEval:
        """This run's evaluation made concrete once (posbench/evaluation/resolved.py): its ``eval``
        settings at its train_len, document separator, task and extension tag, on a corpus of
        ``fingerprint`` (a Corpus's, or the corpus stats the run recorded), with the attention
        ``kernel``; posbench.evaluation.scored_text.with_scored_text adds the text it scores."""
        return resolve_eval(self.eval, self.train_len, fingerprint, separator=self.data.doc_separator,
                            tag=self.extend.tag(self.train_len), kernel=kernel, task=self.task.build())


RUNTIME_KEYS = tuple(f.name for f in fields(Runtime))  # top-level keys of the config, grouped as spec.runtime
RUN_KEYS = ("train_len", "seed", "runs_dir", "evaluate_after_training", "retry_diverged")  # the spec's own top-level keys


# keys early runs saved that no longer exist: their eval section is never used to score (posbench-eval
# scores with the settings it is given), so the retired evaluation keys are dropped
RETIRED_EVAL_KEYS = ("protocol", "windows_at_max")


def migrate(raw: Mapping[str, Any]) -> dict:
    """A saved config as today's code reads it. Add a step here, never a special case elsewhere,
    when a key changes:

    * configs from before ``task`` and ``extend`` lack them (their defaults apply);
    * ``eval.protocol`` and ``eval.windows_at_max`` (before ``eval.protocols`` and the token sets)
      are dropped;
    * ``train.position_lr_mult`` (before ``encoding.lr_mult``) becomes ``encoding.lr_mult``.

    The run id is computed from the config as saved, never from this (posbench/store/identity.py)."""
    m = copy.deepcopy(dict(raw))
    m.setdefault("task", {"name": LM})
    if isinstance(m.get("eval"), dict):
        for key in RETIRED_EVAL_KEYS:
            m["eval"].pop(key, None)
    if isinstance(m.get("train"), dict) and "position_lr_mult" in m["train"]:
        mult = m["train"].pop("position_lr_mult")
        if isinstance(m.get("encoding"), dict):
            m["encoding"].setdefault("lr_mult", mult)
    return m


def check_variant_rows(specs: list[RunSpec]) -> None:
    """Evaluation settings that would add no row: refused when no job of the command gets a row
    from one (a single run: ``eval.rope_scaling=[yarn]`` on ``encoding=alibi``); one note naming the
    encodings without such rows when some jobs get them (a preset that sweeps the RoPE scalings
    across every encoding). The variants decide which encodings they apply to (Variant.applies_to)."""
    import logging

    asked: dict[str, dict[str, bool]] = {}  # setting -> encoding -> gets a row
    first: dict[str, RunSpec] = {}  # setting -> the first job asking for it (for the message)
    for spec in specs:
        keys = [k for k in ("rope_scaling", "temperature", "variants") if getattr(spec.eval, k)]
        lacking = settings_without_rows(spec.encoding.build(spec.shape), spec.eval) if keys else []
        for key in keys:
            rows, _ = asked.setdefault(key, {}), first.setdefault(key, spec)
            rows[spec.encoding.name] = rows.get(spec.encoding.name, False) or key not in lacking
    for key, rows in asked.items():
        without = [e for e, has in rows.items() if not has]
        if not without:
            continue
        value = f"eval.{key}=[{','.join(str(v) for v in getattr(first[key].eval, key))}]"
        if len(without) == len(rows):
            applies = _applies_to(key, first[key])
            raise PosbenchError(
                f"{value} adds no row for encoding {', '.join(without)}"
                f"{f' (it applies to {applies})' if applies else ''}; set eval.{key}=[] or use an encoding it applies to")
        logging.getLogger("posbench").warning(
            "note: %s adds rows for %s only; %s get no such rows", value,
            ", ".join(e for e, has in rows.items() if has), ", ".join(without))


def _applies_to(key: str, spec: RunSpec) -> str:
    """The built-in and installed encodings that get rows from setting ``key`` (for a message)."""
    names = []
    for name in encoding_names():
        try:
            cls = encoding_class(name)
            if key not in settings_without_rows(cls(spec.shape, cls.Params()), spec.eval):
                names.append(name)
        except Exception:  # noqa: BLE001 - an encoding that cannot be built at this shape: not named
            continue
    return ", ".join(names)
