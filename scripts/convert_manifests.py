"""Convert committed reports written before manifest.json: read back, once, what a
rebuild needs from each report.md's words (each run's config block, the commands, the environment
table, the joined folders' line, the rows that do not apply, the scored-text line) and write it as
``manifest.json.gz`` beside it (posbench/report/records/manifest.py), which is all ``posbench-report FOLDER
--rebuild`` reads of the report from then on.

    python scripts/convert_manifests.py results/*/ results/far_context/*/     # skips folders that have one
    python scripts/convert_manifests.py --check results/quick                # compare with the manifest there

The patterns are the ones report/records/committed.py used before the manifest; each field read back is
checked against the wording the current code writes (a joined folder's line is rewritten from the
fields and must equal the text). Exit 1 with one line per folder that cannot be converted.
Verify a conversion by rebuilding (the folder's COMMAND.md gives the command) and
``git diff --stat results/``: a report rebuilt from its manifest is byte-identical.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import pandas as pd

from posbench.report.records.manifest import MANIFEST, Join, Manifest, manifest_data, manifest_path, read_manifest, write_manifest

REPORT = "report.md"
CONFIG_BLOCK = re.compile(r"<details><summary>config of (\S+)</summary>\n\n```\n(.*?)\n```", re.S)
COMMANDS_BLOCK = re.compile(r"Commands \([^\n]*\n\n```\n(.*?)\n```", re.S)
NOT_RECORDED = "(not recorded)"  # report/sections/provenance.py: what it writes for no commands or environment
ENVIRONMENT_TABLE = re.compile(r"Environment \([^\n]*\n\n((?:\|[^\n]*\n)+)")
NOT_APPLICABLE = re.compile(r"does not apply to, left out of every table and figure: ((?:`[^`]+`(?:, )?)+)\.")
JOINED = re.compile(r"`([^`]+)`: every record of its (\d+) runs on (.*?) windows \((\d+) records, (\d+) of rows this "
                    r"report lacked\); its records of rows both hold differ from this report's by at most (.*?) in "
                    r"relative perplexity")
DIFFERENCE = re.compile(r"^(\S+) \((.+)\)$")
SCORED_TEXT = re.compile(r"`([^`]+)`: ([\d,]+) (?:bytes|tokens \(([\d,]+) bytes\)) from (\d+) of the (\d+) validation "
                         r"documents \(documents ([\d, -]+), numbered")


def joins(text: str) -> list[Join]:
    out = []
    for m in JOINED.finditer(text):
        differences = {}
        for part in m.group(6).split(", "):
            d = DIFFERENCE.match(part)
            if d is None:
                raise ValueError(f"cannot read the difference {part!r} of the joined folder {m.group(1)}")
            differences[d.group(2)] = float(d.group(1))
        join = Join(m.group(1), int(m.group(2)), tuple(m.group(3).split(", ")), int(m.group(4)), int(m.group(5)),
                    differences)
        if join.line() != m.group(0):
            raise ValueError(f"the line of the joined folder {m.group(1)} does not read back as the code writes it")
        out.append(join)
    return out


def scored_text(text: str) -> dict[str, dict]:
    """Each token set's scored documents as the summary's "Scored text" line names them (report/analysis/prose.py)."""
    out = {}
    for name, tokens, n_bytes, _, in_split, ranges in SCORED_TEXT.findall(text):
        docs = []
        for part in ranges.split(","):
            a, _, b = part.strip().partition("-")
            docs += list(range(int(a), int(b or a) + 1))
        out[name] = {"docs": docs, "tokens": int(tokens.replace(",", "")), "documents_in_split": int(in_split)}
        if n_bytes:
            out[name]["bytes"] = int(n_bytes.replace(",", ""))
    return out


def environment(text: str) -> pd.DataFrame:
    if (m := ENVIRONMENT_TABLE.search(text)) is None:
        return pd.DataFrame()
    lines = [line for i, line in enumerate(m.group(1).splitlines()) if i != 1]  # the |---| rule
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    return pd.DataFrame(cells[1:], columns=cells[0])


def manifest_from_report(text: str) -> Manifest:
    """What a rebuild reads, from the words of a report.md written before manifests."""
    configs = {rid: body for rid, body in CONFIG_BLOCK.findall(text)}
    commands = m.group(1).splitlines() if (m := COMMANDS_BLOCK.search(text)) else []
    if commands == [NOT_RECORDED]:
        commands = []
    not_applicable = re.findall(r"`([^`]+)`", m.group(1)) if (m := NOT_APPLICABLE.search(text)) else []
    return Manifest(configs, commands, environment(text), joins(text), not_applicable, scored_text(text))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", type=Path, nargs="+", help="committed reports' folders (each with report.md)")
    parser.add_argument("--check", action="store_true", help="write nothing: exit 1 where the manifest there differs")
    args = parser.parse_args(argv)
    failed = 0
    for folder in args.folders:
        try:
            if not (folder / REPORT).is_file():
                raise ValueError(f"no {REPORT}")
            made = manifest_from_report((folder / REPORT).read_text())
            if not made.configs:
                raise ValueError(f"its {REPORT} holds no config block")
            path = manifest_path(folder)
            if args.check:
                same = path.is_file() and manifest_data(folder) == json.loads(made.to_json())
                print(f"{folder}: {'the same' if same else 'differs from ' + MANIFEST}")
                failed += not same
                continue
            if path.is_file():
                read_manifest(folder)  # a damaged one says so; a good one is kept (the report wrote it)
                print(f"{folder}: has {MANIFEST} already, kept")
                continue
            write_manifest(folder, made)
            print(f"{folder}: wrote {MANIFEST} ({len(made.configs)} configs, {len(made.commands)} commands, "
                  f"{len(made.environment)} environment rows, {len(made.joins)} joins, "
                  f"{len(made.not_applicable)} rows not applying, {len(made.scored_text)} scored token sets)")
        except Exception as e:  # noqa: BLE001 - one line per folder, the others still converted
            print(f"{folder}: cannot convert: {e}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
