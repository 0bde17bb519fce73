"""``python -m eros`` runs the CLI (the same as the ``eros`` console script)."""

from eros.cli import main

main(prog_name="eros")
