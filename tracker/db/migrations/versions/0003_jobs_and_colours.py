"""runs as jobs (parts: other loggers, GPU samplers) and a stored colour per run

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-09 10:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_part",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("source_key", sa.String(), nullable=False),
        sa.Column("content_key", sa.String(), nullable=False),
        sa.Column("source_path", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("format", sa.String(), nullable=False),
        sa.Column("role", sa.String(), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("duplicates", sa.JSON(), nullable=False),
        sa.Column("note", sa.String(), nullable=False),
        sa.Column("ingested_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("content_key"),
        sa.UniqueConstraint("source_key"),
    )
    with op.batch_alter_table("run_part", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_run_part_run_id"), ["run_id"], unique=False)
    with op.batch_alter_table("run", schema=None) as batch_op:
        batch_op.add_column(sa.Column("colour", sa.String(), nullable=True))
        batch_op.add_column(sa.Column("kept_apart", sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
    with op.batch_alter_table("source_file", schema=None) as batch_op:
        batch_op.add_column(sa.Column("part_id", sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f("ix_source_file_part_id"), ["part_id"], unique=False)
        batch_op.create_foreign_key("fk_source_file_part_id", "run_part", ["part_id"], ["id"],
                                    ondelete="CASCADE")


def downgrade() -> None:
    with op.batch_alter_table("source_file", schema=None) as batch_op:
        batch_op.drop_constraint("fk_source_file_part_id", type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_source_file_part_id"))
        batch_op.drop_column("part_id")
    with op.batch_alter_table("run", schema=None) as batch_op:
        batch_op.drop_column("kept_apart")
        batch_op.drop_column("colour")
    with op.batch_alter_table("run_part", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_run_part_run_id"))
    op.drop_table("run_part")
