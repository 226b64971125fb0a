"""``posbench-eval-hf``'s job: a checkpoint scored into a run directory of posbench's format
(docs/run-directory.md), which ``posbench-report`` reads beside posbench's own runs.

The corpus is posbench's (``data``: the default stdlib corpus and split, posbench/data/) under the
checkpoint's own tokenizer (its fast tokenizer's tokenizer.json, as ``data.tokenizer=file``): the scored
text is the same bytes whatever the tokenizer (posbench/data/tokens.py), so bits per byte compare across
tokenizers where perplexity per token does not.

The run directory ``<out>/hf-<name>_L<context>_s0_<hash>/`` (the hash: the checkpoint's config and weight
files, the dtype, the BOS policy and the corpus) holds config.yaml (what was scored, how), metrics.json
(status completed, one record per row x protocol x length, the token sets), per_position.npz and
token_losses.npz (each scored token's loss, for every row), and the tokenizer.json scored with. Scoring
again into the same folder replaces the records of equal key and keeps the others. Nothing is written
before every check has passed. The run's lock (posbench/store/lock.py, as posbench's own runs take it) is
held while it is scored and written: a second posbench-eval-hf on a folder another process is writing is
refused in one line naming that process. Each file is replaced atomically and metrics.json last, so a
reader sees the run once it is whole; a folder this command created and could not finish is removed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import platform
import re
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from posbench import __version__
from posbench.core.device import describe
from posbench.core.errors import PosbenchError
from posbench.core.files import atomic_write_text, make_dirs
from posbench.data.corpus import DataConfig, corpus_stats
from posbench.data.load import load_corpus
from posbench.data.tokenizer import TokenizerConfig
from posbench.evaluation.plan import merge
from posbench.evaluation.resolved import resolve_eval
from posbench.evaluation.scored_text import with_scored_text
from posbench.evaluation.perplexity import token_sets_of
from posbench.evaluation.settings import EvalConfig
from posbench.hf import checkpoint as checkpoints
from posbench.hf.extenders import extenders
from posbench.hf.scalings import check_scalable, scalings
from posbench.hf.score import checkpoint_rows, evaluate_checkpoint
from posbench.jobs.records_table import records_table
from posbench.store.rundir import RunDir, new_metrics

log = logging.getLogger("posbench")

TOKENIZER_FILE = "tokenizer.json"


@dataclass(frozen=True)
class CheckpointRequest:
    """posbench-eval-hf: score the checkpoint in ``checkpoint`` into a run directory below ``out``."""

    checkpoint: str
    out: str = "runs"
    context_length: int | None = None  # the checkpoint's train_len; None: its config's max_position_embeddings
    dtype: str = "float32"
    device: str = "auto"
    bos: str = "auto"  # auto | yes | no: each window starts with BOS (auto: when the tokenizer adds one)
    trust_remote_code: bool = False
    rope_scaling: tuple[str, ...] = ()  # posbench's names (posbench/hf/scalings.py)
    rope_factor: float | None = None  # static scalings' s; None: the longest multiple
    window: bool = False  # add the far-context controls <family>+swaL (a sliding window of context_length keys)
    extenders: tuple[str, ...] = ()  # posbench's training-free extenders: rerope, selfextend, streaming (posbench/hf/extenders.py)
    eval: EvalConfig = field(default_factory=EvalConfig)
    data: DataConfig = field(default_factory=lambda: DataConfig(cache_dir=os.environ.get("POSBENCH_CACHE", "~/.cache/posbench")))
    progress: bool = True


def checkpoint_slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "-", name).strip("-") or "checkpoint"


def tokenizer_file(ckpt, cache_dir: str) -> Path:
    """The checkpoint's fast tokenizer as a tokenizer.json in posbench's cache (named after the
    checkpoint: ``data.tokenizer``'s label ``file-<name>`` names its token sets in the report)."""
    text = ckpt.tokenizer.backend_tokenizer.to_str()
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = Path(cache_dir).expanduser() / "hf-tokenizers" / digest / f"{checkpoint_slug(ckpt.name)}.json"
    if not path.is_file():
        make_dirs(path.parent)
        atomic_write_text(path, text)
    return path


def run_id(ckpt, request: CheckpointRequest, corpus_hash: str) -> str:
    what = json.dumps([ckpt.identity, ckpt.dtype, ckpt.bos_id, corpus_hash], sort_keys=True)
    return f"hf-{checkpoint_slug(ckpt.name)}_L{ckpt.context_length}_s0_{hashlib.sha1(what.encode()).hexdigest()[:10]}"


def run_config(ckpt, request: CheckpointRequest, data: DataConfig) -> dict:
    """config.yaml of a checkpoint's run: what was scored and how."""
    return {
        "checkpoint": {"path": str(ckpt.path.resolve()), "name": ckpt.name, "model_type": ckpt.model_type,
                       "identity": ckpt.identity, "dtype": ckpt.dtype, "bos": request.bos, "bos_token_id": ckpt.bos_id,
                       "trust_remote_code": request.trust_remote_code, "learned_positions": ckpt.learned_positions},
        "encoding": {"name": ckpt.model_type}, "model": {"name": checkpoint_slug(ckpt.name)},
        "train_len": ckpt.context_length, "seed": 0,
        # not trained by posbench: no steps; lr 0 because the report reads every run's train.lr as a number
        "train": {"steps": 0, "lr": 0.0},
        "data": dataclasses.asdict(data), "eval": dataclasses.asdict(request.eval),
        "rope_scaling": list(request.rope_scaling), "rope_factor": request.rope_factor, "window": request.window,
        "extenders": list(request.extenders),
    }


def run(request: CheckpointRequest) -> Path:
    """Score the checkpoint and write (or add to) its run directory; returns it. Prints the records as
    posbench-eval does."""
    found = checkpoints.inspect(request.checkpoint, dtype=request.dtype, device=request.device, bos=request.bos,
                                context_length=request.context_length, trust_remote_code=request.trust_remote_code)
    request.eval.check(found.context_length)
    asked = scalings(list(request.rope_scaling), request.rope_factor, max(request.eval.multiples), found.rotary,
                     found.model_type)
    check_scalable(found.config, asked)
    extending = extenders(list(request.extenders), found.config, found.model_type)
    rows = checkpoint_rows(found.model_type, asked, found.context_length if request.window else None, extending)
    ckpt = checkpoints.load(found)
    data = replace(request.data, tokenizer=TokenizerConfig(kind="file", path=str(tokenizer_file(ckpt, request.data.cache_dir))))
    data.check()
    corpus = load_corpus(data)
    ev = with_scored_text(resolve_eval(request.eval, ckpt.context_length, corpus.fingerprint, separator=data.doc_separator),
                          corpus)
    out = Path(request.out).expanduser()
    rid = run_id(ckpt, request, corpus.fingerprint["hash"])
    run_dir = out / rid
    log.info("%s: %s (%s, %s, context %d, BOS %s), %d rows, lengths %s", rid, ckpt.path, ckpt.model_type, ckpt.dtype,
             ckpt.context_length, "none" if ckpt.bos_id is None else ckpt.bos_id, len(rows), ev.lengths)
    created, folder = not run_dir.exists(), RunDir(run_dir)
    with folder.lock() as mine:  # creates the folder: removed below if this run fails before metrics.json
        if not mine:
            raise PosbenchError(f"{str(run_dir)!r} is being written by another process (pid {folder.lock_holder()}); "
                                "wait for it to finish, or give another --out")
        try:
            records = _score_into(run_dir, rid, ckpt, request, data, corpus, ev, rows)
        except BaseException:
            if created and not folder.has_metrics():
                _remove_unfinished(run_dir)
            raise
    print(records_table(records, []), end="")
    return run_dir


def _score_into(run_dir: Path, rid: str, ckpt, request: CheckpointRequest, data: DataConfig, corpus, ev, rows) -> list[dict]:
    """Score the rows and write the run directory (its lock held); returns the new records."""
    records, per_pos, token_losses = evaluate_checkpoint(ckpt, ev, rows, request.progress)
    old = RunDir(run_dir).load_metrics()
    metrics = old or new_metrics(
        rid, encoding=ckpt.model_type, model=f"{checkpoint_slug(ckpt.name)}/{data.tokenizer.label}", train_len=ckpt.context_length,
        seed=0, params=sum(p.numel() for p in ckpt.model.parameters()), train_steps=0, train_tokens=0, train_wall_s=0.0,
        final_train_loss=None, final_val_loss=None, device=describe(ckpt.device), torch_version=torch.__version__,
        posbench_version=__version__, python=platform.python_version(), corpus=corpus_stats(corpus), task="lm",
        commands=[], during_training=[], checkpoint=str(ckpt.path.resolve()))
    metrics["status"] = "completed"
    metrics["evaluations"] = merge("perplexity", metrics.get("evaluations") or [], records)
    metrics["token_sets"] = {**metrics.get("token_sets", {}), **token_sets_of(ev)}
    _fill(run_dir, run_config(ckpt, request, data), metrics, per_pos, token_losses, Path(data.tokenizer.path))
    return records


def _remove_unfinished(run_dir: Path) -> None:
    """A run folder this command created and left without metrics.json (a failure, an interrupt): removed
    with what it holds, all of it this command's (the lock, files written before metrics.json)."""
    shutil.rmtree(run_dir, ignore_errors=True)


def _fill(path: Path, config, metrics, per_pos, token_losses, tokenizer: Path) -> None:
    """The run's files, each replaced atomically, metrics.json last: a reader sees a run only once it is whole."""
    folder = RunDir(path)
    folder.write_config(config)
    shutil.copyfile(tokenizer, path / TOKENIZER_FILE)
    if per_pos:
        folder.write_per_position(per_pos)
    if token_losses:
        folder.write_token_losses(token_losses)
    folder.write_metrics(metrics)


def check_out(out: str) -> None:
    if Path(out).expanduser().exists() and not Path(out).expanduser().is_dir():
        raise PosbenchError(f"--out {out!r} is a file; give a folder for the run directories")
