/**
 * The tests' redeploy (test/support.ts) on a runtime slow to start the new nodes, as a busy machine is: it waits for
 * them. The helper's own setFlows gives up after 300 ms ("timeout waiting event"), which failed a CI run.
 */
import should from 'should';
import type { NodeAPI } from 'node-red';
import { helper, redeploy } from './support';

/** A node type that only exists. */
function plainNode(RED: NodeAPI): void {
  RED.nodes.registerType('plain-node', function (this: any, config: any) {
    RED.nodes.createNode(this, config);
  });
}

const DELAY_MS = 600;

describe('the tests’ redeploy', function () {
  let restore: (() => void) | undefined;

  afterEach(async function () {
    restore?.();
    restore = undefined;
    await helper.unload();
  });

  it(`waits for the new nodes to start, ${DELAY_MS} ms after the deploy`, async function () {
    await helper.load(plainNode, [{ id: 'n1', type: 'plain-node', name: 'before' }]);
    // The runtime tells of the started flows DELAY_MS late, as a start held up by a busy machine would.
    type Emit = (event: string, ...args: unknown[]) => boolean;
    const events = (helper as unknown as { _events: { emit: Emit } })._events;
    const own = Object.getOwnPropertyDescriptor(events, 'emit');
    const emit = events.emit.bind(events);
    events.emit = (event, ...args) => {
      if (event !== 'flows:started') return emit(event, ...args);
      setTimeout(() => emit(event, ...args), DELAY_MS);
      return true;
    };
    restore = () => (own ? Object.defineProperty(events, 'emit', own) : delete (events as { emit?: Emit }).emit);
    const startedAt = Date.now();
    await redeploy([{ id: 'n1', type: 'plain-node', name: 'after' }]);
    should(Date.now() - startedAt).be.aboveOrEqual(DELAY_MS - 50);
    should(helper.getNode('n1').name).equal('after');
  });
});
