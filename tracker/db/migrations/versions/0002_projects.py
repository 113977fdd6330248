"""projects and the runs linked to their stages

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-09 10:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "project",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("source", sa.String(), nullable=False),
        sa.Column("base_dir", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "project_link",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("variant", sa.String(), nullable=False),
        sa.Column("stage", sa.String(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(), nullable=False),
        sa.Column("card", sa.String(), nullable=True),
        sa.Column("linked_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["project_id"], ["project.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("project_id", "variant", "stage", "run_id"),
    )
    with op.batch_alter_table("project_link", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_project_link_project_id"), ["project_id"],
                              unique=False)
        batch_op.create_index(batch_op.f("ix_project_link_run_id"), ["run_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("project_link", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_project_link_run_id"))
        batch_op.drop_index(batch_op.f("ix_project_link_project_id"))
    op.drop_table("project_link")
    op.drop_table("project")
