"""A misbehaving implementation of the wire protocol, for the containment tests: ``python wire_fake.py MODE``.

It answers the handshake and ``open`` properly, then every other request as ``MODE`` says:
``garbage`` (a line that is not JSON), ``v2`` (an answer of protocol version 2), ``stranger`` (an answer to a
request id never sent), ``exit`` (it exits with status 3, saying why on stderr).
"""

import json
import sys


def main(mode: str) -> None:
    for line in sys.stdin:
        request = json.loads(line)
        number = request["id"]
        if request["op"] == "hello":
            answer = {
                "v": 1,
                "id": number,
                "kind": "hello",
                "implementation": f"wire_fake {mode}",
                "capabilities": {"dump": False, "rank_removal": False, "early_exit": True},
            }
        elif request["op"] == "open":
            answer = {"v": 1, "id": number, "kind": "opened", "tree": 1}
        elif mode == "garbage":
            print("this is not a protocol message", flush=True)
            continue
        elif mode == "v2":
            answer = {"v": 2, "id": number, "kind": "done"}
        elif mode == "stranger":
            answer = {"v": 1, "id": number + 1000, "kind": "done"}
        else:
            print("wire_fake: exiting as asked", file=sys.stderr, flush=True)
            sys.exit(3)
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])


def _waits_for_a_read(apply, seen, seconds):
    """``apply`` that first waits up to ``seconds`` for a read to run (``seen``), and fails when none did."""

    def applied(worker_id, event):
        if not seen.wait(seconds):
            raise RuntimeError("no read ran while the event was in flight")
        return apply(worker_id, event)

    return applied


def lanes_reading_during_writes():
    """A concurrent tree (2 lanes) whose events wait for a read to run meanwhile: served concurrently, they do."""
    import threading

    from kvproof.impl.radix_tree import ConcurrentRadixTree

    class LanesReadingDuringWrites(ConcurrentRadixTree):
        def __init__(self):
            super().__init__(lanes=2)
            self.seen = threading.Event()

        def lane(self, index):
            handle = super().lane(index)
            waiting = type(
                "WaitingHandle", (), {"apply_event": staticmethod(_waits_for_a_read(handle.apply_event, self.seen, 5))}
            )
            return waiting()

        def find_matches(self, sequence, early_exit=False):
            self.seen.set()
            return super().find_matches(sequence, early_exit)

    return LanesReadingDuringWrites()


def reference_reading_during_writes():
    """The control: the reference with the same wait; served one request at a time, no read can run meanwhile."""
    import threading

    from kvproof.reference import RadixTree

    class ReferenceReadingDuringWrites(RadixTree):
        def __init__(self):
            super().__init__()
            self.seen = threading.Event()
            self.apply_event = _waits_for_a_read(super().apply_event, self.seen, 0.5)

        def find_matches(self, sequence, early_exit=False):
            self.seen.set()
            return super().find_matches(sequence, early_exit)

    return ReferenceReadingDuringWrites()
