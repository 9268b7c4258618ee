"""Fault injection: one model (``rules``), one decision engine (``engine``), three fronts
(Python on the cluster, YAML scenario files, the HTTP control API), and short names for common
rules (``named``: latency, jitter, bandwidth, timeout, reset, slow-close, error, black-hole)."""
