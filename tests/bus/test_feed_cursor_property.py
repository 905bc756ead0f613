"""The feed contract under random interleavings (issue 16): an informer model publishes pending-pod
events (most change no snapshot generation), snapshot changes, answers bootstraps taken at a stream
sequence, restarts with a new epoch; a consumer following with :class:`FeedCursor` sees messages in
stream order with redeliveries and takes a new bootstrap whenever the cursor says RESYNC. Once the
stream is drained, the consumer holds exactly the informer's pending pods."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.bus.feed import FeedCursor, FeedVerdict


@dataclass
class Message:
    seq: int
    epoch: str
    generation: int
    uid: str
    added: bool


@dataclass
class InformerModel:
    """The informer's pending set, its cache generation and the feed stream it publishes to."""

    epoch: str = "e0"
    generation: int = 0
    pending: set[str] = field(default_factory=set)
    stream: list[Message] = field(default_factory=list)
    restarts: int = 0

    def publish(self, uid: str, added: bool) -> None:
        if added:
            self.pending.add(uid)
        else:
            self.pending.discard(uid)
        self.stream.append(Message(len(self.stream) + 1, self.epoch, self.generation, uid, added))

    def snapshot_change(self) -> None:
        self.generation += 1

    def restart(self) -> None:
        """A new leader: new epoch, a generation counted from scratch, the same pending pods."""
        self.restarts += 1
        self.epoch, self.generation = f"e{self.restarts}", 0

    def bootstrap(self) -> tuple[set[str], FeedCursor]:
        """Taken at the stream's last sequence: every message at or below it is reflected."""
        return set(self.pending), FeedCursor(epoch=self.epoch, stream_seq=len(self.stream))


@dataclass
class Consumer:
    held: set[str]
    cursor: FeedCursor
    delivered: int  # the next message the ordered consumer delivers is stream[delivered]
    bootstraps: int = 0

    def take_bootstrap(self, informer: InformerModel) -> None:
        self.held, self.cursor = informer.bootstrap()
        self.delivered = self.cursor.stream_seq
        self.bootstraps += 1

    def receive(self, informer: InformerModel, message: Message) -> None:
        verdict = self.cursor.check(message.epoch, message.seq)
        if verdict == FeedVerdict.APPLY:
            (self.held.add if message.added else self.held.discard)(message.uid)
        elif verdict == FeedVerdict.RESYNC:
            self.take_bootstrap(informer)


STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("pod"), st.integers(0, 5), st.booleans()),
        st.tuples(st.just("snapshot"), st.just(0), st.just(False)),
        st.tuples(st.just("deliver"), st.integers(1, 4), st.just(False)),
        st.tuples(st.just("redeliver"), st.integers(1, 3), st.just(False)),
        st.tuples(st.just("bootstrap"), st.just(0), st.just(False)),
        st.tuples(st.just("restart"), st.just(0), st.just(False)),
    ),
    max_size=60,
)


def run(steps: list[tuple[str, int, bool]]) -> tuple[InformerModel, Consumer]:
    informer = InformerModel()
    consumer = Consumer(set(), FeedCursor(), 0)
    consumer.take_bootstrap(informer)
    for kind, n, flag in steps:
        if kind == "pod":
            informer.publish(f"uid-{n}", flag)
        elif kind == "snapshot":
            informer.snapshot_change()
        elif kind == "restart":
            informer.restart()
        elif kind == "bootstrap":
            consumer.take_bootstrap(informer)
        elif kind == "redeliver":
            for message in informer.stream[max(0, consumer.delivered - n) : consumer.delivered]:
                consumer.receive(informer, message)
        else:
            for _ in range(n):
                if consumer.delivered < len(informer.stream):
                    consumer.delivered += 1
                    consumer.receive(informer, informer.stream[consumer.delivered - 1])
    while consumer.delivered < len(informer.stream):  # drain
        consumer.delivered += 1
        consumer.receive(informer, informer.stream[consumer.delivered - 1])
    return informer, consumer


@settings(max_examples=400, deadline=None)
@given(STEPS)
def test_the_consumer_converges_on_the_informers_pending_pods(steps: list[tuple[str, int, bool]]) -> None:
    informer, consumer = run(steps)
    assert consumer.held == informer.pending


def test_a_pod_created_after_a_bootstrap_in_a_quiet_cluster_is_applied() -> None:
    """The case of issue 16: no snapshot change between the bootstrap and the pod's event."""
    _, consumer = run([("bootstrap", 0, False), ("pod", 1, True)])
    assert consumer.held == {"uid-1"} and consumer.bootstraps == 2


def test_a_restarted_informer_is_followed_after_one_more_bootstrap() -> None:
    _, consumer = run([("pod", 1, True), ("restart", 0, False), ("pod", 2, True), ("pod", 1, False)])
    assert consumer.held == {"uid-2"} and consumer.bootstraps == 2
