"""KIP-932 share groups: membership, share partitions and their record locks, share sessions."""
