"""Whether the Hugging Face hub can be reached: corpora (``data.source=hub``) and hub tokenizers
(``data.tokenizer=hub``) ask it once before they try, so that a machine without the network gets one
line naming the alternatives rather than a long timeout."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlparse


def _hub_reachable(timeout: float = 3.0) -> bool:
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def _force_hub_offline() -> None:
    """Switch the hub clients to offline mode so a missing dataset fails at once, not after retries."""
    import datasets
    import huggingface_hub

    os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
    datasets.config.HF_HUB_OFFLINE = True
    huggingface_hub.constants.HF_HUB_OFFLINE = True
