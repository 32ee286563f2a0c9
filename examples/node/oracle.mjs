// kvproof's reference as the oracle of a test suite that is not Python: Node.js, no npm package.
//
// It starts `kvproof serve --stdio --target reference` (docs/protocol.md), says hello, makes a tree, applies Dynamo
// RouterEvents to it and asserts the scores and typed errors a KV-aware router's index must give. Any other command
// that speaks the protocol may be served instead, as the arguments:
//
//   node examples/node/oracle.mjs                                   # kvproof serve --stdio --target reference
//   node examples/node/oracle.mjs python -m kvproof serve --stdio --target reference
//
// Exit status 0 when every assertion holds, 1 at the first that does not (said on stderr), 2 when the server fails.

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

const VERSION = 1;
const command = process.argv.length > 2 ? process.argv.slice(2) : ["kvproof", "serve", "--stdio", "--target", "reference"];
const server = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const waiting = new Map(); // request id -> resolve
let nextId = 1;

createInterface({ input: server.stdout }).on("line", (line) => {
  const answer = JSON.parse(line);
  const resolve = waiting.get(answer.id);
  waiting.delete(answer.id);
  if (resolve) resolve(answer);
});
server.on("exit", (code) => {
  if (waiting.size) fail(2, `the server exited (status ${code}) with ${waiting.size} requests unanswered`);
});
const timer = setTimeout(() => fail(2, "no answer within 30 s"), 30_000);

function fail(status, message) {
  console.error(`oracle.mjs: ${message}`);
  server.kill();
  process.exit(status);
}

// One request; several may be in flight at once (each has its own id).
function ask(op, fields = {}, version = VERSION) {
  const id = nextId++;
  return new Promise((resolve) => {
    waiting.set(id, resolve);
    server.stdin.write(JSON.stringify({ v: version, id, op, ...fields }) + "\n");
  });
}

// A store of blocks [local hash, external hash], under `parent` (an external hash) or at the root.
function stored(eventId, blocks, parent = null) {
  const list = blocks.map(([local, ext]) => ({ block_hash: ext, tokens_hash: local }));
  return JSON.stringify({ event_id: eventId, data: { stored: { parent_hash: parent, blocks: list } }, dp_rank: 0 });
}

function removed(eventId, hashes) {
  return JSON.stringify({ event_id: eventId, data: { removed: { block_hashes: hashes } }, dp_rank: 0 });
}

function expect(what, got, want) {
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    fail(1, `${what}: expected ${JSON.stringify(want)}, the served tree answered ${JSON.stringify(got)}`);
  }
  console.log(`ok  ${what}`);
}

async function scores(tree, sequence) {
  const answer = await ask("find_matches", { tree, sequence });
  if (answer.kind !== "scores") fail(1, `find_matches answered ${JSON.stringify(answer)}`);
  return answer.scores; // [worker_id, dp_rank, score], sorted
}

const hello = await ask("hello");
expect("the handshake speaks version 1", [hello.kind, hello.v], ["hello", VERSION]);
const refused = await ask("hello", {}, 99);
expect("a request of version 99 is refused", [refused.kind, refused.error], ["error", "UnsupportedVersion"]);

const { tree } = await ask("open");
const chain = [[1, 101], [2, 102], [3, 103], [4, 104], [5, 105], [6, 106]];
const applied = await Promise.all([ // two workers' stores in flight at once
  ask("apply_event", { tree, worker_id: 1, event: stored(1, chain) }),
  ask("apply_event", { tree, worker_id: 2, event: stored(1, chain.slice(0, 2)) }),
]);
expect("both stores are accepted", applied.map((a) => a.kind), ["done", "done"]);
expect("the whole prefix scores per worker", await scores(tree, [1, 2, 3, 4, 5, 6, 7]), [[1, 0, 6], [2, 0, 2]]);
expect("a prefix no worker holds scores nothing", await scores(tree, [9, 1]), []);

const orphan = await ask("apply_event", { tree, worker_id: 2, event: stored(2, [[8, 108]], 999) });
expect("a store under a parent the worker does not hold is refused", [orphan.kind, orphan.error],
  ["error", "ParentBlockNotFound"]);
const garbage = await ask("apply_event", { tree, worker_id: 1, event: "not json" });
expect("a malformed event is refused", [garbage.kind, garbage.error], ["error", "MalformedEvent"]);

await ask("apply_event", { tree, worker_id: 1, event: removed(3, [105, 106]) });
expect("an eviction of the tail shortens the worker's prefix", await scores(tree, [1, 2, 3, 4, 5, 6]), [[1, 0, 4], [2, 0, 2]]);
await ask("remove_worker", { tree, worker_id: 2 });
expect("a removed worker is credited nothing", await scores(tree, [1, 2]), [[1, 0, 2]]);

clearTimeout(timer);
server.stdin.end();
console.log("oracle.mjs: every assertion held");
