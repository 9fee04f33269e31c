"""Junk params for every ctx/ method: an error a person can act on, never an internal error, and
the server keeps serving. Params are drawn by hypothesis from JSON values shaped like each
method's params (its real field names with values of the wrong kind, and random keys)."""

from __future__ import annotations

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from ctx_lsp.server.protocol import REQUESTS
from tests.lsp.test_server import req

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
METHODS = sorted(REQUESTS)


def fields_of(method: str) -> list[str]:
    params_type = REQUESTS[method][0]
    return [f.encode_name for f in msgspec.structs.fields(params_type)]


@st.composite
def junk(draw):
    method = draw(st.sampled_from(METHODS))
    names = [*fields_of(method), "session", "x", "class"]
    params = draw(st.dictionaries(st.sampled_from(names), JSON, max_size=5))
    params = draw(st.one_of(st.just(params), JSON))
    return method, params


async def test_junk_params_never_break_the_server(client: LanguageClient):
    cases: list[tuple[str, object]] = []

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(junk())
    def collect(case):
        cases.append(case)

    collect()
    internal = []
    for method, params in cases:
        try:
            await client.protocol.send_request_async(method, params)
        except JsonRpcException as err:
            if err.code not in (-32602, -32001, -32002):
                internal.append((method, params, err.code, str(err)))
    assert not internal, internal[:3]
    assert (await req(client, "ctx/showBudget", {})).session  # still serving
