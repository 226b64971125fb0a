"""How a report's figure is stored: a 256-colour PNG (the one place that says so; plot.save writes
every drawn figure through it, and a rebuilt report re-encodes an older report's kept figures once)."""

from __future__ import annotations

import io
from pathlib import Path

from posbench.core.files import atomic_write_bytes


def palette_png(data: bytes) -> bytes:
    """A PNG as a 256-colour one (Pillow's median cut refined by one k-means pass, no dithering). Why:
    report.html embeds every figure, and the committed reports travel with the repository (to a GPU
    machine under a size limit); a figure's bytes fall to about a third, and the lines' colours stay
    within 3 levels of 255 of matplotlib's (measured on results/hybrids' window curves). A PNG already
    in palette mode is returned as it is, so encoding twice changes nothing."""
    from PIL import Image  # matplotlib's own dependency

    image = Image.open(io.BytesIO(data))
    if image.mode == "P":
        return data
    quantized = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, kmeans=1,
                                              dither=Image.Dither.NONE)
    out = io.BytesIO()
    quantized.save(out, format="PNG", optimize=True)
    return out.getvalue()


# a figure's vector copy (posbench-report --vector): a PDF, about a sixth of an SVG's bytes (results/quick's
# ppl_vs_length: PDF 33 kB, SVG 191 kB, its PNG 65 kB; ratio_heatmap: PDF 20 kB, SVG 65 kB, PNG 15 kB). Off by
# default: at half to 1.4 times its PNG's bytes, a PDF of each of the ~130 figures the committed reports hold
# (7.8 MiB of PNG) would add some 4 to 11 MiB to a repository kept under a size limit
VECTOR_SUFFIX = ".pdf"


def vector_path(path: Path) -> Path:
    """Where a figure's vector copy lies: beside its PNG, the same stem."""
    return Path(path).with_suffix(VECTOR_SUFFIX)


def keep_figure(source: Path, target: Path) -> None:
    """An older report's figure kept (never redrawn) at ``target``: re-encoded once as figures are stored
    now; nothing is written where ``target`` is ``source`` and already so encoded."""
    data = source.read_bytes()
    if (compact := palette_png(data)) != data or source.resolve() != target.resolve():
        atomic_write_bytes(target, compact)
