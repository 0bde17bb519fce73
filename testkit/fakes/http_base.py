"""Shared plumbing for the local fake HTTP API servers used in tests and benchmarks.

A :class:`FakeHTTPServer` wraps a ``ThreadingHTTPServer`` bound to 127.0.0.1 on an
ephemeral port, served from a daemon thread.  Before normal handling every API
request passes through a scriptable fault pipeline (latency -> down -> one-shot
fault queue -> random failure rate).  ``/_fake/*`` control endpoints let a parent
process script a server that runs as a separate process (see :func:`serve_main`).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import signal
import socket
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

from testkit.fakes.exchange import Fault, RecordedRequest, Response

__all__ = ["FakeHTTPServer", "Fault", "RecordedRequest", "Response", "serve_main"]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512
    fake: FakeHTTPServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY: the handler writes the headers and the body in separate sends; with Nagle
    # on, the body waits for the client's delayed ACK of the headers on a kept-alive
    # connection, adding ~40 ms to every response (measured: 48 ms -> 7 ms at zero latency).
    disable_nagle_algorithm = True
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.fake._track(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self._serve("POST")

    def do_GET(self) -> None:
        self._serve("GET")

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake = self.server.fake
        try:
            resp = fake._route(method, urlsplit(self.path).path, headers, raw)
        except Exception as exc:  # a bug in a fake must surface, not hang the client
            traceback.print_exc(file=sys.stderr)
            resp = fake._error(500, f"fake server error: {exc!r}")
        if resp is None:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        try:
            self.send_response(resp.status)
            self.send_header("Content-Type", resp.content_type)
            self.send_header("Content-Length", str(len(resp.body)))
            for name, value in resp.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(resp.body)
        except OSError:  # client went away (e.g. it timed out first)
            self.close_connection = True


class FakeHTTPServer:
    """Base class: subclasses set ``api_paths`` and implement ``handle``/``error_body``."""

    api_paths: tuple[str, ...] = ()

    def __init__(
        self, *, host: str = "127.0.0.1", port: int = 0, latency: float = 0.0, seed: int = 0
    ) -> None:
        self._addr = (host, port)
        self._lock = threading.RLock()
        self._faults: deque[Fault] = deque()
        self._requests: list[RecordedRequest] = []
        self._latency = latency
        self._down = False
        self._fail_p = 0.0
        self._fail_status = 500
        self._fail_retry_after: float | None = None
        self._rng = random.Random(seed)
        self._seed = seed
        self._stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self._ids = itertools.count(1)
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle -------------------------------------------------------
    def start(self) -> Self:
        if self._httpd is None:
            httpd = _Server(self._addr, _Handler)
            httpd.fake = self
            self._httpd = httpd
            self._thread = threading.Thread(
                target=httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"{type(self).__name__}:{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()  # wakes hanging / sleeping handlers
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=2)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        host = self._addr[0] if self._addr[0] not in ("", "0.0.0.0") else "127.0.0.1"
        return f"http://{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.root_url}/v1"

    # ---- inspection ------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def last_request(self) -> RecordedRequest | None:
        with self._lock:
            return self._requests[-1] if self._requests else None

    @property
    def pending_faults(self) -> int:
        with self._lock:
            return len(self._faults)

    # ---- scripting -------------------------------------------------------
    def script(self, faults: Iterable[Fault]) -> None:
        with self._lock:
            self._faults.extend(faults)

    def set_latency(self, seconds: float) -> None:
        with self._lock:
            self._latency = max(0.0, seconds)

    def set_down(self, down: bool = True) -> None:
        with self._lock:
            self._down = down

    def fail_rate(
        self,
        p: float,
        status: int = 500,
        *,
        seed: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        """Fail each non-scripted request with probability ``p`` (seeded RNG)."""
        with self._lock:
            self._fail_p, self._fail_status, self._fail_retry_after = p, status, retry_after
            self._rng = random.Random(self._seed if seed is None else seed)

    def reset(self) -> None:
        """Forget requests and every scripted/persistent fault."""
        with self._lock:
            self._faults.clear()
            self._requests.clear()
            self._latency, self._down, self._fail_p = 0.0, False, 0.0
            self._rng = random.Random(self._seed)

    def configure(self, cfg: dict[str, Any]) -> None:
        """Apply a JSON config (used by ``POST /_fake/config``); subclasses may extend."""
        if "latency" in cfg:
            self.set_latency(float(cfg["latency"]))
        if "down" in cfg:
            self.set_down(bool(cfg["down"]))
        if "fail_rate" in cfg:
            ra = cfg.get("retry_after")
            self.fail_rate(
                float(cfg["fail_rate"]),
                int(cfg.get("fail_status", 500)),
                seed=cfg.get("seed"),
                retry_after=None if ra is None else float(ra),
            )
        if "faults" in cfg:
            self.script(Fault.from_dict(f) for f in cfg["faults"])

    # ---- subclass hooks --------------------------------------------------
    def error_body(self, status: int, message: str) -> Any:
        return {"error": {"message": message}}

    def handle(self, req: RecordedRequest) -> Response | None:
        raise NotImplementedError

    # ---- internals -------------------------------------------------------
    def sleep(self, seconds: float) -> None:
        """Interruptible sleep: returns early when the server stops."""
        if seconds > 0:
            self._stopping.wait(seconds)

    def next_id(self) -> int:
        return next(self._ids)

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    def _error(
        self, status: int, message: str | None = None, retry_after: float | None = None
    ) -> Response:
        if status == 429 and retry_after is None:
            retry_after = 1
        headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
        try:
            default = HTTPStatus(status).phrase
        except ValueError:
            default = f"HTTP {status}"
        return Response.of_json(status, self.error_body(status, message or default), headers)

    def _control(self, method: str, path: str, raw: bytes) -> Response:
        if path == "/_fake/health":
            return Response.of_json(200, {"ok": True})
        if path == "/_fake/stats":
            return Response.of_json(
                200, {"request_count": self.request_count, "pending_faults": self.pending_faults}
            )
        if method == "POST" and path == "/_fake/reset":
            self.reset()
            return Response.of_json(200, {"ok": True})
        if method == "POST" and path == "/_fake/config":
            self.configure(json.loads(raw or b"{}"))
            return Response.of_json(200, {"ok": True})
        return self._error(404, f"unknown control endpoint {path}")

    def _route(
        self, method: str, path: str, headers: dict[str, str], raw: bytes
    ) -> Response | None:
        path = path.rstrip("/") or "/"
        if path.startswith("/_fake/"):
            return self._control(method, path, raw)
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        req = RecordedRequest(method, path, headers, body, raw, time.time())
        with self._lock:
            self._requests.append(req)
            latency, down = self._latency, self._down
            fault = None if down else (self._faults.popleft() if self._faults else None)
            failing = not down and self._fail_p > 0
            if fault is None and failing and self._rng.random() < self._fail_p:
                fault = Fault.status(self._fail_status, retry_after=self._fail_retry_after)
        self.sleep(latency)
        if down:
            return self._error(503, "service unavailable (fake server is down)")
        if fault is not None:
            if fault.kind == "status":
                return self._error(fault.status_code, fault.message, fault.retry_after)
            if fault.kind == "echo":
                return self._error(fault.status_code, f"invalid input: {_echoed(body, raw)}")
            if fault.kind == "raw":
                return Response(fault.status_code, (fault.body or "").encode(), fault.content_type)
            if fault.kind in ("drop", "hang"):
                self.sleep(fault.seconds)
                return None
            self.sleep(fault.seconds)  # "delay" (and "ok" with 0 s) fall through
        if path not in self.api_paths:
            return self._error(404, f"unknown path {path}")
        if method != "POST":
            return self._error(405, f"method {method} not allowed")
        if not isinstance(body, dict):
            return self._error(400, "request body must be a JSON object")
        return self.handle(req)


def _echoed(body: Any, raw: bytes) -> str:
    """What an echoing server quotes: the end of the last chat message (where it stopped
    reading), the texts to embed, or the raw body."""
    if isinstance(body, dict):
        messages = body.get("messages")
        if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
            return "…" + str(messages[-1].get("content"))[-200:]
        if "input" in body:
            return json.dumps(body["input"], ensure_ascii=False)[:2000]
    return raw.decode("utf-8", errors="replace")[:2000]


def serve_main(
    name: str,
    factory: Callable[[argparse.Namespace], FakeHTTPServer],
    argv: Sequence[str] | None = None,
    add_args: Callable[[argparse.ArgumentParser], None] | None = None,
) -> int:
    """Run a fake as a standalone process until SIGTERM/SIGINT; prints the port."""
    parser = argparse.ArgumentParser(prog=name)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--port-file", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fail-rate", type=float, default=0.0)
    parser.add_argument("--fail-status", type=int, default=500)
    if add_args is not None:
        add_args(parser)
    args = parser.parse_args(argv)
    server = factory(args).start()
    if args.fail_rate > 0:
        server.fail_rate(args.fail_rate, args.fail_status, seed=args.seed)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    if args.port_file:
        tmp = f"{args.port_file}.tmp{os.getpid()}"
        with open(tmp, "w") as fh:
            fh.write(f"{server.port}\n")
        os.replace(tmp, args.port_file)
    print(server.port, flush=True)
    print(f"{name} listening on {server.url}", file=sys.stderr, flush=True)
    try:
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0
