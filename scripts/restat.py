"""Recompute a committed report's statistics from its own records, where its runs are gone.

    python scripts/restat.py results/modern [--protocols nonoverlapping] [--with results/far_context/modern]

A committed report keeps every evaluation record it compared (``evaluations.csv``: each seed's
perplexity and per-document losses), so the report's statistics (intervals, tests, ranks, verdicts,
far-context use) can be recomputed by the current code without the run directories; the
perplexities cannot change. Writes ``restat.md`` (the main table as the report shows it, with a
header naming the commit, and the decision guide's verdicts where the records hold RoPE extension
rows), ``restat.csv`` (every column of the main table) and ``restat_decision_guide.csv`` beside
the report.
The report's other sections (training curves, per-position losses, provenance) need the runs:
``posbench-report`` regenerates the whole report where they exist.

``--with FOLDER`` takes the records of another committed report made from some of the same runs
retrained later (the same run ids: the same configuration), e.g. with rows the first evaluation
did not score (a far-context control): every record of such a run on a protocol FOLDER holds comes
from FOLDER, so that a row and its control are always scored on the same weights. The records both
folders hold show whether the retrained runs are the same models: the largest relative perplexity
difference is written in ``restat.md`` (results/far_context: 1e-4 or less where the code path is
unchanged, 0.24% for stick-breaking, whose code path changed), and above ``REPRODUCED`` the script
refuses (another model). Records of runs the report does not hold are left out.

The scored documents' token counts are not in the records; they are derived from each token set's
tokens scored and number of documents, which holds only where every document contributes the same
number of tokens (the default segments: ``segments[<n>, 1 per doc, ...]``); any other token set is
refused.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd

from posbench.report.sections.decision_guide import guide_frame, verdict
from posbench.report.tables import (
    comparable_records,
    display_table,
    main_table,
    row_caveats,
)

SEGMENTS = re.compile(r"segments\[(\d+), 1 per doc")


REPRODUCED = 0.01  # the largest relative perplexity difference allowed between two folders' copies of a record
RECORD_KEYS = ["run_id", "variant", "protocol", "length", "token_set"]


def with_records(evals: pd.DataFrame, extra: pd.DataFrame, name: str) -> tuple[pd.DataFrame, str]:
    """``evals`` with every record of the runs ``extra`` (another folder's, ``name``) also holds taken
    from ``extra``, and a line saying how many runs and records and how far the shared records differ.
    Exits where they differ by more than REPRODUCED, or share none."""
    extra = extra[extra["run_id"].isin(set(evals["run_id"]))]
    both = evals.merge(extra[RECORD_KEYS + ["ppl"]], on=RECORD_KEYS, suffixes=("", "_extra"))
    if both.empty:
        sys.exit(f"restat: {name} shares no record with this report, so nothing shows that its runs are the same; "
                 "give the folder of a report made from the same runs")
    diff = (both["ppl_extra"] / both["ppl"] - 1).abs()
    if not diff.max() <= REPRODUCED:
        sys.exit(f"restat: {name} does not reproduce this report's records (largest relative perplexity difference "
                 f"{diff.max():.2e} > {REPRODUCED:g}): its runs are not the same")
    worst = diff.groupby(both["encoding"]).max()
    # a run's records on a protocol come from one folder: the panels (and the pairs of a row with its
    # control) are per protocol, so the report's other protocols of that run may stay
    taken = set(zip(extra["run_id"], extra["protocol"]))
    kept = [(r, p) not in taken for r, p in zip(evals["run_id"], evals["protocol"])]
    merged = pd.concat([evals[kept], extra], ignore_index=True)
    line = (f"`{name}`: every record of its {extra['run_id'].nunique()} runs on "
            f"{', '.join(sorted(extra['protocol'].unique()))} windows ({len(extra)} records, {len(extra) - len(both)} "
            f"of rows this report lacked); its records of rows both hold differ from this report's by at most "
            + ", ".join(f"{d:.1e} ({e})" for e, d in worst.items()) + " in relative perplexity")
    return merged, line


def read_csv(folder: Path) -> pd.DataFrame:
    if not (folder / "evaluations.csv").is_file():
        sys.exit(f"restat: {folder}/evaluations.csv does not exist; give a committed report's folder")
    return pd.read_csv(folder / "evaluations.csv")


def read_records(folder: Path, protocols: list[str] | None, extra: list[Path] = ()) -> tuple[pd.DataFrame, dict, list[str]]:
    """(the compared records, their token sets' document sizes, a line per ``extra`` folder merged)."""
    evals, merged = read_csv(folder), []
    for other in extra:
        evals, line = with_records(evals, read_csv(other), str(other))
        merged.append(line)
    evals["doc_nats"] = [ast.literal_eval(x) if isinstance(x, str) else None for x in evals["doc_nats"]]
    evals["windowed"] = evals["windowed"].fillna(False).astype(bool)
    if protocols:
        evals = evals[evals["protocol"].isin(protocols)]
    if evals["model"].astype(str).str.contains("/").any():  # a subword tokenizer's runs: tokens differ per document
        sys.exit("restat: these records come from a subword tokenizer, whose documents score different numbers of "
                 "tokens; regenerate the report from its runs with posbench-report")
    token_sets = {}
    for name, g in evals.dropna(subset=["token_set"]).groupby("token_set"):
        match = SEGMENTS.search(name)
        docs = g["doc_nats"].dropna().map(len)
        if match is None or docs.empty:
            sys.exit(f"restat: token set {name!r} does not score the same tokens from every document; "
                     "regenerate the report from its runs with posbench-report")
        n = int(docs.max())
        token_sets[name] = {"doc_tokens": [int(match.group(1))] * n}
    return comparable_records(evals)[0], token_sets, merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--protocols", default=None, help="comma-separated protocols (default: every one)")
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--with", dest="extra", type=Path, action="append", default=[],
                        help="another committed report's folder made from some of the same runs (repeatable)")
    args = parser.parse_args()
    evals, token_sets, merged = read_records(args.folder, args.protocols.split(",") if args.protocols else None, args.extra)
    table = main_table(evals, args.tolerance, token_sets)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    shown = display_table(table)
    notes = row_caveats(table["variant"])
    text = (f"# Statistics recomputed from this report's records\n\n"
            f"By `python scripts/restat.py {args.folder}"
            f"{' --protocols ' + args.protocols if args.protocols else ''}"
            f"{''.join(' --with ' + str(x) for x in args.extra)}` at commit `{commit}`, from "
            "`evaluations.csv` (the same perplexities as `report.md`"
            + (" but the retrained runs' below" if args.extra else "")
            + "; its runs are not on the machine that made this file)"
            + (", with the runs retrained later (the same run ids) taken from these reports: "
               + "; ".join(merged) if merged else "")
            + ". Intervals, tests, ranks and verdicts are those of the current report code "
            "(docs/protocols.md, \"Statistics in the report\"): Student's t over seeds with the scored "
            "documents' variance added; rows of other weights compared over seeds (`n/r`: not resolvable "
            "with the seeds there are), rows of the same weights over documents; `≈`: not significantly "
            "different from the column's best (Holm); ranks tied where no test separates two rows; "
            "`window control / full`: the row's `+swaL` perplexity over its own at the longest length "
            "(a flat row above 1.01 uses far context; below, it is local). Where this file and "
            "`report.md` disagree on an interval, a p-value or a verdict, this file holds.\n\n"
            + "".join(f"{n}\n\n" for n in notes)
            + shown.to_markdown(index=False, disable_numparse=True) + "\n")
    guide = guide_frame(evals, token_sets)
    if not guide.empty and guide["row"].nunique() > 1:
        text += "\n## Decision guide: extending a RoPE model\n\n"
        for (model, L, target), panel in guide.groupby(["model", "train_len", "target"], sort=False):
            text += f"- {model}, trained at {L}, target {target}: {verdict(panel)}\n"
        guide.to_csv(args.folder / "restat_decision_guide.csv", index=False)
    (args.folder / "restat.md").write_text(text)
    table.to_csv(args.folder / "restat.csv", index=False)
    print(f"wrote {args.folder}/restat.md and restat.csv")


if __name__ == "__main__":
    main()
