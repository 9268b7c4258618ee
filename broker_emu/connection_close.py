"""How a handler or a fault says "close this connection instead of answering": its own small
module because the fault pipeline (below the handlers in the import graph) raises it too."""


class CloseConnection(Exception):
    """Raised by a handler when the broker must close the connection instead of answering
    (e.g. a failed acks=0 produce, as Kafka's KafkaApis.handleProduceRequest does)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)
