"""Consent that lasts: ``forget --sensitive LABEL`` is a standing choice, and rows
written before 0018 get their labels.

- ``sensitivity_withheld``: one row per (user, label) not to be stored again — written by a
  ``sensitive`` erasure in its own transaction (``erasure_id`` names it), deleted when the
  product lifts it (``eros consent USER --allow LABEL`` / ``eros.allow_sensitive``). The
  extraction drops candidates with a withheld label of their user before anything is written.
- ``relabel_progress``: the cursor of ``eros relabel`` / ``eros.relabel_sensitivity`` (one row
  per labeller): the last memory id read in id order, the cut-off (rows created before the run
  began) and counts — committed with each batch, so a run that stops resumes where it was.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-05
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

S = "engine"
LABELS = "('health', 'crisis', 'sexuality', 'beliefs', 'ethnicity', 'biometric')"


def upgrade() -> None:
    op.create_table(
        "sensitivity_withheld",
        sa.Column("user_id", UUID(as_uuid=True), primary_key=True),
        sa.Column("label", sa.Text, primary_key=True),
        sa.Column("withheld_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
        sa.Column("erasure_id", sa.BigInteger, nullable=True),
        sa.CheckConstraint(f"label IN {LABELS}", name="ck_sensitivity_withheld_label"),
        schema=S,
    )
    op.create_table(
        "relabel_progress",
        sa.Column("labeller", sa.Text, primary_key=True),
        sa.Column("after_id", UUID(as_uuid=True), nullable=True),
        sa.Column("cutoff", sa.DateTime(timezone=True), nullable=False),
        sa.Column("scanned", sa.BigInteger, nullable=False, server_default=sa.text("0")),
        sa.Column("labelled", sa.BigInteger, nullable=False, server_default=sa.text("0")),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
        sa.Column("done_at", sa.DateTime(timezone=True), nullable=True),
        schema=S,
    )


def downgrade() -> None:
    op.drop_table("relabel_progress", schema=S)
    op.drop_table("sensitivity_withheld", schema=S)
