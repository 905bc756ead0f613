"""``ksched ui``: a live web page of the cluster, the queue and each pod's scheduling attempts, built
from the bus alone (snapshot deltas, the queue's listing, trace events). See docs/ui.md."""
