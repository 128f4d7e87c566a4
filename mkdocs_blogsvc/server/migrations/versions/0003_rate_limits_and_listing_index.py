"""Rate-limit counters shared by every process, and the index the listing and sync read.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rate_counters",
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("window_number", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("key", "window_number"),
    )
    op.create_index("ix_rate_counters_expires_at", "rate_counters", ["expires_at"])
    op.create_index("ix_articles_blog_listing", "articles", ["blog_id", "status", "published_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_articles_blog_listing", table_name="articles")
    op.drop_index("ix_rate_counters_expires_at", table_name="rate_counters")
    op.drop_table("rate_counters")
