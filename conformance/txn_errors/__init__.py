"""The transaction error-class table (KIP-1050): ``cases`` (the generated scenarios and the
classifier), ``table`` (the table and the command); ``python -m conformance.txn_errors``."""
