"""``eros ledger``: a small web application where a person sees what eros remembers
about a user, why (the turns each memory came from, its lineage, the guard's verdicts), and
erases it. Starlette + Jinja2 templates + uvicorn; no JavaScript at all (docs/ledger.md).

Needs the ``ledger`` extra (``pip install 'eros[ledger]'``); nothing else imports it.
"""
