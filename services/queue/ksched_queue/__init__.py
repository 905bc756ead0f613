"""ksched queue service: kube-scheduler's scheduling queue (activeQ, backoffQ, unschedulable and
gated pods, queueing hints, in-flight events) served over NATS with leases. See docs/queue.md.

``priority_queue`` holds the pure queue, ``core`` maps bus messages onto it, ``service`` wires NATS,
``cli`` is ``ksched queue``.
"""
