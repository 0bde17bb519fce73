"""The machine's RabbitMQ (127.0.0.1:5672, guest/guest) as a test broker: each user of
it gets a vhost of its own (``rabbitmqctl add_vhost``), deleted afterwards; a restart is
``rabbitmqctl stop_app`` / ``start_app`` (the node stays up, every connection is cut, the
quorum queues come back from their logs)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
import uuid

HOST, PORT = "127.0.0.1", 5672


def unavailable_reason() -> str | None:
    """Why the RabbitMQ tests cannot run here, or None when they can."""
    if shutil.which("rabbitmqctl") is None:
        return "rabbitmqctl is not on PATH (RabbitMQ is not installed on this machine)"
    with socket.socket() as sock:
        sock.settimeout(2)
        if sock.connect_ex((HOST, PORT)) != 0:
            return f"RabbitMQ does not answer on {HOST}:{PORT}"
    return None


#: the Erlang VM that each ``rabbitmqctl`` call boots, without its schedulers' busy waiting
#: (RabbitMQ's own server default, not its CLI's): spinning threads of a short-lived VM
#: compete with the one doing the work — 44.8 -> 11.2 s a call at nice 19 on a loaded
#: 2-core machine, 2-5 -> 1-3 s unloaded. Set RABBITMQ_CTL_ERL_ARGS to override.
CTL_ERL_ARGS = "+sbwt none +sbwtdcpu none +sbwtdio none"


def ctl(*args: str, timeout: float = 60) -> str:
    env = {**os.environ,
           "RABBITMQ_CTL_ERL_ARGS": os.environ.get("RABBITMQ_CTL_ERL_ARGS", CTL_ERL_ARGS)}
    done = subprocess.run(["rabbitmqctl", *args], capture_output=True, text=True,
                          timeout=timeout, check=False, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"rabbitmqctl {' '.join(args)}: {done.stderr.strip()[:500]}")
    return done.stdout


class RabbitVhost:
    """A vhost of the machine's RabbitMQ for one test run, with guest's permissions."""

    def __init__(self, prefix: str = "eros-test") -> None:
        self.vhost = f"{prefix}-{uuid.uuid4().hex[:8]}"
        ctl("add_vhost", self.vhost)
        ctl("set_permissions", "-p", self.vhost, "guest", ".*", ".*", ".*")

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@{HOST}:{PORT}/{self.vhost}"

    def queues(self) -> dict[str, dict[str, str]]:
        """name -> {type, messages, unacked} of the vhost's queues."""
        out = ctl("list_queues", "-p", self.vhost, "--quiet", "--no-table-headers",
                  "name", "type", "messages_ready", "messages_unacknowledged")
        found = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 4:
                found[parts[0]] = {"type": parts[1], "messages": parts[2], "unacked": parts[3]}
        return found

    def restart(self, downtime: float = 2.0) -> None:
        """Stop the RabbitMQ application (all its connections are cut), stay down, start it."""
        ctl("stop_app")
        try:
            time.sleep(downtime)
        finally:  # never leave the machine's broker stopped
            ctl("start_app", timeout=120)
        ctl("await_startup", timeout=120)
        deadline = time.monotonic() + 60
        while unavailable_reason() is not None and time.monotonic() < deadline:
            time.sleep(0.2)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError):
            ctl("delete_vhost", self.vhost)
