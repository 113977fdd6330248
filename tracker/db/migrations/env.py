"""Alembic environment: runs revisions on the engine the store hands over."""

from alembic import context

from tracker.db.schema import Table

config = context.config
target_metadata = Table.metadata


def run_migrations_online() -> None:
    engine = config.attributes["engine"]
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


run_migrations_online()
