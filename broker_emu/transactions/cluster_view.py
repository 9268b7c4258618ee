"""What the transaction coordinator and its markers need of the cluster, as Protocols: this
package depends on them, never on ``broker_emu.cluster`` (which builds the coordinator)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Protocol

if TYPE_CHECKING:
    from broker_emu.partition import Partition
    from broker_emu.scheduler import Scheduler
    from broker_emu.trace import Trace


class MarkerLog(Protocol):
    """Where a marker is appended: the wall clock it is stamped with, and the step every append
    takes (followers, high watermark)."""

    def wall_ms(self) -> int: ...
    def after_append(self, p: "Partition", previous_leo: int) -> None: ...


class TxnOffsetGroups(Protocol):
    """The group coordinator's side of a transaction's offsets."""

    def end_txn_offsets(self, group_id: str, producer_id: int, commit: bool) -> None: ...


class TxnCluster(MarkerLog, Protocol):
    @property
    def config(self) -> Mapping[str, Any]: ...
    @property
    def scheduler(self) -> "Scheduler": ...
    @property
    def trace(self) -> "Trace": ...
    @property
    def groups(self) -> TxnOffsetGroups: ...
    @property
    def producer_epochs(self) -> dict[int, int]: ...

    def now_ms(self) -> float: ...
    def is_alive(self, broker_id: int) -> bool: ...
    def partition(self, topic: str, index: int) -> "Partition | None": ...
    def offsets_partition_leader(self, p: int) -> int: ...
    def init_producer_id(self, producer_id: int = -1, epoch: int = -1) -> tuple[int, int]: ...
