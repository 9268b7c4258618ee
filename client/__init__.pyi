"""The public face of ``client`` for type checkers (``__init__.py`` loads each name on first use)."""

from client.admin import AsyncAdmin as AsyncAdmin
from client.admin import NewTopic as NewTopic
from client.admin import open_admin as open_admin
from client.admin_blocking import Admin as Admin
from client.admin_share import ShareOffset as ShareOffset
from client.consumer.async_consumer import AsyncConsumer as AsyncConsumer
from client.consumer.async_consumer import open_consumer as open_consumer
from client.consumer.blocking import Consumer as Consumer
from client.consumer.records import ConsumerRecord as ConsumerRecord
from client.consumer.records import TopicPartition as TopicPartition
from client.exceptions import ConnectionClosedError as ConnectionClosedError
from client.exceptions import ConnectionSetupTimeoutException as ConnectionSetupTimeoutException
from client.exceptions import DeliveryTimeoutException as DeliveryTimeoutException
from client.exceptions import MaxBlockTimeoutException as MaxBlockTimeoutException
from client.exceptions import NetworkThreadDied as NetworkThreadDied
from client.exceptions import RequestTimeoutException as RequestTimeoutException
from client.producer.async_producer import AsyncProducer as AsyncProducer
from client.producer.async_producer import open_producer as open_producer
from client.producer.batch import DeliveryFuture as DeliveryFuture
from client.producer.batch import RecordMetadata as RecordMetadata
from client.producer.blocking import Producer as Producer
from client.share.acknowledgements import AcknowledgeType as AcknowledgeType
from client.share.acknowledgements import ShareRecord as ShareRecord
from client.share.blocking import ShareConsumer as ShareConsumer
from client.share.consumer import AsyncShareConsumer as AsyncShareConsumer
from client.share.consumer import open_share_consumer as open_share_consumer

__all__ = ["AcknowledgeType", "Admin", "AsyncAdmin", "AsyncConsumer", "AsyncProducer", "AsyncShareConsumer", "ConnectionClosedError", "ConnectionSetupTimeoutException", "Consumer", "ConsumerRecord", "DeliveryFuture", "DeliveryTimeoutException", "MaxBlockTimeoutException", "NetworkThreadDied", "NewTopic", "Producer", "RecordMetadata", "RequestTimeoutException", "ShareConsumer", "ShareOffset", "ShareRecord", "TopicPartition", "open_admin", "open_consumer", "open_producer", "open_share_consumer"]
