/**
 * Mocha root hooks: a test file must leave nothing running (timer, socket, server, child process) when it ends.
 * Without `exit: true` such a handle would keep the run from ending; this names it and fails the file instead.
 */
import type { RootHookObject } from 'mocha';

let before: Map<string, number>;

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
