"""Transactions: the coordinator (``coordinator``), its handlers (``handlers``), the markers it
writes (``markers``) and what each partition knows of them (``partition_state``)."""
