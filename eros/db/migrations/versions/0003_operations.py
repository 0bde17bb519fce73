"""Operations: cost per run, an index for in-flight claims, cost views.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

S = "engine"

COST_DAILY = f"""
CREATE VIEW {S}.dreaming_cost_daily AS
SELECT date_trunc('day', finished_at) AS day,
       count(DISTINCT session_id) AS sessions,
       count(*) AS runs,
       sum(prompt_tokens) AS prompt_tokens,
       sum(completion_tokens) AS completion_tokens,
       sum(embedding_tokens) AS embedding_tokens,
       sum(cost_usd) AS cost_usd
  FROM {S}.classification_runs
 GROUP BY 1
"""

COST_PER_SESSION = f"""
CREATE VIEW {S}.dreaming_cost_per_session AS
SELECT session_id, user_id, count(*) AS runs, sum(cost_usd) AS cost_usd,
       max(finished_at) AS last_run_at
  FROM {S}.classification_runs
 GROUP BY session_id, user_id
"""

# The figure the product needs: what dreaming costs per active user per month, estimated from
# the last 30 days (users with at least one classification run in that window).
COST_PER_USER_MONTH = f"""
CREATE VIEW {S}.dreaming_cost_per_user_month AS
SELECT user_id, sum(cost_usd) AS cost_usd_30d, count(DISTINCT session_id) AS sessions_30d
  FROM {S}.classification_runs
 WHERE finished_at > now() - interval '30 days'
 GROUP BY user_id
"""


def upgrade() -> None:
    op.add_column("classification_runs", sa.Column(
        "cost_usd", sa.Numeric(14, 8), nullable=False, server_default=sa.text("0")), schema=S)
    op.create_index("ix_chat_sessions_claimed", "chat_sessions", ["classification_claimed_at"],
                    schema=S, postgresql_where=sa.text("claim_token IS NOT NULL"))
    op.execute(COST_DAILY)
    op.execute(COST_PER_SESSION)
    op.execute(COST_PER_USER_MONTH)


def downgrade() -> None:
    op.execute(f"DROP VIEW IF EXISTS {S}.dreaming_cost_per_user_month")
    op.execute(f"DROP VIEW IF EXISTS {S}.dreaming_cost_per_session")
    op.execute(f"DROP VIEW IF EXISTS {S}.dreaming_cost_daily")
    op.drop_index("ix_chat_sessions_claimed", table_name="chat_sessions", schema=S)
    op.drop_column("classification_runs", "cost_usd", schema=S)
