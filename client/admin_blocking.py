"""The blocking face of our admin client: ``client.Admin`` runs an ``AsyncAdmin`` on its own trio
thread (kafka_common/trio_thread.py) and each call blocks until the async call's outcome — by its own
deadline, so a call never blocks longer than its ``timeout``.

    with client.Admin({"bootstrap.servers": "127.0.0.1:9092"}) as admin:
        admin.create_topics([NewTopic("orders", 3, 1)], timeout=10)
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from client.admin import AsyncAdmin, open_admin
from client.exceptions import NetworkThreadDied
from client.transport import Connect
from kafka_common.trio_thread import TrioThread

CALLS = ("create_topics", "delete_topics", "create_partitions", "delete_records", "describe_configs",
         "incremental_alter_configs", "describe_cluster", "delete_groups", "create_acls", "describe_acls", "delete_acls",
         "elect_leaders", "alter_partition_reassignments", "list_partition_reassignments", "describe_log_dirs",
         "delete_group_offsets", "describe_client_quotas", "alter_client_quotas", "describe_user_scram_credentials",
         "alter_user_scram_credentials", "list_share_group_offsets", "alter_share_group_offsets",
         "delete_share_group_offsets")


class Admin:
    def __init__(self, config: Mapping[str, Any], connect: Connect | None = None, **admin_kwargs: Any):
        self._config, self._connect, self._kwargs = dict(config), connect, admin_kwargs
        self._admin: AsyncAdmin | None = None
        self._error: BaseException | None = None
        self._runner = TrioThread("broker-emu-admin-network", self._run, self._exited)
        self._runner.start()
        if self._admin is None:
            raise NetworkThreadDied(f"the admin client did not start: {self._error}")

    async def _run(self) -> None:
        async with open_admin(self._config, self._connect, **self._kwargs) as admin:
            self._admin = admin
            await self._runner.until_stopped()

    def _exited(self, error: BaseException | None) -> None:
        self._error = error

    def __getattr__(self, name: str) -> Any:
        if name not in CALLS:
            raise AttributeError(name)
        admin = self._admin

        def call(*args: Any, **kwargs: Any) -> Any:
            if not self._runner.is_alive() or admin is None:
                raise NetworkThreadDied(f"the admin client's network thread has ended ({self._error})")
            return self._runner.run(functools.partial(getattr(admin, name), *args, **kwargs))

        return call

    def close(self) -> None:
        self._runner.stop()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
