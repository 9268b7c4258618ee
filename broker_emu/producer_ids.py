"""Producer ids and their epochs, as the coordinator hands them out (InitProducerId); the
sequences live per partition, in its log (``broker_emu.producer_state``)."""

from __future__ import annotations


class ProducerIds:
    def __init__(self, first: int = 1000):
        self.next_producer_id = first
        # producer id -> its latest epoch (Produce fences older ones, transactions bump it)
        self.epochs: dict[int, int] = {}

    def init(self, producer_id: int = -1, epoch: int = -1) -> tuple[int, int]:
        """A known producer id gets its next epoch; anything else a new id at epoch 0."""
        if producer_id >= 0 and producer_id in self.epochs:
            self.epochs[producer_id] += 1
            return producer_id, self.epochs[producer_id]
        pid = self.next_producer_id
        self.next_producer_id += 1
        self.epochs[pid] = 0
        return pid, 0
