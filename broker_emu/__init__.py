"""The emulated Kafka cluster (server side). Start one from ``broker_emu.runtime``:

    from broker_emu.runtime import open_cluster, run_cluster_in_thread

    async with open_cluster(brokers=3, topics=[("orders", 3, 3)]) as cluster:
        print(cluster.bootstrap)

    with run_cluster_in_thread(brokers=3) as tc:   # for blocking code
        print(tc.bootstrap)

This ``__init__`` imports nothing: it runs before every module of the package, so a re-export
here would load the whole emulator for any one of its modules (and put them all in one import
cycle; tests/structure/test_layers.py).
"""
