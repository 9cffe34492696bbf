/**
 * Mocha root hooks: a test file must leave nothing running (timer, socket, server, child process) when it ends.
 * Without `exit: true` such a handle would keep the run from ending; this names it and fails the file instead.
 */
import type { RootHookObject } from 'mocha';

let before: Map<string, number>;

// Under coverage (c8 sets NODE_V8_COVERAGE) a parallel worker writes its coverage as it exits. The pool kills a worker
// that has not exited 1 s after being told to, which loses that coverage when many workers write at once on few
// cores; a signal then only asks it to finish exiting.
if (process.env.NODE_V8_COVERAGE) process.on('SIGTERM', () => process.exit());

function count(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1);
  return counts;
}

export const mochaHooks: RootHookObject = {
  // Async like afterAll, so that both counts include mocha's time-out timer for the hook.
  async beforeAll() {
    await Promise.resolve();
    before = count();
  },
  async afterAll() {
    // Closing sockets and servers finish on the next turns of the event loop.
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setTimeout(resolve, 10));
    const left = [...count()]
      .filter(([type, n]) => n > (before.get(type) ?? 0))
      .map(([type, n]) => `${n - (before.get(type) ?? 0)} × ${type}`);
    if (left.length > 0) throw new Error(`left running after the tests: ${left.join(', ')}`);
  },
};
