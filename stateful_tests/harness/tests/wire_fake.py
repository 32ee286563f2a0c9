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
            answer = {"v": 1, "id": number, "kind": "hello", "implementation": f"wire_fake {mode}",
                      "capabilities": {"dump": False, "rank_removal": False, "early_exit": True}}
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
