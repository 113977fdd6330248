"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-12-02 15:24:38.120339
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source_key", sa.String(), nullable=False),
        sa.Column("content_key", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("format", sa.String(), nullable=False),
        sa.Column("source_path", sa.String(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ingested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("notes", sa.String(), nullable=False),
        sa.Column("user", sa.String(), nullable=False),
        sa.Column("host", sa.String(), nullable=False),
        sa.Column("last_data_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resumed_from", sa.String(), nullable=True),
        sa.Column("exclude_from_fit", sa.Boolean(), nullable=False),
        sa.Column("shape", sa.JSON(), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("summary", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("content_key"),
        sa.UniqueConstraint("source_key"),
    )
    with op.batch_alter_table("run", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_run_exclude_from_fit"), ["exclude_from_fit"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_run_format"), ["format"], unique=False)
        batch_op.create_index(batch_op.f("ix_run_name"), ["name"], unique=False)
        batch_op.create_index(batch_op.f("ix_run_started_at"), ["started_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_run_status"), ["status"], unique=False)

    op.create_table(
        "checkpoint",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("path", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=True),
        sa.Column("written_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("contents", sa.JSON(), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("note", sa.String(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "path"),
    )
    with op.batch_alter_table("checkpoint", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_checkpoint_run_id"), ["run_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_checkpoint_step"), ["step"], unique=False)

    op.create_table(
        "event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("message", sa.String(), nullable=False),
        sa.Column("wall_time", sa.Float(), nullable=True),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("event", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_event_run_id"), ["run_id"], unique=False)
        batch_op.create_index("ix_event_run_kind", ["run_id", "kind"], unique=False)

    op.create_table(
        "finding",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("severity", sa.String(), nullable=False),
        sa.Column("step_start", sa.BigInteger(), nullable=True),
        sa.Column("step_end", sa.BigInteger(), nullable=True),
        sa.Column("message", sa.String(), nullable=False),
        sa.Column("cause", sa.String(), nullable=False),
        sa.Column("remedy", sa.String(), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("finding", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_finding_kind"), ["kind"], unique=False)
        batch_op.create_index(batch_op.f("ix_finding_run_id"), ["run_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_finding_severity"), ["severity"], unique=False)

    op.create_table(
        "run_tag",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("tag", sa.String(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "tag"),
    )
    with op.batch_alter_table("run_tag", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_run_tag_tag"), ["tag"], unique=False)

    op.create_table(
        "series",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("original_name", sa.String(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("first_step", sa.BigInteger(), nullable=True),
        sa.Column("last_step", sa.BigInteger(), nullable=True),
        sa.Column("min", sa.Float(), nullable=True),
        sa.Column("max", sa.Float(), nullable=True),
        sa.Column("last", sa.Float(), nullable=True),
        sa.Column("first_nonfinite_step", sa.BigInteger(), nullable=True),
        sa.Column("has_wall_time", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "name"),
    )
    with op.batch_alter_table("series", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_series_name"), ["name"], unique=False)
        batch_op.create_index(batch_op.f("ix_series_run_id"), ["run_id"], unique=False)

    op.create_table(
        "source_file",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("path", sa.String(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("mtime", sa.Float(), nullable=False),
        sa.Column("sha256", sa.String(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "path"),
    )
    with op.batch_alter_table("source_file", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_source_file_path"), ["path"], unique=False)
        batch_op.create_index(batch_op.f("ix_source_file_run_id"), ["run_id"], unique=False)

    op.create_table(
        "series_chunk",
        sa.Column("series_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("steps", sa.LargeBinary(), nullable=False),
        sa.Column("values", sa.LargeBinary(), nullable=False),
        sa.Column("wall_time", sa.LargeBinary(), nullable=True),
        sa.ForeignKeyConstraint(["series_id"], ["series.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("series_id", "seq"),
    )


def downgrade() -> None:
    op.drop_table("series_chunk")
    with op.batch_alter_table("source_file", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_source_file_run_id"))
        batch_op.drop_index(batch_op.f("ix_source_file_path"))

    op.drop_table("source_file")
    with op.batch_alter_table("series", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_series_run_id"))
        batch_op.drop_index(batch_op.f("ix_series_name"))

    op.drop_table("series")
    with op.batch_alter_table("run_tag", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_run_tag_tag"))

    op.drop_table("run_tag")
    with op.batch_alter_table("finding", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_finding_severity"))
        batch_op.drop_index(batch_op.f("ix_finding_run_id"))
        batch_op.drop_index(batch_op.f("ix_finding_kind"))

    op.drop_table("finding")
    with op.batch_alter_table("event", schema=None) as batch_op:
        batch_op.drop_index("ix_event_run_kind")
        batch_op.drop_index(batch_op.f("ix_event_run_id"))

    op.drop_table("event")
    with op.batch_alter_table("checkpoint", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_checkpoint_step"))
        batch_op.drop_index(batch_op.f("ix_checkpoint_run_id"))

    op.drop_table("checkpoint")
    with op.batch_alter_table("run", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_run_status"))
        batch_op.drop_index(batch_op.f("ix_run_started_at"))
        batch_op.drop_index(batch_op.f("ix_run_name"))
        batch_op.drop_index(batch_op.f("ix_run_format"))
        batch_op.drop_index(batch_op.f("ix_run_exclude_from_fit"))

    op.drop_table("run")
