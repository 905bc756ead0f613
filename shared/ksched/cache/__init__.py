"""The scheduler cache shared by the informer (authoritative copy + assume ledger) and the
scheduler replicas (a replica applying the cache's versioned deltas)."""
