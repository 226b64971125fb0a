"""What a report keeps besides its records, as data: ``manifest.json.gz`` beside ``report.md``, written
with it every time, and the only thing a rebuild (``posbench-report FOLDER --rebuild``,
posbench/report/records/committed.py) reads of the report besides its CSV files and figures.

It holds what the report's words show and its records do not: each shown run's config as written
(with this machine's paths portable: posbench/core/paths.py; the report shows the settings shared and
those that differ, the manifest each run's whole config), the commands and the environment table (the provenance section),
the folders a rebuild joined (``--with``: what each replaced, how far apart), the names of rows
left out because their variant does not apply, and each compared token set's scored documents (the
summary's "Scored text" line). Rebuilding reads these fields, never the markdown: a change of
wording cannot break a rebuild. Reports committed before the manifest were converted once from
their report.md by ``scripts/convert_manifests.py``.

The file is gzip-compressed JSON (written with mtime 0, so the same manifest is the same bytes): each
run's config is written out whole and they differ in a few lines, so a map's 500 kB of JSON is 10 kB.
A report written before (``manifest.json``, the same JSON uncompressed) is still read, and its next
write replaces it.

Format 1 (JSON, one object)::

    {"format": 1,
     "configs": {"<run id>": "<config.yaml as written>", ...},
     "commands": ["posbench-train -m ...", ...],
     "environment": {"columns": ["device", ...], "rows": [["cpu (1 threads)", ...], ...]},  # cells as shown
     "joins": [{"folder": "...", "runs": 9, "protocols": ["nonoverlapping"], "records": 210, "added": 75,
                "differences": {"<encoding>": 4.7e-06, ...}}, ...],
     "not_applicable": ["<row>", ...],
     "scored_text": {"<token set>": {"docs": [0, 1, ...], "tokens": 77824, "documents_in_split": 90,
                                     "bytes": 77824 (a subword set only)}, ...}}
"""

from __future__ import annotations

import gzip
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from posbench.core.errors import PosbenchError
from posbench.core.files import atomic_write_bytes
from posbench.core.paths import portable
from posbench.report.records.provenance import shown_commands, shown_environment, shown_runs

MANIFEST = "manifest.json.gz"
OLD_MANIFEST = "manifest.json"  # uncompressed, as reports wrote it before: read, and replaced by the next write
FORMAT = 1
FIELDS = ("configs", "commands", "environment", "joins", "not_applicable", "scored_text")
SCORED_FIELDS = ("docs", "tokens", "documents_in_split", "bytes")  # the token_sets fields the report shows


@dataclass(frozen=True)
class Join:
    """A committed report of some of the same runs retrained later, joined by a rebuild (``--with``):
    ``runs`` runs whose ``records`` records on ``protocols`` replaced this report's (``added`` of them
    of rows it lacked); ``differences``: the largest relative perplexity difference per encoding of
    the records both held."""

    folder: str
    runs: int
    protocols: tuple[str, ...]
    records: int
    added: int
    differences: dict[str, float]
    # evaluation-time controls (windowed rows) both hold that the joined folder scored anew, e.g. under a
    # corrected window control: {variant: largest relative perplexity difference}; not part of the check
    rescored: dict[str, float] = field(default_factory=dict)

    def line(self) -> str:
        """The report's sentence on it (the introduction's account of a rebuild)."""
        text = (f"`{self.folder}`: every record of its {self.runs} runs on {', '.join(self.protocols)} windows "
                f"({self.records} records, {self.added} of rows this report lacked); its records of rows both hold "
                "differ from this report's by at most "
                + ", ".join(f"{d:.1e} ({e})" for e, d in self.differences.items()) + " in relative perplexity")
        if self.rescored:
            text += ("; its window controls were scored anew and replace this report's (largest change "
                     + ", ".join(f"{d:.1e} ({v})" for v, d in self.rescored.items()) + ")")
        return text


@dataclass(frozen=True)
class Manifest:
    """The fields of manifest.json (the module doc)."""

    configs: dict[str, str]
    commands: list[str]
    environment: pd.DataFrame  # the provenance section's table, every cell as its text shows it
    joins: list[Join] = field(default_factory=list)
    not_applicable: list[str] = field(default_factory=list)
    scored_text: dict[str, dict] = field(default_factory=dict)

    def to_json(self) -> str:
        env = self.environment
        data = {"format": FORMAT, "configs": dict(self.configs), "commands": list(self.commands),
                "environment": {"columns": [str(c) for c in env.columns], "rows": env.astype(str).values.tolist()},
                "joins": [{**asdict(j), "protocols": list(j.protocols)} for j in self.joins],
                "not_applicable": list(self.not_applicable), "scored_text": self.scored_text}
        return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def manifest_of(ctx) -> Manifest:
    """What the report of ``ctx`` (its ReportContext) shows that a rebuild needs (the module doc): the
    same runs, commands and environment as its provenance section, the joins and rows left out as its
    introduction and "Records not compared" name them, the scored text as its summary does."""
    runs = shown_runs(ctx)
    joins = list(ctx.recorded.joins) if ctx.recorded is not None else []
    names = set(ctx.evals["token_set"].dropna()) if ctx.has_lm and "token_set" in ctx.evals else set()
    return Manifest({rid: portable(ctx.run_files(d).config_text) for rid, d in zip(runs["run_id"], runs["run_dir"])},
                    shown_commands(ctx), shown_cells(shown_environment(ctx)), joins,
                    list(ctx.not_applicable), scored_documents(ctx.token_sets, names))


def shown_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every cell as the report's markdown table shows it (document.Table: tabulate
    without number parsing, i.e. ``str``, a missing value empty)."""
    return frame.astype(object).map(lambda v: "" if v is None else str(v).strip()).astype(str)


def scored_documents(token_sets: dict, names) -> dict[str, dict]:
    """The scored documents of the token sets ``names`` (those that name them), as the summary shows them."""
    out = {}
    for name in sorted(names):
        info = token_sets.get(name) or {}
        if "docs" in info:
            out[name] = {k: ([int(d) for d in info[k]] if k == "docs" else int(info[k]))
                         for k in SCORED_FIELDS if k in info}
    return out


def manifest_path(folder: Path) -> Path:
    """The manifest of the report in ``folder``: ``manifest.json.gz``, else an older report's
    ``manifest.json`` where only that exists (the first where neither does)."""
    path, old = Path(folder) / MANIFEST, Path(folder) / OLD_MANIFEST
    return old if not path.is_file() and old.is_file() else path


def manifest_data(folder: Path):
    """The manifest's JSON as read (compressed or not), unchecked: ``read_manifest`` checks it."""
    path = manifest_path(folder)
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.name == MANIFEST else raw)


def write_manifest(folder: Path, manifest: Manifest) -> None:
    """``folder/manifest.json.gz``, whole or not at all, and an older report's ``manifest.json`` removed."""
    atomic_write_bytes(Path(folder) / MANIFEST, gzip.compress(manifest.to_json().encode(), mtime=0))
    (Path(folder) / OLD_MANIFEST).unlink(missing_ok=True)


def read_manifest(folder: Path) -> Manifest:
    """``folder/manifest.json.gz`` (or an older report's ``manifest.json``); PosbenchError in one line where
    it is missing or damaged."""
    path = manifest_path(folder)
    fix = ("restore it from git (git checkout -- <file>), regenerate the report from its runs, or convert a report "
           "written before manifests once with scripts/convert_manifests.py")
    if not path.is_file():
        raise PosbenchError(f"{str(folder)!r} has no {MANIFEST} (each run's config, the commands and the environment a "
                            f"rebuild reads); {fix}")
    try:
        data = manifest_data(folder)
    except (OSError, EOFError, UnicodeDecodeError, ValueError) as e:  # gzip.BadGzipFile is an OSError
        raise PosbenchError(f"cannot read {path}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}; "
                            f"{fix}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        got = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise PosbenchError(f"{path} is not a posbench report manifest of format {FORMAT} (format: {got!r}); {fix}")
    if missing := [k for k in FIELDS if k not in data]:
        raise PosbenchError(f"{path} lacks the field(s) {', '.join(missing)} a rebuild reads; {fix}")
    try:
        env = data["environment"]
        manifest = Manifest(
            configs={str(k): _text(v, "configs") for k, v in _mapping(data["configs"], "configs").items()},
            commands=[_text(c, "commands") for c in _list(data["commands"], "commands")],
            environment=pd.DataFrame([[_text(c, "environment") for c in _list(r, "environment")]
                                      for r in _list(env["rows"], "environment")],
                                     columns=[_text(c, "environment") for c in _list(env["columns"], "environment")]),
            joins=[Join(str(j["folder"]), int(j["runs"]), tuple(str(p) for p in _list(j["protocols"], "joins")),
                        int(j["records"]), int(j["added"]),
                        {str(e): float(d) for e, d in _mapping(j["differences"], "joins").items()},
                        {str(v): float(d) for v, d in _mapping(j.get("rescored", {}), "joins").items()})
                   for j in _list(data["joins"], "joins")],
            not_applicable=[_text(n, "not_applicable") for n in _list(data["not_applicable"], "not_applicable")],
            scored_text={str(name): _scored(info) for name, info in _mapping(data["scored_text"], "scored_text").items()})
    except (KeyError, TypeError, ValueError) as e:
        what = e.args[0] if isinstance(e, ValueError) and e.args and str(e.args[0]) in FIELDS else None
        where = f"field {what!r}" if what else f"a field ({type(e).__name__}: {e})"
        raise PosbenchError(f"{path}: {where} is not what format {FORMAT} holds (the module doc of "
                            f"posbench/report/records/manifest.py); {fix}") from None
    return manifest


def _mapping(v, name: str) -> dict:
    if not isinstance(v, dict):
        raise ValueError(name)
    return v


def _list(v, name: str) -> list:
    if not isinstance(v, list):
        raise ValueError(name)
    return v


def _text(v, name: str) -> str:
    if not isinstance(v, str):
        raise ValueError(name)
    return v


def _scored(info) -> dict:
    info = _mapping(info, "scored_text")
    out = {k: ([int(d) for d in _list(info[k], "scored_text")] if k == "docs" else int(info[k]))
           for k in SCORED_FIELDS if k in info}
    if not {"docs", "tokens", "documents_in_split"} <= set(out):
        raise ValueError("scored_text")
    return out
