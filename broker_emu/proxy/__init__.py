"""Proxy mode: the emulator's fault engine, control API, scenario fault files and trace in front
of any Kafka cluster (a real Apache Kafka, or the emulator). See docs/proxy.md.

    from broker_emu.proxy.proxy import open_proxy, run_proxy_in_thread

    async with open_proxy("127.0.0.1:9092") as proxy:
        print(proxy.bootstrap)            # one local listener per upstream broker

    with run_proxy_in_thread("127.0.0.1:9092") as tp:   # for blocking code
        print(tp.bootstrap)

Imports nothing, as every package ``__init__`` here (broker_emu/__init__.py says why).
"""
