"""``posbench-eval-hf CHECKPOINT [eval.KEY=VALUE ...] [data.KEY=VALUE ...] [--flags]``: a local Hugging Face
causal LM scored with posbench's protocols into a run directory that ``posbench-report`` reads.

    posbench-eval-hf ~/models/tiny-llama --out runs/hf --dtype bfloat16 --device cuda
    posbench-eval-hf ~/models/gpt2 --out runs/hf eval.multiples=[1,2,4] --rope-scaling yarn   # refused: GPT-2 has no RoPE
    posbench-eval-hf ~/models/tiny-llama --out runs/hf --extender rerope,selfextend,streaming --window
    posbench-eval-hf ~/models/qwen --out runs/hf --context-length 2048 eval.scored_tokens=65536 data=local data.path=~/mytext

``eval.KEY=VALUE`` sets posbench's evaluation settings (EvalConfig: multiples, protocols, stride,
scored_tokens, segment, first_scored, batch_tokens), ``data.KEY=VALUE`` the corpus (DataConfig; ``data=local``
with ``data.path`` scores your own text). Reference: docs/checkpoints.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import yaml

from posbench.core.errors import PosbenchError, user_errors
from posbench.data.corpus import DataConfig
from posbench.evaluation.settings import EvalConfig


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        print(f"posbench: error: {message} (posbench-eval-hf --help lists the flags)", file=sys.stderr)
        sys.exit(2)


def _value(text: str):
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


# posbench's evaluation-time rows and diagnostics are its own models' (posbench/evaluation/variants/): a checkpoint's
# rows are asked for with the flags
NOT_FOR_CHECKPOINTS = {"rope_scaling": "--rope-scaling", "rope_factor": "--rope-factor", "variants": "--window or --extender",
                       "temperature": "--rope-scaling or --window", "bca": "--rope-scaling or --window",
                       "during_training": "nothing (a checkpoint is not trained here)",
                       "attention_stats": "nothing (not recorded for checkpoints)",
                       "attention_examples": "nothing (not recorded for checkpoints)"}


def with_overrides(obj, prefix: str, overrides: dict):
    """The dataclass ``obj`` with ``prefix.KEY=VALUE`` overrides applied; an unknown key is one line."""
    names = {f.name for f in dataclasses.fields(obj)}
    changes = {}
    for key, value in overrides.items():
        if prefix == "eval" and key in NOT_FOR_CHECKPOINTS:
            raise PosbenchError(f"eval.{key} is a setting of posbench's own models; for a checkpoint use "
                                f"{NOT_FOR_CHECKPOINTS[key]}")
        if prefix == "data" and key == "tokenizer":
            raise PosbenchError("data.tokenizer: a checkpoint is scored with its own tokenizer (the one in its folder)")
        if key not in names:
            raise PosbenchError(f"unknown setting {prefix}.{key}; valid: {', '.join(sorted(names))}")
        changes[key] = tuple(value) if isinstance(value, list) else value
    return dataclasses.replace(obj, **changes)


def parse(argv: list[str]):
    from posbench.hf.checkpoint import BOS_POLICIES, DTYPES  # torch loads inside user_errors (console.py's reason)
    from posbench.hf.row import CheckpointRequest  # likewise

    parser = _Parser(prog="posbench-eval-hf", description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="local folder of a transformers causal LM with its tokenizer")
    parser.add_argument("settings", nargs="*", metavar="eval.KEY=VALUE|data.KEY=VALUE|data=NAME")
    parser.add_argument("--out", default="runs", help="folder for the run directory (default: runs)")
    parser.add_argument("--context-length", type=int, default=None,
                        help="the checkpoint's train_len (default: its config's max_position_embeddings)")
    parser.add_argument("--dtype", default="float32", help=f"one of {', '.join(DTYPES)} (default float32)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N (default auto)")
    parser.add_argument("--bos", default="auto", help=f"{'|'.join(BOS_POLICIES)}: each window starts with BOS "
                        "(auto: when the tokenizer adds one to a text)")
    parser.add_argument("--rope-scaling", default="", help="comma-separated: linear, dynamic_ntk, yarn, llama3")
    parser.add_argument("--rope-factor", type=float, default=None, help="static scalings' factor (default: longest multiple)")
    parser.add_argument("--window", action="store_true", help="add the far-context controls <family>+swaL (every layer "
                        "within a sliding window of context-length keys), and each scaling row under the window "
                        "(<family>+yarn@16x+swaL): the report's far-context gain and key tokens")
    parser.add_argument("--extender", default="", help="comma-separated training-free extenders of RoPE checkpoints: "
                        "rerope, selfextend, streaming (posbench's variants at their defaults)")
    parser.add_argument("--trust-remote-code", action="store_true", help="run the checkpoint's own modeling code")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_intermixed_args(argv)
    evals, datas, corpus = {}, {}, None
    for s in args.settings:
        key, eq, value = s.partition("=")
        if not eq:
            raise PosbenchError(f"{s!r} is not KEY=VALUE; give eval.KEY=VALUE, data.KEY=VALUE or data=NAME")
        if key == "data":
            corpus = value
        elif key.startswith("eval."):
            evals[key[5:]] = _value(value)
        elif key.startswith("data."):
            datas[key[5:]] = _value(value)
        else:
            raise PosbenchError(f"unknown setting {key!r}; give eval.KEY=VALUE, data.KEY=VALUE or data=NAME")
    data = CheckpointRequest(args.checkpoint).data
    if corpus is not None:
        data = _corpus(corpus, data)
    return CheckpointRequest(
        checkpoint=args.checkpoint, out=args.out, context_length=args.context_length, dtype=args.dtype,
        device=args.device, bos=args.bos, trust_remote_code=args.trust_remote_code,
        rope_scaling=tuple(n for n in args.rope_scaling.split(",") if n), rope_factor=args.rope_factor, window=args.window,
        extenders=tuple(n for n in args.extender.split(",") if n),
        eval=with_overrides(EvalConfig(), "eval", evals), data=with_overrides(data, "data", datas),
        progress=not args.no_progress)


def _corpus(name: str, data: DataConfig) -> DataConfig:
    """``data=NAME``: the settings of conf/data/NAME.yaml (posbench's corpora), over the defaults."""
    from pathlib import Path

    from posbench.cli.config import CONF_DIR  # Hydra's config store, only for data=NAME

    path = Path(CONF_DIR) / "data" / f"{name}.yaml"
    if not path.is_file():
        names = sorted(p.stem for p in (Path(CONF_DIR) / "data").glob("*.yaml"))
        raise PosbenchError(f"unknown corpus data={name}; valid: {', '.join(names)}")
    values = {k: v for k, v in (yaml.safe_load(path.read_text()) or {}).items()
              if k in {f.name for f in dataclasses.fields(DataConfig)} and k != "cache_dir" and not str(v).startswith("${")}
    return dataclasses.replace(data, **values)


def _log_to_stderr() -> None:
    """posbench's log lines on stderr (stdout is for the records table), as the Hydra commands' logging does."""
    import logging

    logger = logging.getLogger("posbench")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("[%(asctime)s][%(levelname)s] %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


def main(argv: list[str] | None = None) -> None:
    if "--version" in (sys.argv[1:] if argv is None else argv):  # like the other commands': before CHECKPOINT is asked for
        from posbench.core.version import version_text  # torch loads inside console.py's handlers

        print(version_text())
        sys.exit(0)
    with user_errors():
        request = parse(sys.argv[1:] if argv is None else argv)
        from posbench.hf.row import check_out, run  # torch and transformers load inside user_errors

        _log_to_stderr()
        check_out(request.out)
        run(request)


if __name__ == "__main__":
    main()
