"""The extension section (posbench/report/extension/section.py): perplexity at the target length against
fine-tuning steps, beside the encoding trained at that length (a whole report of extension runs:
tests/report/extension/test_frames.py)."""

from types import SimpleNamespace

import pandas as pd

from posbench.report.extension.section import ExtensionSection
from tests.helpers import run_section


def test_the_section_applies_where_there_are_extension_rows_and_writes_their_table(sweep_context, tmp_path):
    assert not ExtensionSection().applies(sweep_context)  # no extension runs in the shared sweep

    def rec(variant, train_len, length, seed, ppl):
        return {"variant": variant, "encoding": "rope", "model": "tiny", "train_len": train_len, "length": length,
                "seed": seed, "token_set": "t", "ppl": ppl}

    evals = pd.DataFrame([rec(v, 16, 64, s, p + s / 10) for s in (0, 1)
                          for v, p in (("rope+yarn@4x+ft0", 9.0), ("rope+yarn@4x+ft10", 6.0), ("rope@1x+ft10", 8.0))]
                         + [rec("rope", 64, 64, s, 5.0 + s / 10) for s in (0, 1)])  # trained at the target
    ctx = SimpleNamespace(has_lm=True, evals=evals, token_sets={}, options=sweep_context.options,
                          derived=lambda name, make: make())
    assert ExtensionSection().applies(ctx)
    md, written = run_section(ExtensionSection, ctx, tmp_path)
    assert sorted(written) == ["extension.csv", "extension.png"] and md.startswith("## Context extension by fine-tuning")
    table = pd.read_csv(tmp_path / "extension.csv")
    assert set(table["method"]) >= {"yarn", "continued at train_len"}
