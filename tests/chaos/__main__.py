"""``python -m tests.chaos [--long] [--only NAME,…] [--rabbitmq] [--soak]``: run the chaos
scenarios (or the soak), print a table. ``--rabbitmq`` runs each scenario a second time with
the machine's RabbitMQ as the broker (BROKER_URL, a vhost of its own), in the same run.

The default is what CI runs (1,000 sessions, 3 workers per scenario); ``--long`` drains 5,000
sessions with 4 workers per scenario.
"""

from __future__ import annotations

import argparse
import sys

from testkit.chaos.harness import Servers, run, table
from testkit.chaos.scenarios import SCENARIOS
from testkit.rabbit import RabbitVhost, unavailable_reason


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__)
    parser.add_argument("--long", action="store_true", help="5,000 sessions, 4 workers")
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    parser.add_argument("--rabbitmq", action="store_true",
                        help="also run each scenario with RabbitMQ (127.0.0.1:5672) as broker")
    parser.add_argument("--soak", action="store_true",
                        help="run the soak instead (a product writing while workers classify)")
    args = parser.parse_args(argv)
    if args.soak:
        from tests.chaos.soak import soak

        servers = Servers()
        try:
            outcome = soak(servers)
        finally:
            servers.close()
        print(outcome)
        return 0 if outcome.ok else 1
    if args.rabbitmq and (reason := unavailable_reason()):
        print(f"--rabbitmq: {reason}", file=sys.stderr)
        return 2
    names = [n for n in args.only.split(",") if n] or [n for n in SCENARIOS if n != "baseline"]
    sessions, workers = (5000, 4) if args.long else (1000, 3)
    results = []
    servers = Servers()
    try:
        for name in names:
            for broker in ("redis", "rabbitmq") if args.rabbitmq else ("redis",):
                rabbit = RabbitVhost("eros-chaos") if broker == "rabbitmq" else None
                try:
                    result = run(f"{name}@{broker}" if args.rabbitmq else name,
                                 SCENARIOS[name], servers, sessions=sessions, workers=workers,
                                 timeout=900 if args.long else 240, rabbit=rabbit)
                finally:
                    if rabbit is not None:
                        rabbit.close()
                results.append(result)
                print(table([result]).splitlines()[-1], "  ", "; ".join(result.events),
                      flush=True)
    finally:
        servers.close()
    print()
    print(table(results))
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
