"""The emulated Kafka cluster (server side).

    async with open_cluster(brokers=3, topics=[("orders", 3, 3)]) as cluster:
        print(cluster.bootstrap)

    with run_cluster_in_thread(brokers=3) as tc:   # for blocking code
        print(tc.bootstrap)
"""

from broker_emu.runtime import open_cluster, run_cluster_in_thread

__all__ = ["open_cluster", "run_cluster_in_thread"]
