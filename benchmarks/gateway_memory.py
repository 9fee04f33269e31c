"""The gateway's memory over a session of large screenshots: does RSS plateau?

    python benchmarks/gateway_memory.py [--shots 100] [--mb 4] [--every 10]

`ctx-lsp gateway` runs as a separate process (as a user runs it) on the sample workspace, in front
of the fake upstream of the tests (in this process). Each request is a Claude Code-like session's
(Anthropic Messages, streamed, one system prompt) with a distinct screenshot of ``--mb`` MB (a PNG
header, random bytes: nothing repeats) and a question. Printed: the gateway's RSS before the
first request and after every ``--every`` requests. What the gateway keeps between requests (the
parse of each message seen, the last body of each conversation for the preview, the previous
request's cacheable part) is bounded in entries, bytes and age: RSS must level off.

Before (issue 33): 96 → 642 MB after 100 distinct 4 MB screenshots (the bytes of every message
were kept, up to 4,096 of them).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import struct
import sys
import tempfile
import time
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from gateway_latency import start_gateway, timed_stream  # noqa: E402
from index_speed import _loadavg  # noqa: E402
from lsp_client import status_mb  # noqa: E402

from tests.gateway.fake_upstream import FakeUpstream, Reply  # noqa: E402

FIXTURE = HERE.parent / "tests" / "fixtures" / "sample_ws"
MODEL = "claude-sonnet-4-5"


def screenshot(mb: float) -> str:
    """A distinct PNG of 1568 x 980 (its header), ``mb`` MB of random bytes behind it, as base64."""
    ihdr = b"IHDR" + struct.pack(">IIBBBBB", 1568, 980, 8, 6, 0, 0, 0)
    head = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + ihdr + struct.pack(">I", zlib.crc32(ihdr))
    return base64.b64encode(head + os.urandom(int(mb * 1_000_000 * 3 / 4))).decode()


def request(n: int, mb: float) -> bytes:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": screenshot(mb)}}
    body = {
        "model": MODEL,
        "max_tokens": 1024,
        "stream": True,
        "system": [{"type": "text", "text": "You are Claude Code. " * 50}],
        "messages": [{"role": "user", "content": [image, {"type": "text", "text": f"What is wrong here ({n})?"}]}],
    }
    return json.dumps(body).encode()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shots", type=int, default=100)
    ap.add_argument("--mb", type=float, default=4.0, help="size of each screenshot in the body (MB of base64)")
    ap.add_argument("--every", type=int, default=10)
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="ctx-gw-mem-"))
    workspace = tmp / "ws"
    shutil.copytree(FIXTURE, workspace)
    load_before = _loadavg()
    rows: list[tuple[int, float, float]] = []
    try:
        with FakeUpstream(reply="ok") as up:
            # a provider counts a screenshot at ~1,600 tokens (its base64 would be ~1M): the code
            # before issue 33 let such counts calibrate the estimator until every request overflowed
            up.set_default(Reply.text("ok", input_tokens=2_000))
            proc, url = start_gateway(workspace, up)
            try:
                rows.append((0, status_mb(proc.pid), 0.0))
                for n in range(1, args.shots + 1):
                    t0 = time.perf_counter()
                    timed_stream(url, request(n, args.mb))
                    took = (time.perf_counter() - t0) * 1000
                    up.requests.clear()  # the fake upstream keeps what it received: not what is measured
                    if n % args.every == 0:
                        rows.append((n, status_mb(proc.pid), took))
            finally:
                proc.terminate()
                proc.wait(10)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"gateway memory · {args.shots} distinct {args.mb:g} MB screenshots · {os.cpu_count()} cores · "
        f"load average before / after {load_before} / {_loadavg()}"
    )
    print(f"{'requests':>9} {'RSS MB':>8} {'last request ms':>16}")
    for n, rss, took in rows:
        print(f"{n:>9} {rss:>8.0f} {took:>16.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
