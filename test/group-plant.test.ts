/** The group plant (src/control/group-plant.ts): one total over two simulated units in one house, each its own client. */
import should from 'should';
import { DeviceClient } from '../src/device/client';
import { GroupPlant } from '../src/control/group-plant';
import { REAL_TIME } from '../src/points/catalogue';
import { DeviceSimulator, SharedHouse } from '../src/simulator';
import { PASSWORD, startUnits } from './support';
import { held } from './setpoint';
import { until } from './node-support';

const SETTINGS = { minPower: 50, chargeSoc: 100, dischargeSoc: 10 };

describe('group plant (src/control/group-plant.ts): several devices behind one meter', function () {
  this.timeout(30000);
  let sims: DeviceSimulator[] = [];
  let clients: DeviceClient[] = [];

  afterEach(async () => {
    for (const client of clients) client.close();
    for (const sim of sims) await sim.stop();
    sims = [];
    clients = [];
  });

  async function group(socs: number[], options: ConstructorParameters<typeof GroupPlant>[2] = {}) {
    const house = new SharedHouse({ timeScale: 1, house: { baseLoadW: 500, pvW: 0 } });
    sims = await startUnits(
      house,
      socs.map((soc, i) => ({ workingMode: REAL_TIME.mode, model: i === 0 ? '2000' : '1600', initialSoc: soc })),
    );
    // Each unit's client with its class's limits, as its device configuration would have them.
    const limits = [{}, { chargeLimit: 1200, dischargeLimit: 800 }];
    clients = sims.map(
      (sim, i) => new DeviceClient({ host: '127.0.0.1', port: sim.port, password: PASSWORD, timeoutMs: 2000, ...limits[i] }),
    );
    const members = clients.map((client, i) => ({
      id: `unit${i + 1}`,
      session: client.session(),
      capacityWh: sims[i].ratedCapacityKwh * 1000,
    }));
    return new GroupPlant(members, SETTINGS, options);
  }

  const send = (plant: GroupPlant, watts: number) => plant.apply(watts, { urgent: false, onStart: () => undefined });

  it('its limits are the sums of its units’; a small total runs one unit, the fuller, the other stays in standby', async () => {
    const plant = await group([40, 80]);
    const sum = clients[0].limits.dischargeLimit + clients[1].limits.dischargeLimit;
    plant.limits.dischargeLimit.should.equal(sum);
    await plant.read(false);
    const outcome = await send(plant, 300);
    outcome.should.eql({ superseded: false, watts: 300 });
    held(sims[0]).should.equal(0);
    held(sims[1]).should.equal(300);
    const report = plant.report();
    report
      .map((u) => [u.device, u.setpoint, u.active, u.leftOut])
      .should.eql([
        ['unit1', 0, false, false],
        ['unit2', 300, true, false],
      ]);
    report[1].soc!.should.equal(80);
  });

  it('a total above 80 % of one unit’s maximum runs both; a reversal never has one unit charging while the other discharges', async () => {
    const plant = await group([60, 60]);
    await plant.read(false);
    await send(plant, 2200);
    held(sims[0]).should.be.above(0);
    held(sims[1]).should.be.above(0);
    const opposite = () => Math.sign(held(sims[0])) * Math.sign(held(sims[1])) === -1;
    // Both discharged: the first decision to charge puts them to standby; charging starts once neither moves.
    await send(plant, -1500);
    opposite().should.be.false();
    held(sims[0]).should.equal(0);
    held(sims[1]).should.equal(0);
    // No new decision: the plant reads the units and starts charging once it has seen both stopped.
    const seen: number[][] = [];
    await until(
      () => {
        seen.push([held(sims[0]), held(sims[1])]);
        return held(sims[0]) + held(sims[1]) === -1500;
      },
      10000,
      'charging on its own once both stopped',
    );
    seen.some(([a, b]) => Math.sign(a) * Math.sign(b) === -1).should.be.false();
    plant.close();
  });

  it('leaves out a unit that is switched off (unreachable) and gives its share to the other at once', async () => {
    const failures: string[] = [];
    const plant = await group([80, 80], { unitFailure: (id) => failures.push(id), health: { readings: 2 } });
    await plant.read(false);
    await send(plant, 2200);
    held(sims[0]).should.be.above(0);
    held(sims[1]).should.be.above(0);
    sims[0].switchOff();
    await sims[0].ready();
    const reading = await plant.read(false);
    // Its request failed: out of the split and of the sum at once (its power counts as load), left out only later.
    should(reading.battery).be.a.Number().and.belowOrEqual(800);
    plant.report()[0].leftOut.should.be.false();
    await plant.read(false);
    plant.report()[0].leftOut.should.equal('unreachable');
    failures.should.containEql('unit1');
    // The split again, over the unit left: the whole total (within its class's 800 W).
    await until(() => held(sims[1]) === 800, 10000, 'the other unit at its class’s 800 W');
    const after = await plant.read(false);
    should(after.battery).equal(sims[1].batteryPower);
    plant.report()[1].reason.should.equal('active');
  });

  it('gives the share of a unit whose request failed to the other at once, before it is left out, and back when it answers', async () => {
    const plant = await group([80, 40]);
    await plant.read(false);
    await send(plant, 700);
    held(sims[0]).should.equal(700);
    held(sims[1]).should.equal(0);
    sims[0].setFault('offline');
    await sims[0].ready();
    await plant.read(false);
    // One failure: not left out (that takes three), but its share goes to the other unit now, not after two more.
    plant.report()[0].leftOut.should.be.false();
    await until(() => held(sims[1]) === 700, 5000, 'the other unit carrying the 700 W');
    sims[0].setFault(null);
    await sims[0].ready();
    await plant.read(false);
    await until(() => held(sims[0]) === 700 && held(sims[1]) === 0, 5000, 'the fuller unit back with the whole share');
    plant.close();
  });

  it('refuses an empty group and a device twice', () => {
    (() => new GroupPlant([], SETTINGS)).should.throw(/at least one device/);
    const session = new DeviceClient({ host: '127.0.0.1', port: 1, password: PASSWORD }).session();
    (() =>
      new GroupPlant(
        [
          { id: 'a', session, capacityWh: 2000 },
          { id: 'a', session, capacityWh: 2000 },
        ],
        SETTINGS,
      )).should.throw(/must differ/);
    session.client.close();
  });
});
