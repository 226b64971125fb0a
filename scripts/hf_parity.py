"""Parity of the checkpoint path with posbench's own evaluation (results/hf_parity/): a posbench run
scored natively and its export (posbench-export) scored by posbench-eval-hf, compared record by record.

    python scripts/hf_parity.py --pair small float32 NATIVE_RUN HF_RUN [--pair ...] --out results/hf_parity

Each ``--pair MODEL DTYPE NATIVE HF`` names two run directories (docs/run-directory.md) of the same
weights. Rows are matched by name after the family: the HF run's rows are named by its model type
(``gpt_neox+yarn@16x``), the native run's by its encoding (``rope+yarn@16x``); a row, protocol and length
both hold is compared, on the same token set (the records' ``token_set`` and token count, the per-token
files' documents and window positions must agree, else exit 1 with one line). Per cell:

- ``max_dtoken``: the largest |difference| of a scored token's loss (``token_losses.npz``; both sides
  store float16, so this is exact only above their rounding: ``token_ulp``, the float16 spacing at the
  largest loss compared; ``tokens_differing`` the share of tokens whose stored losses differ at all);
- ``max_dposition``: the largest |difference| of the mean loss at a window position (``per_position.npz``,
  float32 as scored; float16 in runs restored from a records file, posbench/store/records.py);
- ``dloss`` = HF - native mean loss per token (metrics.json, float64), ``dppl_rel`` = ppl_HF / ppl_native - 1.

Writes ``parity.csv`` (one line per cell) and ``parity.md`` (per model, dtype and row: the largest
per-token and mean-loss difference at each length).

``--direct CSV`` (scripts/hf_parity_direct.py's full-precision comparison): also ``direct.md``, its largest
per-token |difference| per model, dtype, row and length.

``--timing MODEL DTYPE NATIVE_LOG HF_LOG`` (the two commands' logs, of a ``--pair`` of that model and
dtype): each cell's seconds from its log's ``eval <row> L=<L>: starting`` lines (to the next cell's
start, or the last timestamp: whole seconds), tokens scored per second on each path and their ratio
HF / native, per cell, per row (all lengths) and in all, into ``throughput.csv`` and ``throughput.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

COLUMNS = ["model", "dtype", "row", "protocol", "length", "multiple", "tokens", "loss_native", "loss_hf", "dloss",
           "dppl_rel", "max_dtoken", "token_ulp", "tokens_differing", "max_dposition"]


class ParityError(Exception):
    """Two runs that cannot be compared: one line."""


def _records(run: Path) -> tuple[str, dict]:
    metrics = json.loads((run / "metrics.json").read_text())
    family = metrics["encoding"]
    out = {}
    for r in metrics["evaluations"]:
        if r.get("loss") is None:
            continue
        suffix = r["variant"][len(family):] if r["variant"].startswith(family) else None
        if suffix is None:
            raise ParityError(f"{run}: row {r['variant']!r} is not named after the run's encoding {family!r}")
        out[suffix, r["protocol"], r["length"]] = r
    return family, out


def _npz(path: Path) -> dict:
    if not path.exists():
        return {}
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def compare(model: str, dtype: str, native: Path, hf: Path) -> list[dict]:
    """The parity rows of one pair of run directories."""
    fam_n, rec_n = _records(native)
    fam_h, rec_h = _records(hf)
    tok_n, tok_h = _npz(native / "token_losses.npz"), _npz(hf / "token_losses.npz")
    pos_n, pos_h = _npz(native / "per_position.npz"), _npz(hf / "per_position.npz")
    rows = []
    for key in sorted(set(rec_n) & set(rec_h), key=lambda k: (k[0], k[1], k[2])):
        suffix, protocol, length = key
        a, b = rec_n[key], rec_h[key]
        where = f"{model} {dtype} {fam_n}{suffix} {protocol} L={length}"
        if a["token_set"] != b["token_set"] or a["tokens_scored"] != b["tokens_scored"]:
            raise ParityError(f"{where}: other tokens scored ({a['token_set']}, {a['tokens_scored']} tokens natively; "
                              f"{b['token_set']}, {b['tokens_scored']} through HF)")
        out = {"model": model, "dtype": dtype, "row": fam_n + suffix, "protocol": protocol, "length": length,
               "multiple": a["multiple"], "tokens": a["tokens_scored"], "loss_native": a["loss"], "loss_hf": b["loss"],
               "dloss": b["loss"] - a["loss"], "dppl_rel": math.exp(b["loss"] - a["loss"]) - 1.0,
               "max_dtoken": np.nan, "token_ulp": np.nan, "tokens_differing": np.nan, "max_dposition": np.nan}
        kn, kh = f"{fam_n}{suffix}/{protocol}/L{length}", f"{fam_h}{suffix}/{protocol}/L{length}"
        if kn in tok_n and kh in tok_h:
            for part in ("doc", "position"):
                k = f"{protocol}/L{length}/{part}"
                if not np.array_equal(tok_n.get(k), tok_h.get(k)):
                    raise ParityError(f"{where}: the per-token files hold other tokens ({k} differs)")
            x, y = tok_n[kn].astype(np.float64), tok_h[kh].astype(np.float64)
            d = np.abs(x - y)
            out["max_dtoken"] = float(d.max())
            out["token_ulp"] = float(np.spacing(np.float16(max(x.max(), y.max()))))
            out["tokens_differing"] = float((d > 0).mean())
        if kn in pos_n and kh in pos_h:
            out["max_dposition"] = float(np.nanmax(np.abs(pos_n[kn].astype(np.float64) - pos_h[kh].astype(np.float64))))
        rows.append(out)
    if not rows:
        raise ParityError(f"{native} and {hf} hold no row, protocol and length in common")
    return rows


STAMP = re.compile(r"\[(\d\d):(\d\d):(\d\d)\]")
START = re.compile(r"\[(\d\d):(\d\d):(\d\d)\]\[INFO\] eval (\S+) L=(\d+): starting")


def cell_seconds(log: str, family: str) -> dict:
    """(row suffix after ``family``, length) -> whole seconds of the cell, from a posbench log's timestamps."""
    text = log.replace("\r", "\n")
    starts = [(int(h) * 3600 + int(m) * 60 + int(s_), row, int(L)) for h, m, s_, row, L in START.findall(text)]
    last = max(int(h) * 3600 + int(m) * 60 + int(s_) for h, m, s_ in STAMP.findall(text))
    ends = [t for t, _, _ in starts[1:]] + [last]
    return {(row[len(family):], L): end - t for (t, row, L), end in zip(starts, ends) if row.startswith(family)}


def throughput(parity: pd.DataFrame, model: str, dtype: str, native_log: Path, hf_log: Path) -> pd.DataFrame:
    """Tokens scored per second on each path, per cell, per row and in all."""
    cells = parity[(parity["model"] == model) & (parity["dtype"] == dtype)]
    if cells.empty:
        raise ParityError(f"--timing {model} {dtype}: no --pair of that model and dtype")
    fam_n = cells["row"].iloc[0].split("+")[0]
    nat = cell_seconds(native_log.read_text(errors="replace"), fam_n)
    hf_text = hf_log.read_text(errors="replace")
    fam_h = START.search(hf_text.replace("\r", "\n")).group(4).split("+")[0]
    hf = cell_seconds(hf_text, fam_h)
    out = []
    for c in cells.itertuples():
        key = (c.row[len(fam_n):], c.length)
        if key in nat and key in hf:
            out.append({"model": model, "dtype": dtype, "row": c.row, "length": c.length, "tokens": c.tokens,
                        "s_native": nat[key], "s_hf": hf[key]})
    if not out:
        raise ParityError(f"--timing {model} {dtype}: the logs hold no cell of the pair")
    table = pd.DataFrame(out)
    rows = [table.groupby("row", sort=False)[["tokens", "s_native", "s_hf"]].sum().reset_index().assign(length="all"),
            pd.DataFrame([{"row": "all", "length": "all", **table[["tokens", "s_native", "s_hf"]].sum().to_dict()}])]
    table = pd.concat([table, *[r.assign(model=model, dtype=dtype) for r in rows]], ignore_index=True)
    table["tok_per_s_native"] = table["tokens"] / table["s_native"].where(table["s_native"] > 0)
    table["tok_per_s_hf"] = table["tokens"] / table["s_hf"].where(table["s_hf"] > 0)
    table["hf_over_native"] = table["tok_per_s_hf"] / table["tok_per_s_native"]
    return table


def direct_markdown(direct: pd.DataFrame) -> str:
    """Per model and dtype: max |d token loss| (full precision) per row and length."""
    lines = []
    for (model, dtype), part in direct.groupby(["model", "dtype"], sort=False):
        lengths = sorted(part["length"].unique())
        lines += [f"### {model}, {dtype}", "", "| row | " + " | ".join(f"L={L}" for L in lengths) + " |",
                  "|---|" + "---|" * len(lengths)]
        for row, cells in part.groupby("row", sort=False):
            by = {r.length: r.max_dtoken for r in cells.itertuples()}
            lines.append(f"| {row} | " + " | ".join(f"{by[L]:.1e}" if L in by else "" for L in lengths) + " |")
        lines.append("")
    return "\n".join(lines)


def markdown(table: pd.DataFrame) -> str:
    """Per model, dtype and row: max |d token loss| / d mean loss at each length."""
    lines = []
    for (model, dtype), part in table.groupby(["model", "dtype"], sort=False):
        lengths = sorted(part["length"].unique())
        lines += [f"### {model}, {dtype}", "",
                  "max per-token |d loss| (float16-stored) / d mean loss (HF - native), nats, per length:", "",
                  "| row | " + " | ".join(f"L={L}" for L in lengths) + " |",
                  "|---|" + "---|" * len(lengths)]
        for row, cells in part.groupby("row", sort=False):
            by = {r.length: r for r in cells.itertuples()}
            lines.append(f"| {row} | " + " | ".join(
                (f"{by[L].max_dtoken:.1e} / {by[L].dloss:+.1e}" if L in by else "") for L in lengths) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", nargs=4, action="append", required=True, metavar=("MODEL", "DTYPE", "NATIVE", "HF"))
    ap.add_argument("--timing", nargs=4, action="append", default=[],
                    metavar=("MODEL", "DTYPE", "NATIVE_LOG", "HF_LOG"))
    ap.add_argument("--direct", type=Path)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    try:
        rows = [r for model, dtype, native, hf in args.pair for r in compare(model, dtype, Path(native), Path(hf))]
        table = pd.DataFrame(rows, columns=COLUMNS)
        timing = [throughput(table, model, dtype, Path(n), Path(h)) for model, dtype, n, h in args.timing]
    except (ParityError, OSError, KeyError, ValueError) as e:
        print(f"hf_parity: {e}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "parity.csv", index=False, float_format="%.6g")
    (args.out / "parity.md").write_text(markdown(table))
    print(markdown(table))
    if args.direct:
        (args.out / "direct.md").write_text(direct_markdown(pd.read_csv(args.direct)))
    if timing:
        speed = pd.concat(timing, ignore_index=True)
        speed.to_csv(args.out / "throughput.csv", index=False, float_format="%.6g")
        summary = speed[speed["length"] == "all"]
        md = ["| model | dtype | row | tokens | s native | s HF | tok/s native | tok/s HF | HF / native |",
              "|---|---|---|---|---|---|---|---|---|"]
        md += [f"| {r.model} | {r.dtype} | {r.row} | {r.tokens:,} | {r.s_native:.0f} | {r.s_hf:.0f} | "
               f"{r.tok_per_s_native:,.0f} | {r.tok_per_s_hf:,.0f} | {r.hf_over_native:.2f} |" for r in summary.itertuples()]
        (args.out / "throughput.md").write_text("\n".join(md) + "\n")
        print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
