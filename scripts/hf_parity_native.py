"""posbench's own evaluation of a trained run, for the parity study of the checkpoint path
(results/hf_parity/): ``posbench-eval`` run in this process with two measurement-only changes:

    python scripts/hf_parity_native.py RUN_DIR OUT_DIR [--float64] [posbench-eval overrides ...]

- OUT_DIR gets a fresh copy of RUN_DIR (checkpoint, config, corpus, history; metrics.json with no
  evaluation records), so every row asked for is scored again in this process (the run itself is
  never written to, and the timing covers the plain row too);
- every row's per-token losses are kept (``token_losses.npz``), not only those of rows beside their
  window control ``+swaL`` (posbench.evaluation.perplexity.far_context_pairs): the parity script
  compares the RoPE scalings' rows token by token;
- ``--float64``: the model's weights and activations in float64 (posbench-eval has no such setting: its
  ``precision`` is auto | fp32). Two casts of posbench's code stay: the rotation tables are computed in
  float64 and cast to float32 (posbench/encodings/rope.py ``rotation_tables``), and the logits are cast
  to float32 before the cross-entropy (posbench/evaluation/perplexity.py ``score_plans``).

The overrides are posbench-eval's (``eval.rope_scaling=[...]``, ``eval.variants=[local]``,
``threads=1`` ...); ``run_dir=OUT_DIR`` is added.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

COPIED = ("checkpoint.pt", "config.yaml", "corpus.json", "history.json")


def fresh_copy(run_dir: Path, out: Path) -> None:
    """The run's files without its evaluation records (nothing of the run is changed)."""
    if (out / "metrics.json").exists():
        raise SystemExit(f"{out} exists already; give a new OUT_DIR")
    out.mkdir(parents=True)
    for name in COPIED:
        if (run_dir / name).exists():
            shutil.copy2(run_dir / name, out / name)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    metrics["evaluations"] = []
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1))


def main(argv: list[str]) -> None:
    float64 = "--float64" in argv
    args = [a for a in argv if a != "--float64"]
    if len(args) < 2:
        raise SystemExit(__doc__.split("\n\n")[1])
    run_dir, out, overrides = Path(args[0]), Path(args[1]), args[2:]
    fresh_copy(run_dir, out)

    import posbench.evaluation.perplexity as perplexity
    import posbench.jobs.evaluate as job

    perplexity.far_context_pairs = lambda names: set(names)  # every row's per-token losses
    if float64:
        load = job.model_from_checkpoint
        job.model_from_checkpoint = lambda ckpt, device: (lambda m, c: (m.double(), c))(*load(ckpt, device))

    from posbench.cli import evaluate

    sys.argv = ["posbench-eval", *overrides, f"run_dir={out}"]
    evaluate.main()


if __name__ == "__main__":
    main(sys.argv[1:])
