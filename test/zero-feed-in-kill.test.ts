/**
 * Node-RED killed (SIGKILL) while the zero feed-in node steers: the device holds its last real-time command, and the
 * command's SOC field is where it stops by itself. A real Node-RED child process steers simulated batteries (in this
 * process) from their own meter; once it discharges (then charges) about 1.5 kW it is killed, and what each battery may
 * still move by itself is read from the simulator's 47015 command and SOC: at most 3 % of its capacity (issue 34).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import should from 'should';
import { SharedHouse, type DeviceSimulator, type HouseScenario } from '../src/simulator';
import { REAL_TIME } from '../src/points/catalogue';
import { deviceConfig, startSimulator, startUnits } from './support';
import { startNodeRed, stopChild } from './node-red-process';
import { until } from './node-support';

const STEERED_W = 1500;
/** The working mode the units start in: the schedule mode leaves a simulated battery idle, so only the node moves it. */
const IDLE = 5;
/** What a battery may move by itself once its sender is gone, % of its capacity (the bound; leash 2). */
const MOST_PCT = 3;
const HOUSES: Record<'discharge' | 'charge', HouseScenario> = {
  discharge: { baseLoadW: STEERED_W, noiseW: 0, pvW: 0 },
  charge: { baseLoadW: 100, noiseW: 0, pvW: 100 + STEERED_W },
};

/** SOC points the device still moves by itself under its command in force (real-time control: until the SOC field). */
function movableByItself(sim: DeviceSimulator): number {
  if (sim.workingMode !== REAL_TIME.mode) return 100;
  const { state, soc } = sim.control;
  if (state === 2) return Math.max(0, sim.exactSoc - soc);
  if (state === 1) return Math.max(0, soc - sim.exactSoc);
  return 0;
}

/** The battery power of the units together (W, positive discharging). */
const total = (sims: DeviceSimulator[]) => sims.reduce((sum, sim) => sum + sim.batteryPower, 0);

describe('zero feed-in: Node-RED killed while it steers', function () {
  this.timeout(90000);
  let sims: DeviceSimulator[] = [];
  let red: ChildProcess | undefined;
  let userDir: string | undefined;
  const log: string[] = [];

  afterEach(async () => {
    await stopChild(red);
    red = undefined;
    for (const sim of sims) await sim.stop();
    sims = [];
    if (userDir) fs.rmSync(userDir, { recursive: true, force: true });
    userDir = undefined;
    log.length = 0;
  });

  async function steerAndKill(way: 'discharge' | 'charge', units: 1 | 2): Promise<number[]> {
    const house = HOUSES[way];
    // A group of two 1600-class units: 1.5 kW takes both of them (800 W discharge, 1200 W charge each).
    sims =
      units === 1
        ? [await startSimulator({ house, capacityKwh: 2, initialSoc: 50, workingMode: IDLE })]
        : await startUnits(new SharedHouse({ house }), [
            { model: '1600', initialSoc: 50, workingMode: IDLE },
            { model: '1600', initialSoc: 55, workingMode: IDLE },
          ]);
    // The 1600 class's limits, as its owner sets them in the device configuration.
    const limits = units === 1 ? {} : { chargeLimit: 1200, dischargeLimit: 800 };
    const configs = sims.map((sim, i) => deviceConfig(sim, `device${i + 1}`, limits));
    const zero = {
      id: 'zero',
      type: 'localbattery-zero-feed-in',
      z: 'tab',
      ...Object.fromEntries(configs.map((c, i) => [i === 0 ? 'device' : `device${i + 1}`, c.node.id])),
      meterSource: 'device',
      meterInterval: 1,
      meterTimeout: 10,
      onStop: 'self-consumption',
      wires: [],
    };
    const flows = [{ id: 'tab', type: 'tab', label: 'kill' }, ...configs.map((c) => c.node), zero];
    const credentials = Object.assign({}, ...configs.map((c) => c.credentials));
    userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'localbattery-kill-'));
    red = (await startNodeRed(userDir, flows, credentials, log)).child;
    const sign = way === 'discharge' ? 1 : -1;
    const steered = () => sims.every((sim) => sim.workingMode === REAL_TIME.mode) && Math.abs(total(sims) - sign * STEERED_W) < 150;
    await until(steered, 40000, `${way} at ${STEERED_W} W`).catch((error: Error) => {
      const seen = sims.map((sim) => `mode ${sim.workingMode} ${JSON.stringify(sim.control)} ${sim.batteryPower} W`);
      throw new Error(`${error.message}; the units: ${seen.join(', ')}\n${log.join('')}`);
    });
    const exited = new Promise<void>((resolve) => red!.once('exit', () => resolve()));
    red.kill('SIGKILL');
    await exited;
    return sims.map(movableByItself);
  }

  for (const units of [1, 2] as const)
    for (const way of ['discharge', 'charge'] as const)
      it(`leaves ${units === 1 ? 'one device' : 'each unit of a group of two'} at most ${MOST_PCT} % to move by itself (${way})`, async () => {
        const movable = await steerAndKill(way, units);
        for (const pct of movable)
          should(pct).be.belowOrEqual(MOST_PCT, `may still ${way} ${movable.map((m) => m.toFixed(1)).join(' / ')} %`);
      });
});
