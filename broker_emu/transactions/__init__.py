"""Transactions: the coordinator (``coordinator``) and the markers it writes (``markers``). Their
wire handlers are broker_emu/handlers/transactions.py and transaction_listings.py (above the
cluster), and what each partition knows of them is broker_emu/partition_txns.py, beside the
partition that holds it."""
