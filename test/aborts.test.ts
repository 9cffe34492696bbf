/** Closing cuts every wait short: for the interval, for another client's request, before the request or the scan starts. */
import should from 'should';
import { pointByName } from '../src/points/catalogue';
import { DeviceClient } from '../src/device/client';
import { discover } from '../src/discovery/discovery';
import type { DeviceError } from '../src/errors';
import type { DeviceSimulator } from '../src/simulator';
import { exchange } from '../src/device/transport';
import { PASSWORD, startSimulator } from './support';

const SOC = pointByName('batterySoc')!.address;
const outcome = (request: Promise<unknown>) =>
  request.then(
    () => 'ok',
    (error: DeviceError) => error.code,
  );

describe('abort paths', function () {
  let simulator: DeviceSimulator;
  const clients: DeviceClient[] = [];
  const clientFor = () => {
    const client = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD, timeoutMs: 5000 });
    clients.push(client);
    return client;
  };

  afterEach(async function () {
    for (const client of clients.splice(0)) client.close();
    await simulator?.stop();
  });

  it('a request waiting for the interval ends CLOSED at once on close, and frees the line for another client', async function () {
    simulator = await startSimulator();
    const closing = clientFor();
    await closing.read([SOC]);
    const waiting = outcome(closing.read([SOC]));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    closing.close();
    should(await waiting).equal('CLOSED');
    should(Date.now() - started).be.below(100);
    should((await clientFor().read([SOC])).values.has(SOC)).be.true();
    should(simulator.stats.requests).equal(2);
  });

  it("a request waiting behind another client's request ends CLOSED on close; the other is not disturbed", async function () {
    simulator = await startSimulator({ slowDelayMs: 800 });
    const busy = clientFor();
    const closing = clientFor();
    simulator.setFault('slow', 1);
    const slow = outcome(busy.read([SOC]));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const waiting = outcome(closing.read([SOC]));
    await new Promise((resolve) => setTimeout(resolve, 100));
    closing.close();
    should(await waiting).equal('CLOSED');
    should(await slow).equal('ok');
    should(simulator.stats.requests).equal(1);
  });

  it('an exchange whose signal is already aborted ends CLOSED without a request', async function () {
    simulator = await startSimulator();
    const request = exchange({
      host: '127.0.0.1',
      port: simulator.port,
      method: 'GET',
      target: '/rpc/Sys.GetInfo',
      headers: {},
      timeoutMs: 1000,
      operation: 'Sys.GetInfo',
      signal: AbortSignal.abort(),
    });
    should(await outcome(request)).equal('CLOSED');
    should(simulator.stats.requests).equal(0);
  });

  it('a scan aborted while its socket binds sends nothing and finds nothing', async function () {
    simulator = await startSimulator({ udpPort: 0 });
    const controller = new AbortController();
    const scan = discover({ target: '127.0.0.1', port: simulator.udpPort!, localPort: 0, listenMs: 10000, signal: controller.signal });
    controller.abort();
    should(await scan).eql([]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    should(simulator.stats.udpQueries).equal(0);
  });
});
