"""The client's API keys (in memory only) and the test of a model, in plain words."""

from __future__ import annotations

from typing import TYPE_CHECKING

from topicforest.server import wire
from topicforest.server.protocol import PREFIX
from topicforest.server.results import model_check_json
from topicforest.server.rpc import Host, request
from topicforest.server.validation import invalid_params
from topicforest.workspace.keys import ApiKeys
from topicforest.workspace.settings import check_api_base

if TYPE_CHECKING:
    from topicforest.server.server import TopicForestServer


def setup(server: TopicForestServer) -> None:
    request(server, PREFIX + "setApiKeys")(set_api_keys)
    request(server, PREFIX + "testModel")(test_model)


def set_api_keys(ls: Host, p: wire.SetApiKeysParams) -> wire.SetApiKeysResult:
    ls.workspaces.set_keys(ApiKeys.of(p.keys))
    return {"count": len(p.keys)}


async def test_model(ls: Host, p: wire.TestModelParams) -> wire.TestModelResult:
    memory = ls.workspaces.resolve(p.workspace_uri)
    if p.api_base:  # as the apiBase setting: an http(s) URL without a credential
        try:
            check_api_base(p.api_base)
        except ValueError as exc:
            raise invalid_params("apiBase", str(exc)) from exc
    return model_check_json(await memory.test_model(p.model, p.api_base))
