"""Per-token parity of posbench's model and its export at full precision (results/hf_parity/direct.csv):
the run directories' per-token losses are stored in float16 (scripts/hf_parity.py reads them), which
hides any difference under ~1e-3 nats; here both models read the same windows in memory.

    python scripts/hf_parity_direct.py MODEL NATIVE_RUN EXPORT --out direct.csv [--lengths 64,1024]
        [--windows 8] [--dtypes float32,float64] [--scalings linear,dynamic_ntk,yarn,llama3]
        [--extenders rerope,selfextend,streaming]

``--windows`` windows of L + 1 bytes of the run's validation split (evenly spaced starts) at each length;
per dtype, row (plain, and each RoPE scaling: posbench's AttentionOptions beside transformers'
rope_parameters through posbench/hf/scalings.py, as the two commands use them) and length: the largest
|difference| of a token's loss (``max_dtoken``), of any log-probability of the vocabulary
(``max_dlogprob``), and the difference of the mean loss (HF - native). Static scalings at factor the
longest length / train_len. ``--extenders`` (none by default) adds rows of posbench's training-free
extenders at their defaults: the native variant's AttentionOptions beside posbench/hf/extenders.py's
registered attention on the export (``extended``), as the two commands use them. Appends to ``--out`` (a CSV).

``--angles-like-hf`` (a diagnostic, its rows' dtype marked ``+hf_angles``): posbench's rotation tables
computed as transformers' rotary module computes them (angles = position x inverse frequency in float32,
plain RoPE's inverse frequencies as transformers' float32 ``1 / base^(2i/d)``) instead of posbench's
(angles in float64, cos/sin cast to float32: posbench/encodings/rope.py ``rotation_tables``): what is
left of the difference then is not the tables' rounding.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch


def windows(run_dir: Path, length: int, count: int) -> torch.Tensor:
    """[count, length + 1] token ids of the run's validation split (bytes), evenly spaced."""
    from posbench.data.load import load_corpus
    from posbench.spec import RunSpec
    from posbench.store.rundir import RunDir

    val = np.asarray(load_corpus(RunSpec.from_config(RunDir(run_dir).read_run_config()).data).val).astype(np.int64)
    starts = np.linspace(0, len(val) - length - 2, count).astype(np.int64)
    return torch.from_numpy(np.stack([val[s : s + length + 1] for s in starts]))


def angles_like_hf(run_dir: Path) -> None:
    """posbench's rope rotation tables replaced by transformers' arithmetic (GPTNeoXRotaryEmbedding.forward)."""
    import posbench.encodings.rope as rope
    from posbench.spec import RunSpec
    from posbench.store.rundir import RunDir

    base = RunSpec.from_config(RunDir(run_dir).read_run_config()).encoding.params.base

    def tables(positions: torch.Tensor, inv_freq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        d = 2 * len(inv_freq)
        theirs = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float) / d))
        plain = torch.allclose(theirs.double(), inv_freq.double().cpu(), rtol=1e-6, atol=0)
        freq = (theirs if plain else inv_freq.float()).to(positions.device)
        angles = positions[:, None].float() * freq[None, :]
        angles = torch.cat((angles, angles), dim=-1)
        return angles.cos(), angles.sin()

    rope.rotation_tables = tables


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("native", type=Path)
    ap.add_argument("export", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--lengths", default="64,1024")
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--scalings", default="linear,dynamic_ntk,yarn,llama3")
    ap.add_argument("--extenders", default="")
    ap.add_argument("--angles-like-hf", action="store_true")
    args = ap.parse_args(argv)

    import transformers

    from posbench.attention.options import AttentionOptions
    from posbench.evaluation.variants import make_variant
    from posbench.hf.extenders import extended
    from posbench.hf.scalings import DYNAMIC, Scaling, scaled
    from posbench.jobs.evaluate import model_from_checkpoint
    from posbench.store.rundir import RunDir

    if args.angles_like_hf:
        angles_like_hf(args.native)
    lengths = [int(x) for x in args.lengths.split(",")]
    names = [""] + [s for s in args.scalings.split(",") if s]
    extenders = [make_variant(e) for e in args.extenders.split(",") if e]
    rows = []
    for dtype_name in args.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        native, spec = model_from_checkpoint(RunDir(args.native).load_checkpoint(), torch.device("cpu"))
        native = native.to(dtype).eval()
        hf = transformers.AutoModelForCausalLM.from_pretrained(args.export, local_files_only=True, dtype=dtype).eval()
        train_len, factor = spec.train_len, max(lengths) / spec.train_len
        for L in lengths:
            ids = windows(args.native, L, args.windows)
            x, y = ids[:, :-1], ids[:, 1:]
            for name in names + extenders:
                extender = name if not isinstance(name, str) else None
                row = Scaling(name, None if name in DYNAMIC else factor) if isinstance(name, str) and name else None
                opts = None if row is None else AttentionOptions(
                    rope=(name, max(1.0, L / train_len) if row.factor is None else row.factor))
                if extender is not None:
                    opts = extender.options(AttentionOptions(), L, train_len)
                with torch.inference_mode():
                    ours = (native(x) if opts is None else native(x, None, opts)).double().log_softmax(-1)
                    with scaled(hf, row, train_len), extended(hf, extender, train_len):
                        theirs = hf(input_ids=x, use_cache=False).logits.double().log_softmax(-1)
                lo, lh = -ours.gather(-1, y[..., None])[..., 0], -theirs.gather(-1, y[..., None])[..., 0]
                suffix = extender.suffix() if extender is not None else row.suffix() if row else ""
                rows.append({"model": args.model, "dtype": dtype_name + ("+hf_angles" if args.angles_like_hf else ""), "row": "rope" + suffix,
                             "length": L, "multiple": L / train_len, "tokens": y.numel(),
                             "loss_native": lo.mean().item(), "dloss": (lh.mean() - lo.mean()).item(),
                             "max_dtoken": (lh - lo).abs().max().item(),
                             "max_dlogprob": (theirs - ours).abs().max().item()})
                print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    table.to_csv(args.out, mode="a", header=not args.out.exists(), index=False, float_format="%.6g")
    return 0


if __name__ == "__main__":
    sys.exit(main())
