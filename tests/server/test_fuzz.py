"""Random params to every custom method: always a result or a JSON-RPC error, never a crash/hang."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topicforest.server.protocol import BY_NAME, ERRORS, REQUESTS
from topicforest.server.stdio_client import RpcError, StdioClient
from topicforest.testing.stub_llm import ThreadedStubLLM

from .conftest import HANG, SAMPLE, SERVER_ENV

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, Any]:
    method = draw(st.sampled_from([m.name for m in REQUESTS]))
    known = [p.name for p in BY_NAME[method].params]
    plausible = st.one_of(json_values, st.integers(0, 12), st.sampled_from(["t1", "", "x" * 300]))
    params = draw(
        st.one_of(
            json_values,
            st.dictionaries(st.sampled_from(known or ["x"]), plausible, max_size=len(known) + 1),
        )
    )
    return method, params


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioClient]:
    with ThreadedStubLLM() as stub, StdioClient(env=SERVER_ENV) as client:
        folder: Path = tmp_path_factory.mktemp("fuzz")
        client.initialize(
            [folder],
            {
                "chatModel": "openai/stub",
                "apiBase": stub.base_url,
                "historyBudget": 256,
                "storePath": str(folder / ".store"),
            },
        )
        stub.script(*[text for role, text in SAMPLE[:24] if role == "assistant"])
        for index, (role, text) in enumerate(SAMPLE[:24]):
            if role == "user":
                client.request(
                    "topicForest/chat", {"threadId": "t1", "turnId": str(index), "message": text}
                )
        yield client


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(call=calls())
def test_random_params_get_a_result_or_a_documented_error(
    server: StdioClient, call: tuple[str, Any]
) -> None:
    method, params = call
    try:
        result = server.request(method, params, timeout=HANG)
    except RpcError as error:
        assert error.code in set(ERRORS.values()), (method, params, error)
        assert error.message
    else:
        assert isinstance(result, dict)
    assert server.alive()


def test_the_server_survived(server: StdioClient) -> None:
    assert "topics" in server.request("topicForest/listTopics", {})
