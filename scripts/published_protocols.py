"""The perplexity each paper reports, side by side: one trained posbench run scored on its own validation
text under posbench's protocols and under the published ones (posbench/evaluation/protocols/: lm-eval's
rolling windows, transformers' strided loop, LCEG's window starts, YaRN's truncated documents) and the
sink + window evaluation (the ``streaming`` variant under posbench's sliding windows), at a few lengths,
as one markdown table: protocol | tokens scored | perplexity | bits per byte | as the reference reports
it | definition.

    python scripts/published_protocols.py RUN_DIR --out results/hf_parity/protocols.md \
        [--multiples 1,16] [--published-docs 10] [--no-streaming] [--csv FILE]
    python scripts/published_protocols.py --values FILE.csv --out FILE.md   # the table again, no model run

The run is read, never written (its records stay as they are): the model is loaded from its checkpoint
and scored in this process, one thread (``OMP_NUM_THREADS``), on the CPU. Bad input (no run, a run that
has not finished, bad numbers): one line, exit 2, nothing written.

The protocols score different tokens (the published text's documents, some tokens several times, a
different set at each length for YaRN and LCEG): the table is there to show how far the protocol alone
moves one model's number, not to rank anything; each row's token count says what it scored.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from posbench.core.errors import PosbenchError
from posbench.data.load import load_corpus
from posbench.evaluation.perplexity import evaluate_model, protocol_contexts, token_set_documents
from posbench.evaluation.plan import perplexity_plan
from posbench.evaluation.protocols import PROTOCOLS
from posbench.evaluation.scored_text import with_scored_text
from posbench.jobs.corpora import check_same_corpus
from posbench.jobs.evaluate import completed_metrics, model_from_checkpoint
from posbench.store.rundir import RunDir

OWN = ("nonoverlapping", "sliding")
PUBLISHED = ("lm_eval_rolling", "hf_strided", "lceg_starts", "yarn_truncated")
STREAMING = "streaming"  # the sink + window row: posbench's StreamingLLM variant under the sliding protocol

DEFINITIONS = {
    "nonoverlapping": "posbench: consecutive windows tile scored segments in the middle of up to 128 documents, every "
                      "token scored (Press et al. 2022's non-overlapping evaluation)",
    "sliding": "posbench: windows every L/2 tokens over the same segments, the last L/2 of each scored (context >= L/2)",
    STREAMING: "StreamingLLM (arXiv 2309.17453, eval_long_ppl.py's per-token rule): each scored token sees the first 4 "
               "tokens of its window (sinks) and the train_len - 5 tokens before it, at positions within the cache; "
               "posbench's `streaming` variant under `sliding`, the same segments",
}


def words_in(data: bytes) -> int:
    """Words as lm-eval's perplexity tasks count them (``len(re.split(r"\\s+", doc))``)."""
    return len(re.split(r"\s+", data.decode("utf-8", errors="replace")))


def published_numbers(protocol: str, record: dict, plan, context, text: np.ndarray) -> dict:
    """What a reference reports beside exp(token mean), from the record (and its plan and text): YaRN's
    mean of per-document perplexities, lm-eval's word perplexity (summed nats over its word count)."""
    if record.get("loss") is None:
        return {}
    if protocol == "yarn_truncated":  # np.mean of each document's exp(mean loss)
        _, tokens = token_set_documents(plan)
        return {"doc_mean_ppl": float(np.mean(np.exp(np.asarray(record["doc_nats"]) / tokens)))}
    if protocol == "lm_eval_rolling":
        words = sum(words_in(text[s:t].tobytes()) for s, t in zip(context.starts, context.ends))
        return {"word_ppl": math.exp(sum(record["doc_nats"]) / words)}
    return {}


def as_reported(row: dict) -> str:
    """The number in the form the reference reports it."""
    if row.get("loss") is None or row["loss"] != row["loss"]:
        return "n/d"
    p = row["protocol"]
    if p == "yarn_truncated":
        return f"mean of per-document ppl {row['doc_mean_ppl']:.3f}"
    if p == "lceg_starts":  # 2.71828 ** (mean over windows of each window's mean loss): equal windows
        return f"2.71828^loss {2.71828 ** row['loss']:.3f}"
    if p == "lm_eval_rolling":  # word_perplexity, byte_perplexity, bits_per_byte over the documents
        return (f"word_perplexity {row['word_ppl']:.4g}, byte_perplexity {2 ** row['bpb']:.3f}, "
                f"bits_per_byte {row['bpb']:.4f}")
    if p == "hf_strided":
        return f"ppl {row['ppl']:.3f} (token mean)"
    return f"ppl {row['ppl']:.3f}"


def score(run_dir: Path, multiples: list[float], published_docs: int | None, streaming: bool):
    """The rows of the table for one run: every protocol at ``multiples`` (each row with the run's name,
    train_len and the seconds the scoring took)."""
    folder = RunDir(run_dir)
    completed_metrics(folder)
    model, cfg = model_from_checkpoint(folder.load_checkpoint(), torch.device("cpu"))
    if not cfg.task.is_lm or not cfg.data.tokenizer.is_bytes:
        raise PosbenchError(f"{run_dir} is not a byte language model run; the published protocols score whole "
                            "documents of a byte corpus")
    if model.encoding.name != "rope" and streaming:
        streaming = False  # the streaming variant is for RoPE models: its row is left out
    corpus = load_corpus(cfg.data)
    check_same_corpus(folder, corpus)
    base = replace(cfg.eval, multiples=list(multiples), rope_scaling=[], temperature=[], bca=[], variants=[],
                   during_training=[], attention_stats=False,
                   published_docs=published_docs or cfg.eval.published_docs)
    runs = [replace(base, protocols=[*OWN, *PUBLISHED])]
    if streaming:
        runs.append(replace(base, protocols=["sliding"], variants=[STREAMING]))
    started, out, train_len = time.perf_counter(), [], cfg.train_len
    for eval_cfg in runs:
        spec = cfg.with_eval(eval_cfg)
        spec.check_evaluation()
        spec.check_corpus(corpus, evaluated=True)
        ev = with_scored_text(spec.resolved_eval(corpus.fingerprint), corpus)
        plain = {p.key for p in perplexity_plan(model.encoding, ev) if p.row.name == model.encoding.name}
        skip = plain if eval_cfg.variants else set()  # the plain row is scored in the first pass
        records, _ = evaluate_model(model, ev, torch.device("cpu"), progress=False, skip=skip)
        contexts = protocol_contexts(ev)
        for r in records:
            plan = PROTOCOLS.get(r["protocol"])().plan(r["length"], ev.settings, train_len, ev.n_val,
                                                       contexts[r["protocol"]])
            name = STREAMING if r["variant"].endswith("+" + STREAMING) else r["protocol"]
            out.append({"protocol": name, "variant": r["variant"], "length": r["length"], "multiple": r["multiple"],
                        "tokens": r["tokens_scored"], "distinct": len(np.unique(scored_indices(plan, r["length"]))),
                        "ppl": r["ppl"], "bpb": r["bpb"], "loss": r["loss"], "token_set": r["token_set"],
                        **published_numbers(r["protocol"], r, plan, contexts[r["protocol"]], ev.tokens())})
    seconds = time.perf_counter() - started
    return [{"run": run_dir.name, "train_len": train_len, "seconds": round(seconds, 1), **r} for r in out]


def scored_indices(plan, L: int) -> np.ndarray:
    """The stream index of every scored prediction of a plan (repeated where a token is scored twice)."""
    first = plan.scored_from(L)
    counts = plan.scored.astype(np.int64)
    k = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(plan.ends - L + 1 + first, counts) + k


def saved_rows(path: Path) -> list[dict]:
    """The rows of a --csv this script wrote (NaN where a protocol has no such number)."""
    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError) as e:
        raise PosbenchError(f"--values {path}: not a table this script wrote ({str(e).splitlines()[0][:100]})") from None
    if missing := {"run", "train_len", "seconds", "protocol", "multiple", "loss"} - set(frame.columns):
        raise PosbenchError(f"--values {path}: not a table this script wrote (no column {sorted(missing)[0]})")
    return frame.to_dict("records")


def definition(protocol: str) -> str:
    if protocol in DEFINITIONS:
        return DEFINITIONS[protocol]
    return PROTOCOLS.get(protocol).words_short


def table(rows: list[dict], multiples: list[float]) -> str:
    """The markdown table: one line per protocol, its numbers at each multiple."""
    order = [*OWN, STREAMING, *PUBLISHED]
    ms = sorted(multiples)
    head = (["protocol", "tokens scored (distinct)"] + [f"ppl {m:g}x" for m in ms] + [f"bpb {m:g}x" for m in ms]
            + [f"as reported, {ms[-1]:g}x", "definition"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in order:
        got = {r["multiple"]: r for r in rows if r["protocol"] == p}
        if not got:
            continue
        tokens = " / ".join(f"{got[m]['tokens']:,} ({got[m]['distinct']:,})" if m in got else "" for m in ms)
        ppl = [f"{got[m]['ppl']:.3f}" if m in got and got[m]["ppl"] == got[m]["ppl"] else "n/d" for m in ms]
        bpb = [f"{got[m]['bpb']:.4f}" if m in got and got[m]["bpb"] == got[m]["bpb"] else "n/d" for m in ms]
        last = as_reported(got[ms[-1]]) if ms[-1] in got else ""
        lines.append("| " + " | ".join([f"`{p}`", tokens, *ppl, *bpb, last, definition(p)]) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, nargs="?", help="a completed posbench run directory (a byte language model)")
    ap.add_argument("--values", type=Path, help="instead of a run: the table again from a --csv of an earlier run of this script")
    ap.add_argument("--out", type=Path, required=True, help="the markdown file to write")
    ap.add_argument("--csv", type=Path, help="also the numbers, one row per protocol and length")
    ap.add_argument("--multiples", default="1,16", help="comma-separated multiples of train_len (must include 1)")
    ap.add_argument("--published-docs", type=int, help="eval.published_docs (default: the run's, 10)")
    ap.add_argument("--no-streaming", action="store_true", help="leave out the sink + window row")
    args = ap.parse_args(argv)
    try:
        try:
            multiples = [float(x) for x in args.multiples.split(",")]
        except ValueError:
            raise PosbenchError(f"--multiples {args.multiples!r}: give comma-separated numbers, e.g. 1,16") from None
        if args.values is not None:
            rows = saved_rows(args.values)
            multiples = sorted({float(r["multiple"]) for r in rows})
        elif args.run is None or not args.run.is_dir():
            raise PosbenchError(f"{args.run} is not a run directory" if args.run else "give a run directory or --values")
        else:
            torch.set_num_threads(1)
            rows = score(args.run, multiples, args.published_docs, not args.no_streaming)
    except PosbenchError as e:
        print(f"published_protocols: error: {e}", file=sys.stderr)
        return 2
    first = rows[0]
    text = (f"Run `{first['run']}` (train_len {first['train_len']}), scored on its validation text in "
            f"{first['seconds']:.0f} s (CPU, one thread). ppl = exp(mean loss per token scored); bpb = bits per byte; "
            "tokens scored at each multiple (distinct tokens in brackets: LCEG scores tokens several times, YaRN "
            "a different set at each length).\n\n" + table(rows, multiples))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    if args.csv:
        pd.DataFrame(rows).to_csv(args.csv, index=False)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
