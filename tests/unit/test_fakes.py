"""The HTTP fakes, exercised through the real ``openai`` and ``voyageai`` SDKs."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
import voyageai.error as verr
from voyageai.client import Client as VoyageClient
from voyageai.client_async import AsyncClient as AsyncVoyageClient

from testkit.fakes import (
    FakeLLMServer,
    FakeVoyageServer,
    Fault,
    Reply,
    extract_memories,
    hash_embedding,
)
from testkit.fakes.voyage_server import quantize

ROOT = Path(__file__).resolve().parents[2]
MODEL = "voyage-3.5-lite"


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture
def voyage() -> Iterator[FakeVoyageServer]:
    with FakeVoyageServer() as srv:
        yield srv


def _client(srv: FakeLLMServer, **kw: Any) -> openai.OpenAI:
    opts: dict[str, Any] = {"max_retries": 0, "timeout": 2.0} | kw
    return openai.OpenAI(base_url=srv.url, api_key="test", **opts)


def _chat(client: openai.OpenAI, text: str, **kw: Any) -> Any:
    return client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": text}], **kw
    )


def _vclient(srv: FakeVoyageServer, **kw: Any) -> VoyageClient:
    opts: dict[str, Any] = {"max_retries": 1, "timeout": 2.0} | kw
    return VoyageClient(api_key="test", base_url=srv.url, **opts)


def _post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = json.dumps(body).encode()
    hdrs = {"Content-Type": "application/json"} | (headers or {})
    req = urllib.request.Request(url, data=data, headers=hdrs, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


# ---------------------------------------------------------------- LLM fake
TRANSCRIPT = """system: be nice
user: MEM fact 0.8 lives in Shanghai
assistant: MEM fact 0.9 this must be ignored
user: hello there
[2024-05-01 10:00] user: MEM preference 0.35 likes green tea
MEM goal 1 run a marathon"""


def test_echo_memories_via_openai(llm: FakeLLMServer) -> None:
    resp = _chat(_client(llm), TRANSCRIPT)
    assert resp.object == "chat.completion"
    assert resp.model == "fake-model"
    assert resp.choices[0].finish_reason == "stop"
    assert json.loads(resp.choices[0].message.content or "") == {
        "memories": [
            {"content": "lives in Shanghai", "category": "fact", "importance": 0.8},
            {"content": "likes green tea", "category": "preference", "importance": 0.35},
            {"content": "run a marathon", "category": "goal", "importance": 1.0},
        ]
    }
    usage = resp.usage
    assert usage is not None and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.prompt_tokens == len(TRANSCRIPT) // 4
    rec = llm.last_request
    assert rec is not None and rec.path == "/v1/chat/completions"
    assert rec.headers["authorization"] == "Bearer test"
    assert rec.body["messages"][0]["content"] == TRANSCRIPT
    assert llm.request_count == 1


def test_only_last_user_message_is_read(llm: FakeLLMServer) -> None:
    msgs: Any = [
        {"role": "user", "content": "MEM fact 0.1 old"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": "user: MEM fact 0.2 new"}]},
    ]
    resp = _client(llm).chat.completions.create(model="m", messages=msgs)
    assert json.loads(resp.choices[0].message.content or "")["memories"][0]["content"] == "new"


def test_extract_memories_line_rules() -> None:
    text = "Assistant: MEM a 0.5 x\nI said MEM a 0.5 nope\nuser:MEM b .5 yes\nMEM c bad value"
    assert extract_memories(text) == [{"content": "yes", "category": "b", "importance": 0.5}]


def test_rate_limit_has_retry_after(llm: FakeLLMServer) -> None:
    llm.script([Fault.status(429, retry_after=1)])
    with pytest.raises(openai.RateLimitError) as info:
        _chat(_client(llm), "hi")
    assert info.value.response.headers["retry-after"] == "1"
    assert info.value.code == "rate_limit_exceeded"
    assert _chat(_client(llm), "hi").choices[0].finish_reason == "stop"  # queue consumed


def test_retries_recover_after_scripted_429s(llm: FakeLLMServer) -> None:
    llm.script([Fault.status(429, retry_after=0.01)] * 2)
    resp = _chat(_client(llm, max_retries=2), "MEM fact 0.5 ok")
    assert json.loads(resp.choices[0].message.content or "")["memories"][0]["content"] == "ok"
    assert llm.request_count == 3


def test_drop_is_connection_error(llm: FakeLLMServer) -> None:
    llm.script([Fault.drop()])
    with pytest.raises(openai.APIConnectionError) as info:
        _chat(_client(llm), "hi")
    assert not isinstance(info.value, openai.APITimeoutError)


def test_hang_is_timeout(llm: FakeLLMServer) -> None:
    llm.script([Fault.hang(5)])
    start = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        _chat(_client(llm, timeout=0.5), "hi")
    assert time.monotonic() - start < 4.5  # the client gave up before the 5 s hang ended


def test_server_errors_and_down(llm: FakeLLMServer) -> None:
    client = _client(llm)
    llm.script([Fault.status(500), Fault.status(400, message="bad prompt")])
    with pytest.raises(openai.InternalServerError):
        _chat(client, "hi")
    with pytest.raises(openai.BadRequestError, match="bad prompt"):
        _chat(client, "hi")
    llm.set_down(True)
    with pytest.raises(openai.InternalServerError) as info:
        _chat(client, "hi")
    assert info.value.status_code == 503
    llm.set_down(False)
    assert _chat(client, "hi").choices[0].finish_reason == "stop"


def test_truncate_token_respects_budget(llm: FakeLLMServer) -> None:
    client = _client(llm)
    cut = _chat(client, "MEM fact 0.5 x\nREPLY_TRUNCATE", max_tokens=1000)
    assert cut.choices[0].finish_reason == "length"
    with pytest.raises(json.JSONDecodeError):
        json.loads(cut.choices[0].message.content or "")
    for key in ("max_tokens", "max_completion_tokens"):
        full = _chat(client, "MEM fact 0.5 x\nREPLY_TRUNCATE", **{key: 4000})
        assert full.choices[0].finish_reason == "stop"
        assert json.loads(full.choices[0].message.content or "")["memories"][0]["content"] == "x"


def test_garbage_fenced_empty_slow_tokens(llm: FakeLLMServer) -> None:
    client = _client(llm)
    with pytest.raises(json.JSONDecodeError):
        json.loads(_chat(client, "REPLY_GARBAGE").choices[0].message.content or "")
    fenced = _chat(client, "MEM fact 0.5 x\nREPLY_FENCED").choices[0].message.content or ""
    assert "```json\n" in fenced and not fenced.startswith("{")
    inner = fenced.split("```json\n", 1)[1].split("```", 1)[0]
    assert json.loads(inner)["memories"][0]["content"] == "x"
    empty = _chat(client, "MEM fact 0.5 x\nREPLY_EMPTY").choices[0].message.content or ""
    assert json.loads(empty) == {"memories": []}
    start = time.monotonic()
    _chat(client, "SLOW 250")
    assert time.monotonic() - start >= 0.25


def test_script_replies_and_custom_responder(llm: FakeLLMServer) -> None:
    client = _client(llm)
    llm.script_replies([Reply("first", completion_tokens=7), Reply("cut", finish_reason="length")])
    one, two, three = (_chat(client, "MEM fact 0.5 x") for _ in range(3))
    assert one.choices[0].message.content == "first" and one.usage.completion_tokens == 7
    assert two.choices[0].finish_reason == "length"
    assert json.loads(three.choices[0].message.content or "")["memories"]
    llm.set_responder(lambda req: Reply(f"model={req['model']}"))
    assert _chat(client, "x").choices[0].message.content == "model=fake-model"


def test_stream_rejected_and_bare_path(llm: FakeLLMServer) -> None:
    with pytest.raises(openai.BadRequestError, match="stream"):
        _chat(_client(llm), "hi", stream=True)
    bare = openai.OpenAI(base_url=llm.root_url, api_key="t", max_retries=0, timeout=2)
    assert _chat(bare, "hi").choices[0].finish_reason == "stop"
    assert llm.last_request is not None and llm.last_request.path == "/chat/completions"


def test_fail_rate_is_seeded(llm: FakeLLMServer) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}

    def pattern() -> list[int]:
        llm.fail_rate(0.5, 502, seed=7)
        return [_post(f"{llm.url}/chat/completions", body)[0] for _ in range(12)]

    first = pattern()
    assert set(first) == {200, 502}
    assert pattern() == first


def test_latency_runs_requests_concurrently(llm: FakeLLMServer) -> None:
    llm.set_latency(0.3)

    async def run() -> list[Any]:
        async with openai.AsyncOpenAI(base_url=llm.url, api_key="t", max_retries=0) as client:
            calls = [
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "MEM fact 0.5 x"}]
                )
                for _ in range(16)
            ]
            return await asyncio.gather(*calls)

    start = time.monotonic()
    results = asyncio.run(run())
    elapsed = time.monotonic() - start
    # served concurrently: one after another would take 16 × 0.3 = 4.8 s
    assert len(results) == 16 and 0.3 <= elapsed < 4.0


def test_control_endpoints(llm: FakeLLMServer) -> None:
    cfg = {"faults": [Fault.status(429).to_dict()], "replies": [{"content": "scripted"}]}
    assert _post(f"{llm.root_url}/_fake/config", cfg)[0] == 200
    client = _client(llm)
    with pytest.raises(openai.RateLimitError):
        _chat(client, "hi")
    assert _chat(client, "hi").choices[0].message.content == "scripted"
    with urllib.request.urlopen(f"{llm.root_url}/_fake/stats") as resp:
        assert json.loads(resp.read())["request_count"] == 2


# ------------------------------------------------------------- Voyage fake
def test_embed_matches_vectorizer(voyage: FakeVoyageServer) -> None:
    texts = ["user lives in Shanghai", "likes green tea", "user lives in Shanghai"]
    result = _vclient(voyage).embed(texts, model=MODEL, input_type="document", output_dimension=512)
    assert [len(v) for v in result.embeddings] == [512] * 3
    for text, vec in zip(texts, result.embeddings, strict=True):
        assert vec == pytest.approx(hash_embedding(text, 512), abs=1e-6)
    assert result.embeddings[0] == result.embeddings[2]
    assert result.total_tokens == sum(len(t) // 4 for t in texts)
    body = voyage.last_request.body if voyage.last_request else {}
    assert body["encoding_format"] == "base64" and body["input_type"] == "document"


def test_hash_embedding_properties() -> None:
    a = hash_embedding("the user lives in Shanghai", 256)
    b = hash_embedding("user lives in Shanghai China", 256)
    c = hash_embedding("favourite colour is blue", 256)
    assert math.isclose(_cos(a, a), 1.0, rel_tol=1e-9)
    assert _cos(a, b) > 0.5 > _cos(a, c)
    assert hash_embedding("", 8) == [1.0] + [0.0] * 7


def test_embed_default_dim_dtypes_and_wrong_dim(voyage: FakeVoyageServer) -> None:
    client = _vclient(voyage)
    assert len(client.embed(["x"], model=MODEL).embeddings[0]) == 512
    assert len(client.embed(["x"], model=MODEL, output_dimension=256).embeddings[0]) == 256
    int8 = client.embed(["hello"], model=MODEL, output_dtype="int8").embeddings[0]
    assert int8 == quantize(hash_embedding("hello", 512), "int8")
    assert len(client.embed(["hello"], model=MODEL, output_dtype="ubinary").embeddings[0]) == 64
    voyage.wrong_dim = 100
    assert len(client.embed(["x"], model=MODEL, output_dimension=512).embeddings[0]) == 100


def test_embed_float_list_and_base64_wire(voyage: FakeVoyageServer) -> None:
    auth = {"Authorization": "Bearer k"}
    status, plain = _post(f"{voyage.url}/embeddings", {"input": "hi", "model": MODEL}, auth)
    assert status == 200 and plain["object"] == "list"
    assert plain["data"][0]["embedding"] == pytest.approx(hash_embedding("hi", 512), abs=1e-6)
    body = {"input": ["hi"], "model": MODEL, "encoding_format": "base64"}
    _, b64 = _post(f"{voyage.root_url}/embeddings", body, auth)
    raw = base64.b64decode(b64["data"][0]["embedding"])
    assert list(struct.unpack("<512f", raw)) == plain["data"][0]["embedding"]
    status, err = _post(f"{voyage.url}/embeddings", {"input": ["hi"], "model": MODEL})
    assert status == 401 and "detail" in err


@pytest.mark.parametrize(
    ("status", "exc"),
    [
        (500, verr.ServerError),
        (429, verr.RateLimitError),
        (503, verr.ServiceUnavailableError),
        (400, verr.InvalidRequestError),
        (401, verr.AuthenticationError),
    ],
)
def test_voyage_status_errors(voyage: FakeVoyageServer, status: int, exc: type[Exception]) -> None:
    voyage.script([Fault.status(status)])
    with pytest.raises(exc):
        _vclient(voyage).embed(["x"], model=MODEL)


def test_voyage_validation_drop_hang_down(voyage: FakeVoyageServer) -> None:
    client = _vclient(voyage)
    with pytest.raises(verr.InvalidRequestError, match="input_type"):
        client.embed(["x"], model=MODEL, input_type="bogus")
    voyage.script([Fault.drop()])
    with pytest.raises(verr.APIConnectionError):
        client.embed(["x"], model=MODEL)
    voyage.script([Fault.hang(5)])
    with pytest.raises(verr.Timeout):
        _vclient(voyage, timeout=0.5).embed(["x"], model=MODEL)
    voyage.set_down(True)
    with pytest.raises(verr.ServiceUnavailableError):
        client.embed(["x"], model=MODEL)


def test_voyage_async_client(voyage: FakeVoyageServer) -> None:
    async def run() -> Any:
        client = AsyncVoyageClient(api_key="t", base_url=voyage.url, timeout=2)
        return await client.embed(["async text"], model=MODEL, output_dimension=128)

    result = asyncio.run(run())
    assert result.embeddings[0] == pytest.approx(hash_embedding("async text", 128), abs=1e-6)


# -------------------------------------------------------------- standalone
@pytest.mark.parametrize("module", ["testkit.fakes.llm_server", "testkit.fakes.voyage_server"])
def test_standalone_process(module: str, tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    cmd = [sys.executable, "-m", module, "--port", "0", "--latency-ms", "20"]
    proc = subprocess.Popen(
        [*cmd, "--port-file", str(port_file)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        assert int(port_file.read_text()) == port
        url = f"http://127.0.0.1:{port}/v1"
        if module.endswith("llm_server"):
            client = openai.OpenAI(base_url=url, api_key="t", max_retries=0, timeout=5)
            out = _chat(client, "MEM fact 0.5 standalone").choices[0].message.content or ""
            assert json.loads(out)["memories"][0]["content"] == "standalone"
        else:
            vc = VoyageClient(api_key="t", base_url=url, timeout=5)
            assert len(vc.embed(["x"], model=MODEL, output_dimension=64).embeddings[0]) == 64
    finally:
        proc.terminate()
        assert proc.wait(timeout=5) == 0
