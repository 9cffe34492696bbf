/** The discover node's core (src/flow/discover.ts) against the simulator's UDP responder on loopback, without Node-RED. */
import should from 'should';
import { Discoverer } from '../src/flow/discover';
import { DeviceSimulator } from '../src/simulator';
import { onlyLoopbackUdp, until } from './node-support';

const udpHandles = () => process.getActiveResourcesInfo().filter((resource) => resource === 'UDPWrap').length;

describe('Discoverer', function () {
  let simulator: DeviceSimulator;
  onlyLoopbackUdp();

  beforeEach(async () => {
    simulator = new DeviceSimulator({ port: 0, udpPort: 0, serialNumber: 'SIMCORE000000001' });
    await simulator.start();
  });
  afterEach(() => simulator.stop());

  const discoverer = (listenTime: number) =>
    new Discoverer({ target: '127.0.0.1', port: simulator.udpPort!, localPort: 0, method: 'udp', listenTime });

  it("finds the simulator, and takes a message's listen time and method over the settings", async () => {
    const scanner = discoverer(30);
    const options = scanner.optionsFor({ listenTime: 0.5 });
    options.should.containDeep({ listenMs: 500, method: 'udp', target: '127.0.0.1' });
    (() => scanner.optionsFor({ method: 'pigeon' })).should.throw(/method/);
    const devices = await scanner.run(options, () => undefined);
    should(devices).have.length(1);
    should(devices![0].sn).equal('SIMCORE000000001');
    scanner.busy.should.be.false();
  });

  it('is busy while a scan runs; close aborts it at once, gives no devices and leaves no socket', async () => {
    const before = udpHandles();
    const scanner = discoverer(30);
    const scan = scanner.run(scanner.optionsFor({}), () => undefined);
    scanner.busy.should.be.true();
    await until(() => simulator.stats.udpQueries === 1, 2000, 'the query');
    const started = Date.now();
    await scanner.close();
    should(Date.now() - started).be.below(1000);
    should(await scan).be.undefined();
    scanner.busy.should.be.false();
    // The handle itself goes on one of the next turns of the event loop.
    await until(() => udpHandles() <= before, 1000, 'the scan socket gone');
  });
});
