"""The offline runner's own parts: the namespace, the DNS sink, the strace reader."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.gateway.netns import netns_unavailable, parse_strace, run_offline

STRACE = """\
101 connect(17, {sa_family=AF_INET, sin_port=htons(18080), sin_addr=inet_addr("127.0.0.1")}, 16) = -1 EINPROGRESS (x)
101 connect(4, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT (No such file or directory)
102 connect(5, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("192.0.2.7")}, 16) = -1 ENETUNREACH (x)
103 sendto(6, "\\x12", 1, 0, {sa_family=AF_INET6, sin6_port=htons(53), sin6_flowinfo=htonl(0), \
inet_pton(AF_INET6, "2001:db8::1", &sin6_addr), sin6_scope_id=0}, 28) = -1 ENETUNREACH (x)
"""


def test_parse_strace_keeps_only_non_loopback() -> None:
    assert parse_strace(STRACE) == [
        "connect 192.0.2.7:443 -> ENETUNREACH",
        "sendto 2001:db8::1:53 -> ENETUNREACH",
    ]


def test_dns_lookups_are_logged_and_fail_at_once(tmp_path: Path) -> None:
    reason = netns_unavailable()
    if reason:
        pytest.skip(reason)
    lookup = (
        "import socket\ntry:\n    socket.getaddrinfo('probe.example.invalid', 443)\nexcept OSError as e:\n    print(e)"
    )
    r = run_offline([sys.executable, "-c", lookup], tmp_path, timeout=30)
    assert r.rc == 0, r.summary()
    assert "probe.example.invalid A" in r.dns or "probe.example.invalid AAAA" in r.dns, r.summary()
    assert r.seconds < 5
    assert [q["path"] for q in r.requests] == []
