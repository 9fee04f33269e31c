"""Junk params for every ctx/ method: an error a person can act on, never an internal error, and
the server keeps serving. Params are drawn by hypothesis from JSON values shaped like each
method's params (its real field names with values of the wrong kind, and random keys)."""

from __future__ import annotations

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from ctx_lsp.server.protocol import MAX_SAFE_INTEGER, REQUESTS
from tests.lsp.test_server import req

# integers up to the edges of (and past) JSON's safe range, 64-bit and beyond
EXTREME = st.sampled_from([2**53 - 1, -(2**53 - 1), 2**53, 2**63, -(2**63) - 1, 2**64, 10**30, -(10**30)])
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | EXTREME
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
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


async def test_numbers_at_the_edge_of_range_never_break_the_server(client: LanguageClient):
    """Every field of every method at ±(2**53 − 1), the largest accepted integer: served, or
    refused with an error a person can act on, never an internal error."""
    base = {
        "ctx/planContext": {"query": "x"},
        "ctx/pinSymbol": {"symbol": "shop.inventory.Product"},
        "ctx/unpin": {"pinId": "pin:x"},
        "ctx/appendMessages": {"messages": [{"role": "user", "content": "x"}]},
        "ctx/reportUsage": {"planId": "p", "inputTokens": 1, "outputTokens": 1},
        "ctx/replayPlan": {"planId": "p"},
        "ctx/setMode": {"mode": "light"},
        "ctx/branch": {"fromMessageId": "m"},
        "ctx/undoReflection": {"id": 1},
        "ctx/restoreItem": {"itemId": "i"},
    }
    nested = {
        "position": {"line": MAX_SAFE_INTEGER, "character": MAX_SAFE_INTEGER},
        "focus": {"uri": "file:///nowhere.py", "position": {"line": MAX_SAFE_INTEGER, "character": 0}},
        "extraPins": [{"symbol": "shop.inventory.Product", "ttl": MAX_SAFE_INTEGER, "priority": -MAX_SAFE_INTEGER}],
    }
    internal = []
    for method in METHODS:
        for name in fields_of(method):
            values = [nested[name]] if name in nested else [MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 0.5e308]
            for value in values:
                params = {**base.get(method, {}), name: value}
                try:
                    await client.protocol.send_request_async(method, params)
                except JsonRpcException as err:
                    if err.code not in (-32602, -32001, -32002):
                        internal.append((method, params, err.code, str(err)))
    assert not internal, internal[:3]
    assert (await req(client, "ctx/showBudget", {})).session


async def test_an_empty_conversation_name_is_refused_and_the_session_stays(client: LanguageClient):
    # hypothesis found it: ``ctx/setActiveConversation {"session": ""}`` made "" the server's session
    before = (await req(client, "ctx/showBudget", {})).session
    try:
        await client.protocol.send_request_async("ctx/setActiveConversation", {"session": ""})
    except JsonRpcException as err:
        assert err.code == -32602
    else:
        raise AssertionError("an empty conversation name was accepted")
    assert (await req(client, "ctx/showBudget", {})).session == before != ""
