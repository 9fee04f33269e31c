"""A small client for an OpenAI-compatible chat-completions endpoint (summaries, capsules).

Standard library only (urllib): one POST per call, a timeout, retries with exponential backoff
on timeouts, connection errors, 429 and 5xx, and errors that say what went wrong. The API key is
read from the environment variable named in the configuration, never from a file.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from ctx_lsp.config import LlmEndpoint

# What a text sent to the endpoint is counted in to fit its window: the endpoint's model is not
# one the registry knows, and cl100k_base is the encoding always available offline.
WINDOW_ENCODING = "cl100k_base"


class LlmError(RuntimeError):
    """The endpoint could not give an answer; the message says why (for the fallback note)."""


@dataclass(frozen=True, slots=True)
class ChatClient:
    endpoint: LlmEndpoint
    backoff_seconds: float = 0.5

    def complete(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        url = self.endpoint.base_url.rstrip("/") + "/chat/completions"
        body = json.dumps(
            {"model": self.endpoint.model, "messages": messages, "max_tokens": max_tokens, "temperature": 0}
        ).encode()
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.endpoint.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        last = "no attempt made"
        for attempt in range(self.endpoint.retries + 1):
            if attempt:
                time.sleep(self.backoff_seconds * 2 ** (attempt - 1))
            try:
                request = urllib.request.Request(url, data=body, headers=headers, method="POST")
                with urllib.request.urlopen(request, timeout=self.endpoint.timeout_seconds) as response:
                    payload = response.read()
            except urllib.error.HTTPError as err:
                last = f"HTTP {err.code} from {url}"
                if err.code == 429 or err.code >= 500:
                    continue
                raise LlmError(last) from None
            except (TimeoutError, urllib.error.URLError, OSError) as err:
                reason = getattr(err, "reason", err)
                last = f"no answer from {url} within {self.endpoint.timeout_seconds:g} s ({reason})"
                continue
            return _content_of(payload, url)
        raise LlmError(f"{last}, after {self.endpoint.retries + 1} attempts")


def _content_of(payload: bytes, url: str) -> str:
    try:
        data: Any = json.loads(payload)
        content = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise LlmError(f"{url} answered with something that is not a chat completion") from None
    if not isinstance(content, str) or not content.strip():
        raise LlmError(f"{url} answered with an empty completion")
    return content.strip()
