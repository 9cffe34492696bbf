/** The zero feed-in regulator (src/control/regulator.ts) against a simulated plant, in simulated time. */
import should from 'should';
import { PLANT_BOUNDS, Regulator, gridReading, type Decision, type RegulatorSettings } from '../src/control/regulator';

const SETTINGS: RegulatorSettings = {
  target: 0,
  deadBand: 20,
  maxCharge: 2400,
  maxDischarge: 2400,
  chargeSoc: 100,
  dischargeSoc: 10,
  meterTimeoutMs: 10000,
  onTimeout: 'standby',
  gridCharge: false,
  minPower: 50,
  ...PLANT_BOUNDS,
};

interface PlantOptions {
  deadTimeS: number;
  lagS: number;
  meterDelayS: number;
  /** Time from a request leaving to its acknowledgement; the device applies it on arrival. */
  answerMs: number;
  /** House load (W, PV negative) at simulated second t. */
  load: (t: number) => number;
  durationS: number;
  settings?: Partial<RegulatorSettings>;
  /** Meter readings every this many ms. */
  meterMs?: number;
  /** The meter is silent from this second on. */
  silentFromS?: number;
  /** SOC in % at the start and battery capacity (Wh). */
  soc?: number;
  capacityWh?: number;
  /** The device stops at these SOC targets itself (the soc of the command), as the simulator does. */
  readSocEveryMs?: number;
  /** The meter's readings are off by up to this (W), evenly spread; `seed` starts the noise. */
  noiseW?: number;
  seed?: number;
  /** The device's minimum interval between requests (ms). */
  intervalMs?: number;
  /** The battery delivers at most this (W, either way) at second t, though it accepts any setpoint. */
  capW?: (t: number) => number | undefined;
  /** Battery power (6000) is read back this often (ms), from `readBatteryOffsetMs` on. */
  readBatteryEveryMs?: number;
  readBatteryOffsetMs?: number;
  /**
   * The meter holds a sample for this long (ms, the device's own: 3000), sampled at its multiples; each reading gives the
   * sample in force, and battery power (6000) is read with it.
   */
  holdMs?: number;
  /**
   * With `holdMs`: the meter is read as the device's own is, by a request of its own in the device's queue: every slot
   * that no setpoint takes (so a pulse and its follow-up delay the next reading, which is then older).
   */
  meterInQueue?: boolean;
  /** A hold for a battery check gets a read of 6000 this much later (ms), as the controller asks one at once. */
  readOnCheckMs?: number;
  /** What the meter reports instead of the grid at second t (a bad reading), or undefined. */
  badReading?: (t: number) => number | undefined;
  /** Called every step: a decision it returns is carried out like the regulator's. */
  hook?: (now: number, regulator: Regulator, decisions: readonly (Decision & { t: number })[]) => Decision | undefined;
}

interface Trace {
  t: number;
  grid: number;
  battery: number;
  setpoint: number;
  load: number;
}

/**
 * A battery behind the device's queue: one request at a time, at least 1 s apart; a setpoint acts after the dead
 * time, through a first-order lag; the meter shows the grid `meterDelayS` late. Steps of 10 ms.
 */
function simulate(options: PlantOptions) {
  const dt = 10;
  const intervalMs = options.intervalMs ?? 1000;
  const settings = { ...SETTINGS, requestIntervalMs: intervalMs, ...options.settings };
  let seed = options.seed ?? 11;
  const noise = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return (options.noiseW ?? 0) * ((2 * seed) / 2147483648 - 1);
  };
  const regulator = new Regulator(settings, 0);
  const trace: Trace[] = [];
  const decisions: (Decision & { t: number })[] = [];
  const requests: number[] = [];
  let battery = 0;
  let soc = options.soc ?? 50;
  const capacityWh = options.capacityWh ?? 5000;
  /** Setpoints the device accepted: value, the time it applies (arrival + dead time). */
  const applied: { at: number; value: number; soc: number }[] = [{ at: 0, value: 0, soc: 100 }];
  const gridHistory: number[] = [];
  let queue: { value: number; soc: number } | undefined;
  let lastRequest = -Infinity;
  let inFlight: { value: number; ackAt: number } | undefined;
  let handedBack = false;
  let held: { at: number; grid: number } | undefined;
  let checkReadAt: number | undefined;
  for (let step = 0; step * dt <= options.durationS * 1000; step++) {
    const now = step * dt;
    const load = options.load(now / 1000);
    // The device: a queued request leaves when the last is answered and a second has passed.
    let slotRead = false;
    if (queue && !inFlight && now - lastRequest >= intervalMs) {
      lastRequest = now;
      requests.push(now);
      regulator.started(now);
      applied.push({ at: now + options.deadTimeS * 1000, value: queue.value, soc: queue.soc });
      inFlight = { value: queue.value, ackAt: now + options.answerMs };
      queue = undefined;
    } else if (options.meterInQueue && !inFlight && now - lastRequest >= intervalMs) {
      lastRequest = now;
      requests.push(now);
      slotRead = true;
    }
    if (inFlight && now >= inFlight.ackAt) {
      regulator.acknowledge(inFlight.value, now);
      inFlight = undefined;
      // An overdrive's next setpoint goes at once.
      const next = regulator.followUp(now);
      if (next) {
        decisions.push({ ...next, t: now });
        queue = { value: next.setpoint!, soc: next.setpoint! < 0 ? settings.chargeSoc : settings.dischargeSoc };
      }
    }
    // The battery: follows the command in force, stops at its SOC target.
    const command = applied.filter((a) => a.at <= now).at(-1)!;
    let wanted = handedBack ? 0 : command.value;
    if ((wanted < 0 && soc >= command.soc) || (wanted > 0 && soc <= command.soc)) wanted = 0;
    const cap = options.capW?.(now / 1000);
    if (cap !== undefined) wanted = Math.max(-cap, Math.min(cap, wanted));
    battery += (wanted - battery) * (1 - Math.exp(-dt / (options.lagS * 1000)));
    soc -= ((battery * dt) / 3600000 / capacityWh) * 100;
    const grid = load - battery;
    gridHistory.push(grid);
    trace.push({ t: now, grid, battery, setpoint: command.value, load });
    const silent = options.silentFromS !== undefined && now >= options.silentFromS * 1000;
    if (options.readSocEveryMs && now % options.readSocEveryMs === 0) regulator.observeSoc(Math.round(soc), now);
    if (options.readBatteryEveryMs && (now - (options.readBatteryOffsetMs ?? 0)) % options.readBatteryEveryMs === 0)
      regulator.observeBattery(Math.round(battery), now);
    if (checkReadAt !== undefined && now >= checkReadAt) {
      regulator.observeBattery(Math.round(battery), now);
      checkReadAt = undefined;
    }
    let decision: Decision | undefined = options.hook?.(now, regulator, decisions);
    if (decision) {
      // Carried out below like the regulator's own.
    } else if (!silent && (options.meterInQueue ? slotRead : now % (options.meterMs ?? 1000) === 0)) {
      const delayed = gridHistory[Math.max(0, gridHistory.length - 1 - Math.round((options.meterDelayS * 1000) / dt))];
      let grid = options.badReading?.(now / 1000) ?? Math.round(delayed + noise());
      if (options.holdMs) {
        const at = Math.floor(now / options.holdMs) * options.holdMs;
        if (held?.at !== at) held = { at, grid: Math.round(gridHistory[at / dt] + noise()) };
        grid = held.grid;
        regulator.observeBattery(Math.round(battery), now, now - 100);
      }
      decision = regulator.meter(grid, now);
    } else {
      decision = regulator.tick(now);
    }
    if (decision) {
      decisions.push({ ...decision, t: now });
      if (decision.action === 'set' || decision.action === 'standby') {
        const value = decision.setpoint!;
        queue = { value, soc: value < 0 ? settings.chargeSoc : settings.dischargeSoc };
      } else if (decision.action === 'self-consumption') {
        handedBack = true;
        regulator.handedBack();
      } else if (decision.reason === 'battery check' && options.readOnCheckMs !== undefined) checkReadAt = now + options.readOnCheckMs;
    }
  }
  return { trace, decisions, requests, regulator };
}

/** Seconds from `fromS` until the true grid stays within ±band of the target for `holdS`; Infinity if never. */
function settlingS(trace: Trace[], fromS: number, toS: number, target = 0, band = 50, holdS = 3): number {
  let inside: number | undefined;
  for (const point of trace) {
    if (point.t < fromS * 1000 || point.t > toS * 1000) continue;
    if (Math.abs(point.grid - target) <= band) {
      inside ??= point.t;
      if (point.t - inside >= holdS * 1000) return inside / 1000 - fromS;
    } else inside = undefined;
  }
  return Infinity;
}

/**
 * The pulses among setpoints sent: where an overdrive heads to a new need (the setpoint stood behind). Its follow-ups,
 * by time or by reading, head to the same need.
 */
function pulseStarts<T extends Decision>(sent: T[]): T[] {
  return sent.filter(
    (d, i) => d.reason === 'overdrive' && (i === 0 || sent[i - 1].reason !== 'overdrive' || sent[i - 1].steady !== d.steady),
  );
}

/** Changes of direction of the setpoints sent between fromS and toS. */
function reversals(decisions: (Decision & { t: number })[], fromS: number, toS: number): number {
  const sent = decisions.filter((d) => d.action === 'set' && d.t >= fromS * 1000 && d.t < toS * 1000).map((d) => d.setpoint!);
  let count = 0;
  let direction = 0;
  let previous: number | undefined;
  for (const value of sent) {
    if (previous !== undefined && value !== previous) {
      const now = Math.sign(value - previous);
      if (direction !== 0 && now !== direction) count++;
      direction = now;
    }
    previous = value;
  }
  return count;
}

/** The bench house's battery (dead time 1 s, lag 1.5 s) behind a prompt meter, with fast answers. */
const BENCH_PLANT = { deadTimeS: 1, lagS: 1.5, meterDelayS: 0, answerMs: 100 };

/** Load steps: 300 W, a 2 kW kettle at 20 s, off at 50 s, PV surplus (-600 W) from 80 s. */
const steps = (t: number) => (t < 20 ? 300 : t < 50 ? 2300 : t < 80 ? 300 : -600);

function gapsOk(requests: number[], intervalMs = 1000): void {
  for (let i = 1; i < requests.length; i++) should(requests[i] - requests[i - 1]).be.aboveOrEqual(intervalMs);
}

/** A 2 kW kettle on and off every 30 s over 410 W of house and 900 W of PV (the bench's house), from 30 s on. */
const kettles = (t: number) => -490 + (Math.floor(t / 30) % 2 === 1 ? 2000 : 0);

/** The kettles over a battery with dead time 1 s and lag 1.5 s, the meter on time, fast answers. */
const KETTLE_HOUSE = { deadTimeS: 1, lagS: 1.5, meterDelayS: 0, answerMs: 100, load: kettles };

/** The constant-load stretches of `kettles` after the first step, and whether the kettle is on in each. */
const kettleStretches = (durationS: number) =>
  Array.from({ length: Math.floor(durationS / 30) - 1 }, (_, i) => ({ from: 30 * (i + 1), to: 30 * (i + 2), on: i % 2 === 0 }));

/**
 * The robustness matrix's house (scripts/bench-zero-matrix.js): 300 W and 900 W of PV; a 2 kW kettle 10-40 s, a cloud
 * taking 80 % of the PV 48-70 s (4 s ramps), a 900 W microwave 76-86 s; and its stretches of constant load.
 */
function matrixHouse(t: number): number {
  const ramp = (from: number) => Math.min(1, Math.max(0, (t - from) / 4));
  const cloud = t < 66 ? ramp(48) : 1 - ramp(66);
  return 300 - 900 * (1 - 0.8 * cloud) + (t >= 10 && t < 40 ? 2000 : 0) + (t >= 76 && t < 86 ? 900 : 0);
}
const MATRIX_STRETCHES = [0, 10, 40, 48, 52, 66, 70, 76, 86, 90];

/** Most the true grid went past the target against the step's direction (an overshoot) within a stretch, W. */
function overshootW(trace: Trace[], from: number, to: number, on: boolean): number {
  const points = trace.filter((p) => p.t >= from * 1000 && p.t < to * 1000);
  return Math.max(0, ...points.map((p) => (on ? -p.grid : p.grid)));
}

describe('zero feed-in regulator (src/control/regulator.ts) against a simulated plant', function () {
  it('reads grid power from a number, numeric text or {meterPower}; ignores NaN, text, objects and 10 MW', function () {
    should(gridReading(120)).equal(120);
    should(gridReading(' -35.5 ')).equal(-35.5);
    should(gridReading({ meterPower: '42' })).equal(42);
    for (const nonsense of [NaN, Infinity, 'abc', '0x50', '', null, undefined, true, [], {}, { power: 5 }, 10e6, -10e6]) {
      should(gridReading(nonsense)).be.undefined();
    }
  });

  /**
   * The fastest a deadbeat step can settle: the step shows in the meter after its delay, the next reading (every
   * second) finds it, then the battery's dead time and the lag from 2 kW down to 50 W.
   */
  const deadbeatLimitS = (plant: { deadTimeS: number; lagS: number; meterDelayS: number }) =>
    plant.meterDelayS + 1 + plant.deadTimeS + plant.lagS * Math.log(2000 / 50);

  it('settles a 2 kW step within ±50 W in 6 s with fast answers where the battery allows it (dead time 0.5 s, lag 1 s)', function () {
    const plant = { deadTimeS: 0.5, lagS: 1, meterDelayS: 0 };
    const run = simulate({ ...plant, answerMs: 100, load: steps, durationS: 110 });
    const on = settlingS(run.trace, 20, 50);
    const off = settlingS(run.trace, 50, 80);
    console.log(
      `      fast battery: kettle on ${on.toFixed(1)} s, off ${off.toFixed(1)} s (deadbeat limit ${deadbeatLimitS(plant).toFixed(1)} s)`,
    );
    should(on).be.belowOrEqual(6);
    should(off).be.belowOrEqual(6);
    gapsOk(run.requests);
  });

  for (const answerMs of [100, 1000]) {
    it(`settles a 2 kW step as fast as a deadbeat can, in one move, with ${answerMs} ms answers (dead time 1 s, lag 1.5 s, meter 0.5 s late)`, function () {
      const plant = { deadTimeS: 1, lagS: 1.5, meterDelayS: 0.5 };
      const run = simulate({ ...plant, answerMs, load: steps, durationS: 110 });
      const on = settlingS(run.trace, 20, 50);
      const off = settlingS(run.trace, 50, 80);
      console.log(`      kettle on ${on.toFixed(1)} s, off ${off.toFixed(1)} s (deadbeat limit ${deadbeatLimitS(plant).toFixed(1)} s)`);
      should(on).be.belowOrEqual(deadbeatLimitS(plant) + 0.1);
      should(off).be.belowOrEqual(deadbeatLimitS(plant) + 0.1);
      for (const [from, to] of [
        [20, 50],
        [50, 80],
        [80, 110],
      ]) {
        should(reversals(run.decisions, from, to)).be.belowOrEqual(1, `reversals ${from}-${to} s`);
        // The step itself is one write; at most two more trim the dead band's rest.
        should(run.decisions.filter((d) => d.action === 'set' && d.t >= from * 1000 && d.t < to * 1000).length).be.belowOrEqual(3);
      }
      gapsOk(run.requests);
    });
  }

  for (const lagS of [0.5, 1.5, 5]) {
    for (const meterDelayS of [0, 2]) {
      for (const deadTimeS of [0, 0.5, 2]) {
        it(`no sustained oscillation: lag ${lagS} s, meter ${meterDelayS} s late, dead time ${deadTimeS} s`, function () {
          const run = simulate({ deadTimeS, lagS, meterDelayS, answerMs: 100, load: steps, durationS: 110 });
          // Each constant-load stretch ends settled and quiet: at most one reversal, nothing sent in its last 5 s.
          for (const [from, to] of [
            [0, 20],
            [20, 50],
            [50, 80],
            [80, 110],
          ]) {
            should(reversals(run.decisions, from, to)).be.belowOrEqual(1, `reversals ${from}-${to} s`);
            should(settlingS(run.trace, from, to)).be.below(to - from - 3, `settled ${from}-${to} s`);
            const late = run.decisions.filter((d) => d.action === 'set' && d.t > (to - 5) * 1000 && d.t < to * 1000);
            should(late).be.empty();
          }
          gapsOk(run.requests);
        });
      }
    }
  }

  for (const answerMs of [100, 1000]) {
    it(`learns the battery's lag from the meter and overdrives by it: 2 kW steps in ±50 W within 6 s, ${answerMs} ms answers`, function () {
      const plant = { deadTimeS: 1, lagS: 1.5, meterDelayS: 0 };
      const run = simulate({ ...plant, answerMs, load: kettles, durationS: 270 });
      const { delayS, lagS } = run.regulator.plant;
      should(lagS[0]).be.within(1, 1.5);
      should(lagS[1]).be.within(1.5, 2.5);
      should(delayS[0]).be.belowOrEqual(1);
      should(delayS[1]).be.within(1, 1.5);
      const settled = kettleStretches(270).map(({ from, to }) => settlingS(run.trace, from, to));
      console.log(
        `      settled after ${settled.map((s) => s.toFixed(1)).join(' · ')} s (one plain step: ${deadbeatLimitS(plant).toFixed(1)} s)`,
      );
      // The first step is plain: nothing has shown the lag yet (the start's move is too small to tell it well). The
      // kettle going off into the PV's surplus (-490 W) is plain too: the grid-charging floor leaves no room for a pulse.
      settled.slice(1).forEach((s, i) => should(s).be.belowOrEqual(i % 2 === 0 ? deadbeatLimitS(plant) : 6));
      should(run.decisions.filter((d) => d.reason === 'overdrive').length).be.aboveOrEqual(3);
      for (const { from, to, on } of kettleStretches(270)) {
        should(reversals(run.decisions, from, to)).be.belowOrEqual(1, `reversals ${from}-${to} s`);
        should(overshootW(run.trace, from, to, on)).be.belowOrEqual(50, `overshoot ${from}-${to} s`);
      }
      gapsOk(run.requests);
    });
  }

  it('follows a ramp (a cloud over PV, the meter 2 s late) step by step without pulses, and still pulses a kettle after it', function () {
    // Kettles first, so that the readings have shown the lag; then 720 W of PV fade in over 8 s and come back.
    const ramp = (from: number, t: number) => Math.min(1, Math.max(0, (t - from) / 8));
    const load = (t: number) => (t < 150 ? kettles(t) : t < 300 ? -490 + 720 * (ramp(150, t) - ramp(220, t)) : -490 + 2000);
    const run = simulate({ deadTimeS: 1, lagS: 1.5, meterDelayS: 2, answerMs: 100, load, durationS: 340 });
    for (const [from, to] of [
      [150, 220],
      [220, 300],
    ]) {
      should(reversals(run.decisions, from, to)).equal(0, `reversals ${from}-${to} s`);
      should(run.decisions.filter((d) => d.reason === 'overdrive' && d.t >= from * 1000 && d.t < to * 1000)).be.empty();
    }
    should(run.decisions.filter((d) => d.reason === 'overdrive' && d.t >= 300000).length).be.aboveOrEqual(1);
    gapsOk(run.requests);
  });

  it('a short dip seen late (a meter every 3 s, 1.8 s late) is moved back from once, without a pulse', function () {
    // A load leaves for 3.5 s and comes back after kettles have shown the lag: the late meter shows the dip when it is
    // over, and the setpoint follows it down. The move back is a reversal already; a pulse on it ended by time on a need
    // the late readings still put short of the load, and the next reading moved on past it: two reversals more.
    for (let seed = 1; seed <= 3; seed++)
      for (let phaseMs = 0; phaseMs < 3000; phaseMs += 250) {
        const dipAt = 40 + phaseMs / 1000;
        const before = (t: number) => (t < 10 ? 300 : t < 20 ? 2300 : t < 30 ? 300 : 1100);
        const load = (t: number) => (t < dipAt ? before(t) : t < dipAt + 3.5 ? -720 : 740);
        const run = simulate({
          deadTimeS: 1,
          lagS: 1.5,
          meterDelayS: 1.8,
          meterMs: 3000,
          answerMs: 400,
          load,
          durationS: 75,
          noiseW: 5,
          seed,
        });
        const sent = run.decisions.filter((d) => d.action === 'set' && d.t >= dipAt * 1000).map((d) => d.setpoint);
        should(reversals(run.decisions, dipAt, 75)).be.belowOrEqual(1, `seed ${seed}, phase ${phaseMs} ms: ${sent.join(', ')}`);
        gapsOk(run.requests);
      }
  });

  it('a slow battery (dead time 2 s, lag 5 s) gets one pulse per load step: trims while it answers add none', function () {
    // The matrix's house with a meter that is off by up to ±10 or ±15 W: some noise leaves lags of 3 to 5 s when the
    // kettle comes, the pulse is sized for the fastest and the real battery still answers when the first trims come.
    for (const noiseW of [10, 15])
      for (let seed = 1; seed <= 8; seed++) {
        const run = simulate({ deadTimeS: 2, lagS: 5, meterDelayS: 0, answerMs: 100, load: matrixHouse, durationS: 90, noiseW, seed });
        const kettleOn = run.decisions.filter((d) => d.action === 'set' && d.t >= 10000 && d.t < 40000);
        const pulses = pulseStarts(kettleOn);
        should(pulses).have.length(1, `noise ${noiseW} W, seed ${seed}: ${JSON.stringify(kettleOn.map((d) => [d.t, d.setpoint]))}`);
        for (let i = 0; i + 1 < MATRIX_STRETCHES.length; i++) {
          const [from, to] = [MATRIX_STRETCHES[i], MATRIX_STRETCHES[i + 1]];
          should(reversals(run.decisions, from, to)).be.belowOrEqual(1, `noise ${noiseW} W, seed ${seed}: reversals ${from}-${to} s`);
        }
        // The kettle's step lands without exporting past the dead band.
        should(overshootW(run.trace, 10, 40, true)).be.belowOrEqual(50, `noise ${noiseW} W, seed ${seed}: overshoot`);
        gapsOk(run.requests);
      }
  });

  it("a pulse's follow-ups only come closer to its value, never go past it again (noisy meter, slow and late plants)", function () {
    let chains = 0;
    for (const [deadTimeS, lagS, meterDelayS] of [
      [0, 1.5, 0],
      [1, 1.5, 0],
      [0.5, 1.5, 1],
      [2, 1.5, 1],
      [0.5, 5, 1],
    ])
      for (const noiseW of [10, 30])
        for (let seed = 1; seed <= 5; seed++) {
          const run = simulate({ deadTimeS, lagS, meterDelayS, answerMs: 100, load: matrixHouse, durationS: 20, noiseW, seed });
          const sets = run.decisions.filter((d) => d.action === 'set');
          for (let i = 1; i < sets.length; i++) {
            const [before, after] = [sets[i - 1], sets[i]];
            if (before.reason !== 'overdrive' || after.reason !== 'overdrive' || before.steady !== after.steady) continue;
            chains++;
            const where = `dead time ${deadTimeS} s, lag ${lagS} s, meter ${meterDelayS} s late, noise ${noiseW} W, seed ${seed}, ${after.t} ms`;
            should(Math.abs(after.setpoint! - after.steady!)).be.belowOrEqual(Math.abs(before.setpoint! - before.steady!), where);
          }
        }
    should(chains).be.aboveOrEqual(10);
  });

  it('charging from a shrinking PV surplus with grid charging off, the band leans toward export: less from the grid', function () {
    // The surplus falls from 780 W to 200 W over 5 minutes: the grid drifts toward import between the trims, and an
    // import while the battery charges is the grid's energy in the battery. Leaning toward import as while it
    // discharges, 1.19 to 1.35 Wh came from the grid for seeds 1 to 6.
    const load = (t: number) => (t < 10 ? 300 : -800 + 2 * t);
    for (let seed = 1; seed <= 6; seed++) {
      const run = simulate({ deadTimeS: 1, lagS: 1.5, meterDelayS: 0, answerMs: 100, load, durationS: 300, noiseW: 10, seed });
      const charging = run.trace.filter((p) => p.t >= 20000 && p.battery < 0);
      const fromGridWh = charging.reduce((sum, p) => sum + Math.max(0, p.grid), 0) * (10 / 3600000);
      should(fromGridWh).be.belowOrEqual(1.05, `seed ${seed}`);
    }
  });

  it('a pulse never crosses the grid-charging floor, not even for one request: the battery never charges from the grid', function () {
    // Kettle off, no PV: the floor is 0 W. The pulse still helps the lag come down from 2.3 kW, by going to 0 W.
    const load = (t: number) => (Math.floor(t / 30) % 2 === 1 ? 2300 : 300);
    const run = simulate({ deadTimeS: 1, lagS: 1.5, meterDelayS: 0, answerMs: 100, load, durationS: 210 });
    const offs = kettleStretches(210).filter((stretch) => !stretch.on);
    const commanded = run.decisions.filter((d) => d.action === 'set' && offs.some(({ from, to }) => d.t >= from * 1000 && d.t < to * 1000));
    should(commanded.some((d) => d.reason === 'overdrive' && d.setpoint! < 300)).be.true();
    should(Math.min(...commanded.map((d) => d.setpoint!))).be.aboveOrEqual(0);
    for (const { from, to } of offs) {
      const battery = run.trace.filter((p) => p.t >= (from + 0.5) * 1000 && p.t < to * 1000).map((p) => p.battery);
      should(Math.min(...battery)).be.aboveOrEqual(250);
    }
    // With PV (the kettles over 900 W of it): no command charges beyond the surplus the house has when it is decided.
    const withPv = simulate({ ...KETTLE_HOUSE, durationS: 270 });
    for (const d of withPv.decisions.filter((d) => d.action === 'set'))
      should(d.setpoint!).be.aboveOrEqual(Math.min(0, kettles(d.t / 1000)), `${d.reason} at ${d.t} ms`);
  });

  it("sizes the pulse for the device's interval, and for the gap its second half really got", function () {
    const run = simulate({ deadTimeS: 1, lagS: 1.5, meterDelayS: 0, answerMs: 100, load: kettles, durationS: 270, intervalMs: 2000 });
    should(run.decisions.filter((d) => d.reason === 'overdrive').length).be.aboveOrEqual(4);
    for (const { from, to, on } of kettleStretches(270)) should(overshootW(run.trace, from, to, on)).be.belowOrEqual(50, `${from}-${to} s`);
    gapsOk(run.requests, 2000);
  });

  it('a noisy meter widens the dead band: noise of ±40 W barely moves it (a trim waits for a second reading), a step still settles', function () {
    // One reading at the band's edge used to set the grid at the other edge: 2 reversals in a stretch for 11 of 12
    // seeds, 3 for one.
    let twice = 0;
    for (let seed = 1; seed <= 12; seed++) {
      const run = simulate({ deadTimeS: 1, lagS: 0.5, meterDelayS: 0, answerMs: 100, load: kettles, durationS: 270, noiseW: 40, seed });
      for (const { from, to } of kettleStretches(270)) {
        const count = reversals(run.decisions, from, to);
        should(count).be.belowOrEqual(2, `seed ${seed}: reversals ${from}-${to} s`);
        if (count === 2) twice++;
        should(settlingS(run.trace, from, to, 0, 90)).be.belowOrEqual(6, `seed ${seed}: settled ${from}-${to} s`);
      }
    }
    should(twice).be.belowOrEqual(2);
  });

  it('a ramp (720 W of PV over 8 s, the meter noisy by ±10 W) leaves the dead band as it was, and is settled within 6 s of its end', function () {
    // The dead band used to grow to 100 W on the ramp (its steady change counted as noise) and hold the grid at about
    // +100 W for seconds after it.
    const ramp = (from: number, t: number) => Math.min(1, Math.max(0, (t - from) / 8));
    const load = (t: number) => (t < 150 ? kettles(t) : -490 + 720 * (ramp(160, t) - ramp(230, t)));
    for (let seed = 1; seed <= 4; seed++) {
      const run = simulate({ deadTimeS: 1, lagS: 1.5, meterDelayS: 0, answerMs: 100, load, durationS: 300, noiseW: 10, seed });
      const bands = run.decisions.filter((d) => d.t >= 150000 && d.deadBand !== undefined).map((d) => d.deadBand!);
      should(Math.max(...bands)).be.belowOrEqual(40, `seed ${seed}: dead band`);
      for (const [end, next] of [
        [168, 230],
        [238, 300],
      ]) {
        should(settlingS(run.trace, end, next)).be.belowOrEqual(6, `seed ${seed}: settled after the ramp ending at ${end} s`);
        should(reversals(run.decisions, end, next)).be.belowOrEqual(1, `seed ${seed}: reversals ${end}-${next} s`);
      }
    }
  });

  it('a cloud as in the bench house (PV 900 to 180 W over 8 s as the fridge stops) is settled within 6 s of its end, at every phase of the meter', function () {
    // The end of a ramp used to wait: its last small moves were taken for noise (a trim waits for a second reading), and
    // the fridge's step and the ramp's corners counted as noise and widened the dead band; 7.9 s at worst.
    const pv = (t: number) => 900 * (1 - 0.8 * Math.min(1, Math.max(0, (t - 190) / 8)));
    const fridge = (t: number) => ((((t - 20) % 120) + 120) % 120 < 50 ? 110 : 0);
    const appliances = (t: number) => (t >= 40 && t < 100 ? 2000 : 0) + (t >= 130 && t < 170 ? 900 : 0);
    for (let seed = 1; seed <= 8; seed++)
      for (const phaseMs of [0, 250, 500, 750]) {
        const load = (t: number) => 300 + fridge(t + phaseMs / 1000) + appliances(t + phaseMs / 1000) - pv(t + phaseMs / 1000);
        const run = simulate({
          ...BENCH_PLANT,
          load,
          durationS: 230,
          noiseW: 10,
          seed,
          readBatteryEveryMs: 3000,
          readBatteryOffsetMs: 500,
        });
        const end = 198 - phaseMs / 1000;
        const at = `seed ${seed}, phase ${phaseMs} ms`;
        should(settlingS(run.trace, end, end + 30)).be.belowOrEqual(6, `${at}: settled after the ramp`);
        should(reversals(run.decisions, end, end + 30)).be.belowOrEqual(1, `${at}: reversals`);
        const bands = run.decisions.filter((d) => d.t >= 185000 && d.deadBand !== undefined).map((d) => d.deadBand!);
        should(Math.max(...bands)).be.belowOrEqual(45, `${at}: dead band`);
      }
  });

  it('never exceeds the maximum powers, and does not wind up at them', function () {
    const load = (t: number) => (t < 30 ? 3000 : t < 60 ? -2500 : 200);
    const run = simulate({
      deadTimeS: 1,
      lagS: 1.5,
      meterDelayS: 0.5,
      answerMs: 100,
      load,
      durationS: 90,
      settings: { maxDischarge: 1000, maxCharge: 700 },
    });
    const sent = run.decisions.filter((d) => d.action === 'set').map((d) => d.setpoint!);
    should(Math.max(...sent)).equal(1000);
    should(Math.min(...sent)).equal(-700);
    // Held at the limit: one write there, no repeats while the grid stays off target.
    should(sent.filter((v) => v === 1000)).have.length(1);
    // No wind-up: once the load drops to 200 W, the next reading that shows it moves the setpoint onto it (after an
    // overdrive, where the readings have shown the battery's lag).
    const next = run.decisions.find((d) => d.action === 'set' && d.t > 60000)!;
    should(next.t).be.belowOrEqual(62000);
    const landed = run.decisions.find((d) => d.action === 'set' && d.t >= next.t && d.reason !== 'overdrive')!;
    should(landed.t - next.t).be.belowOrEqual(2100);
    should(landed.setpoint).be.within(150, 250);
  });

  it('charges only from surplus unless grid charging is allowed', function () {
    const load = (t: number) => (t < 30 ? -400 : 600);
    const run = simulate({ deadTimeS: 1, lagS: 1.5, meterDelayS: 0.5, answerMs: 100, load, durationS: 60, settings: { target: 100 } });
    // Target +100 W import while exporting 400 W: charging 400 W is all the surplus; the grid may not pay for 100 W more.
    for (const decision of run.decisions.filter((d) => d.action === 'set' && d.t < 30000)) should(decision.setpoint).be.aboveOrEqual(-400);
    const charging = run.trace.filter((p) => p.t > 10000 && p.t < 30000);
    should(Math.max(...charging.map((p) => p.grid))).be.belowOrEqual(50);
    const allowed = simulate({
      deadTimeS: 1,
      lagS: 1.5,
      meterDelayS: 0.5,
      answerMs: 100,
      load,
      durationS: 60,
      settings: { target: 100, gridCharge: true },
    });
    should(Math.min(...allowed.decisions.filter((d) => d.action === 'set').map((d) => d.setpoint!))).equal(-500);
  });

  it('stops charging at the charge SOC and discharging at the discharge SOC', function () {
    // A small battery that fills quickly from surplus, then empties into the load.
    const load = (t: number) => (t < 60 ? -1500 : 1500);
    const run = simulate({
      deadTimeS: 1,
      lagS: 1.5,
      meterDelayS: 0.5,
      answerMs: 100,
      load,
      durationS: 150,
      soc: 85,
      capacityWh: 100,
      readSocEveryMs: 5000,
      settings: { chargeSoc: 90, dischargeSoc: 80 },
    });
    const socs = run.decisions.filter((d) => d.action === 'set');
    for (const d of socs) {
      if (d.soc !== undefined && d.soc >= 90) should(d.setpoint).be.aboveOrEqual(0);
      if (d.soc !== undefined && d.soc <= 80) should(d.setpoint).be.belowOrEqual(0);
    }
    should(socs.some((d) => d.reason === 'soc')).be.true();
    should(run.regulator.setpoint).equal(0);
  });

  it('a silent meter: standby once the time-out has passed, and nothing more until readings come again', function () {
    const run = simulate({
      deadTimeS: 1,
      lagS: 1.5,
      meterDelayS: 0,
      answerMs: 100,
      load: () => 800,
      durationS: 40,
      silentFromS: 15,
      settings: { meterTimeoutMs: 5000 },
    });
    const timeouts = run.decisions.filter((d) => d.reason === 'meter timeout');
    should(timeouts).have.length(1);
    should(timeouts[0].action).equal('standby');
    // The last reading came at 14 s: within the time-out plus one interval.
    should(timeouts[0].t).be.within(19000, 20000);
    should(run.trace.at(-1)!.setpoint).equal(0);
  });

  it('a silent meter with self-consumption hands back; with keep nothing moves', function () {
    const silent = (onTimeout: 'self-consumption' | 'keep') =>
      simulate({
        deadTimeS: 1,
        lagS: 1.5,
        meterDelayS: 0,
        answerMs: 100,
        load: () => 800,
        durationS: 30,
        silentFromS: 15,
        settings: { meterTimeoutMs: 5000, onTimeout },
      });
    const back = silent('self-consumption');
    should(back.decisions.filter((d) => d.action === 'self-consumption')).have.length(1);
    should(back.regulator.setpoint).be.undefined();
    const keep = silent('keep');
    should(keep.decisions.filter((d) => d.t > 15000)).be.empty();
    should(keep.trace.at(-1)!.setpoint).equal(800);
  });

  it('holds while a setpoint is in flight, and after a failed one decides again', function () {
    const regulator = new Regulator(SETTINGS, 0);
    const first = regulator.meter(500, 0);
    should(first).containEql({ action: 'set', setpoint: 500, reason: 'start' });
    should(regulator.meter(480, 1000)).containEql({ action: 'hold', reason: 'in flight' });
    regulator.failed();
    const second = regulator.meter(480, 2000);
    should(second).containEql({ action: 'set', setpoint: 480 });
    regulator.acknowledge(second.setpoint!, 2100);
    // Right after, the battery has not moved: the grid still shows the load, which is no reason to move again.
    should(regulator.meter(470, 2500)).containEql({ action: 'hold' });
  });

  it('uses the battery power read with the meter instead of the models', function () {
    const regulator = new Regulator(SETTINGS, 0);
    regulator.meter(300, 0);
    regulator.acknowledge(300, 100);
    // 0.2 s later the models cannot know; the battery read in the same request says it already gives 300 W.
    should(regulator.meter(500, 300, 300)).containEql({ action: 'set', setpoint: 800, battery: 300 });
  });

  it('a plant’s own estimate of the battery (a group’s, each unit by its own lag) counts instead of the models’ range, within the family', function () {
    const after = (estimate?: (at: number) => number | undefined) => {
      const regulator = new Regulator(SETTINGS, 0);
      if (estimate) regulator.useEstimate(estimate);
      regulator.meter(300, 0);
      regulator.acknowledge(300, 100);
      // 1.5 s on, the grid shows 0: the battery gives anything from 0 to 300 W as far as the models know.
      return regulator.meter(0, 1600);
    };
    should(after()).containEql({ action: 'hold' });
    should(after(() => undefined)).containEql({ action: 'hold' });
    // The plant knows it gives 100 W: the load is 100 W.
    should(after(() => 100)).containEql({ action: 'set', setpoint: 100, battery: 100 });
    // An estimate no plant of the family could show counts as the nearest it could.
    should(after(() => 5000)).containEql({ action: 'hold', battery: 300 });
  });

  it('a unit that leaves the plant (its request failed) no longer counts: the estimate is not held within the family then', function () {
    // Two units carry 751 W (321 W and 430 W) at a steady grid; the 321 W unit is switched off. The plant's estimate
    // drops to the 430 W unit's power; the family, which saw only the total setpoint, still says 751 W.
    const after = (members: boolean) => {
      let units = 'big small';
      let power = 751;
      const regulator = new Regulator(SETTINGS, 0);
      regulator.useEstimate(() => power, members ? () => units : undefined);
      regulator.meter(751, 0);
      regulator.acknowledge(751, 100);
      for (let t = 1000; t <= 30000; t += 1000) regulator.meter(0, t);
      [units, power] = ['big', 430];
      return regulator.meter(321, 31000);
    };
    // The load is the 321 W the grid shows plus the 430 W still delivered: 751 W, where the setpoint is.
    should(after(true)).containEql({ action: 'hold', battery: 430 });
    // Held within the family, the small unit's 321 W counted on and the total went past 1000 W.
    const held = after(false);
    should(held.action).equal('set');
    should(held.battery).be.above(700);
    should(held.setpoint).be.above(1000);
  });

  /**
   * A group's regulator whose two units ('big small', 751 W) have held the grid at 0 for 30 s; `plant` sets the units
   * and the power the plant's estimate gives from then on.
   */
  function settledGroup() {
    const plant = { units: 'big small', power: 751 };
    const regulator = new Regulator(SETTINGS, 0);
    regulator.useEstimate(
      () => plant.power,
      () => plant.units,
    );
    regulator.meter(751, 0);
    regulator.acknowledge(751, 100);
    for (let t = 1000; t <= 30000; t += 1000) regulator.meter(0, t);
    return { regulator, plant };
  }

  it('a unit that leaves is handed over with the need of the last reading: that reading with the units left where it shows the unit gone, the need as it was where not yet', function () {
    // Two units carry 751 W (321 W and 430 W); the 321 W unit is switched off and its request fails. The last reading
    // showed the grid at `grid`: 292 W when the meter already shows the unit's power gone, 3 W when it does not yet.
    const left = (grid: number) => {
      const { regulator, plant } = settledGroup();
      regulator.meter(grid, 31000);
      Object.assign(plant, { units: 'big', power: 430 });
      return regulator.unitLeft(31100);
    };
    // Shown: the load is 292 W + 430 W; with the unit counted it would be 1043 W, a change the house did not make.
    should(left(292)).equal(722);
    // Not yet: the need stays (the unit left takes the share over before the meter shows it), not 433 W.
    should(left(3)).equal(754);
  });

  it('a slower unit that takes over after a unit left is not taken for a battery falling short of the models of the sum', function () {
    const { regulator, plant } = settledGroup();
    // The big unit is switched off; the small one, at rest, takes over 703 W.
    Object.assign(plant, { units: 'small', power: 0 });
    should(regulator.meter(703, 31000)).containEql({ action: 'set', setpoint: 703 });
    regulator.acknowledge(703, 31200);
    // 2 s on, the small unit (1.5 s of dead time, a 3 s lag) gives 130 W, far less than the fast models of the sum
    // expect: held as a shortfall, the regulator kept it at 703 W while it still answered.
    plant.power = 130;
    regulator.observeBattery(130, 33200, 33000);
    should(regulator.meter(573, 33500)).not.have.property('limitedBy');
  });

  it('a read-back (6000) after the battery settled replaces the setpoint as the state: the device stopped on its own', function () {
    const regulator = new Regulator(SETTINGS, 0);
    regulator.meter(600, 0);
    regulator.acknowledge(600, 100);
    regulator.observeBattery(0, 30000);
    // The battery gives nothing (e.g. at its SOC floor): the load is the 600 W the grid shows, not 1200 W.
    // It steers from what is delivered: no move to 1200 W.
    should(regulator.meter(600, 30500)).containEql({ action: 'hold', limitedBy: 'battery', delivered: 0 });
  });

  it('disabled: readings change nothing; enabled again it starts from what it knows', function () {
    const regulator = new Regulator(SETTINGS, 0);
    regulator.enable(false, 0);
    should(regulator.meter(900, 0)).containEql({ action: 'hold', reason: 'disabled' });
    should(regulator.tick(60000)).be.undefined();
    regulator.enable(true, 60000);
    should(regulator.tick(65000)).be.undefined();
    should(regulator.meter(900, 65000)).containEql({ action: 'set', setpoint: 900 });
    regulator.acknowledge(900, 65100);
    should(regulator.tick(70000)).be.undefined();
    should(regulator.tick(75100)).containEql({ action: 'standby', reason: 'meter timeout' });
  });

  it('a meter that never spoke leaves the battery alone: no time-out action before the first setpoint', function () {
    const regulator = new Regulator(SETTINGS, 0);
    should(regulator.tick(60000)).be.undefined();
    regulator.meter(400, 60000);
    regulator.failed();
    should(regulator.tick(120000)).be.undefined();
  });

  it('below the minimum power it stands by, and small errors inside the dead band change nothing', function () {
    const regulator = new Regulator(SETTINGS, 0);
    should(regulator.meter(30, 0)).containEql({ action: 'set', setpoint: 0 });
    regulator.acknowledge(0, 100);
    should(regulator.meter(45, 1000)).containEql({ action: 'hold' });
    should(regulator.meter(-15, 2000)).containEql({ action: 'hold', reason: 'dead band' });
  });

  it('a new target (adjust) steers from the next reading, and leaves the settings it was given alone', function () {
    const given = { ...SETTINGS };
    const regulator = new Regulator(given, 0);
    should(regulator.meter(500, 0, 0)).containEql({ action: 'set', setpoint: 500 });
    regulator.acknowledge(500, 100);
    // The battery gives the 500 W: the grid shows 0 W, the target.
    should(regulator.meter(0, 1000, 500)).containEql({ action: 'hold', reason: 'dead band' });
    regulator.adjust({ target: 300 });
    should(regulator.settings.target).equal(300);
    should(given.target).equal(0);
    // Load 500 W, 300 W of it from the grid: the battery gives 200 W.
    should(regulator.meter(0, 2000, 500)).containEql({ action: 'set', setpoint: 200, reason: 'load' });
    regulator.acknowledge(200, 2100);
    should(regulator.meter(300, 3000, 200)).containEql({ action: 'hold', reason: 'dead band' });
  });

  it('an exit with keep in the middle of a pulse leaves the setpoint the pulse was heading to, never the pulse', function () {
    let exited: Decision | undefined;
    let pulse: Decision | undefined;
    const run = simulate({
      ...KETTLE_HOUSE,
      durationS: 175,
      hook: (now, regulator, decisions) => {
        // The first pulse after 100 s (the kettle on at 150 s; going off into the PV's surplus it gets none: the floor), right after it was decided: the owner switches the loop off (keep).
        const last = decisions.at(-1);
        if (exited || now < 100000 || last?.reason !== 'overdrive' || last.t !== now - 10) return undefined;
        pulse = last;
        regulator.enable(false, now);
        exited = regulator.exit(now);
        return exited;
      },
    });
    should(exited).containEql({ action: 'set', setpoint: pulse!.steady });
    should(exited!.setpoint).not.equal(pulse!.setpoint);
    // Left between the need before and after the step (the loads -490 and 1510 W), within 150 W of the need after.
    const end = run.trace.at(-1)!;
    should(end.setpoint).equal(exited!.setpoint);
    should(Math.abs(end.setpoint - end.load)).be.belowOrEqual(150);
  });

  it('a pulse held at a power limit ends in time, though the next reading is 2 s away: no export, each kettle settled within 5.5 s', function () {
    const run = simulate({
      ...KETTLE_HOUSE,
      durationS: 270,
      meterMs: 2000,
      settings: { maxDischarge: 1800 },
    });
    const sets = run.decisions.filter((d) => d.action === 'set');
    should(sets.filter((d) => d.reason === 'overdrive' && d.setpoint === 1800).length).be.aboveOrEqual(3);
    // Held past its time, the pulse would drive the battery past the kettle's need: export.
    for (const { from, to, on } of kettleStretches(270).filter((stretch) => stretch.on)) {
      should(overshootW(run.trace, from, to, on)).be.belowOrEqual(20, `overshoot ${from}-${to} s`);
      should(settlingS(run.trace, from, to)).be.belowOrEqual(5.5, `settled ${from}-${to} s`);
    }
  });

  it('a pulse goes past the needed setpoint by at most the move itself (a slow battery: lag 5 s)', function () {
    const run = simulate({ deadTimeS: 1, lagS: 5, meterDelayS: 0, answerMs: 100, load: kettles, durationS: 400 });
    // Each move's first pulse (its follow-ups report the battery as it will be when they act).
    const pulses = run.decisions.filter((d) => d.reason === 'overdrive' && d.grid !== undefined);
    should(pulses.length).be.aboveOrEqual(2);
    for (const d of pulses)
      should(Math.abs(d.setpoint! - d.steady!)).be.belowOrEqual(Math.abs(d.steady! - d.battery!) + 1, JSON.stringify(d));
  });

  /**
   * A regulator that learnt the battery (lag 1.5 s, dead time 1 s) through kettle steps, with the kettle off and settled
   * at 205 s; then the kettle goes on: its pulse (discharging beyond the 1510 W needed), acknowledged.
   */
  function kettleOnPulse(settings: Partial<RegulatorSettings> = {}) {
    const run = simulate({ ...KETTLE_HOUSE, durationS: 205, settings });
    const r = run.regulator;
    should(r.inFlight).be.false();
    const held = r.setpoint!;
    should(held).be.within(-600, -400);
    const t = 205100;
    const pulse = r.meter(1510 - held, t);
    should(pulse).containEql({ action: 'set', reason: 'overdrive' });
    r.started(t);
    r.acknowledge(pulse.setpoint!, t + 100);
    return { r, t, held, pulse };
  }

  it('a reading that shows a new load ends a held pulse', function () {
    const { r, t, held } = kettleOnPulse();
    // It goes off again before the pulse ended (the battery has not moved yet): the load is back at -490 W.
    const next = r.meter(-490 - held, t + 600);
    should(next.action).equal('set');
    should(next.steady).be.below(0);
  });

  it('a meter time-out with keep in the middle of a pulse leaves the setpoint the pulse was heading to', function () {
    const { r, t, pulse } = kettleOnPulse({ onTimeout: 'keep' });
    // Its follow-up fails (the device went away), and the meter falls silent.
    r.failed();
    should(r.tick(t + 10200)).containEql({ action: 'set', setpoint: pulse.steady, reason: 'meter timeout' });
  });

  it('one bad reading (±4 kW) moves nothing; a real 3 kW step is followed one reading later', function () {
    const load = (t: number) => (t < 100 ? 300 : 3300);
    const bad = (t: number) => (t === 40 ? 4300 : t === 70 ? -3700 : undefined);
    const run = simulate({ deadTimeS: 1, lagS: 1.5, meterDelayS: 0, answerMs: 100, load, durationS: 130, badReading: bad });
    for (const at of [40, 70]) {
      should(run.decisions.filter((d) => d.action === 'set' && d.t >= at * 1000 && d.t < (at + 5) * 1000)).be.empty();
      should(run.decisions.find((d) => d.t === at * 1000)).containEql({ action: 'hold', reason: 'suspect' });
    }
    const grid = run.trace.filter((p) => p.t >= 30000 && p.t < 100000).map((p) => Math.abs(p.grid));
    should(Math.max(...grid)).be.belowOrEqual(50);
    // The step shows at 100 s; held back once, then followed at 101 s.
    const first = run.decisions.find((d) => d.action === 'set' && d.t >= 100000)!;
    should(first.t).be.belowOrEqual(101000);
  });

  it('two bad readings of opposite sign in a row move nothing: the second, no confirmation of the first, is held too', function () {
    // The held-out bench's bad readings came so (+3.3 kW and -3.1 kW a reading apart); the second was taken for a step
    // and sent the battery to its limit the other way.
    const bad = (t: number) => (t === 40 ? 3500 : t === 41 ? -3500 : t === 70 ? -3300 : t === 71 ? 3100 : undefined);
    const run = simulate({ deadTimeS: 1, lagS: 1.5, meterDelayS: 0, answerMs: 100, load: () => 300, durationS: 90, badReading: bad });
    should(run.decisions.filter((d) => d.action === 'set' && d.t >= 40000)).be.empty();
    for (const at of [40, 41, 70, 71])
      should(run.decisions.find((d) => d.t === at * 1000)).containEql({ action: 'hold', reason: 'suspect' });
  });

  it('a battery that delivers 600 W of a 1500 W setpoint is seen: no wind-up, output says so, the plant stays known', function () {
    const load = (t: number) => (t < 120 ? kettles(t) : t < 210 ? 1500 : t < 240 ? 300 : 1500);
    const run = simulate({
      deadTimeS: 1,
      lagS: 1.5,
      meterDelayS: 0,
      answerMs: 100,
      load,
      durationS: 270,
      readBatteryEveryMs: 3000,
      capW: (t) => (t >= 125 && t < 180 ? 600 : undefined),
    });
    const capped = run.decisions.filter((d) => d.t >= 120000 && d.t < 180000 && d.action === 'set');
    // Before the first read-back shows it, the falling battery looks like a load: bounded, far from the 2400 W maximum.
    for (const d of capped) should(d.setpoint!).be.belowOrEqual(1900);
    should(run.decisions.some((d) => d.limitedBy === 'battery' && d.delivered !== undefined && Math.abs(d.delivered - 600) < 50)).be.true();
    // When the cap lifts (180 s), no lasting export: settled within 10 s.
    should(settlingS(run.trace, 180, 210)).be.belowOrEqual(10);
    // The episode taught the models nothing wrong.
    const { lagS } = run.regulator.plant;
    should(lagS[0]).be.belowOrEqual(1.5);
    should(lagS[1]).be.aboveOrEqual(1.5);
  });

  it('a battery that delivers 600 W (the matrix house): seen while it answers the kettle, no wind-up whenever 6000 is read, at most 2 reversals', function () {
    const capW = (t: number) => (t >= 5 && t < 65 ? 600 : undefined);
    const stretches = [0, 5, 10, 40, 48, 52, 65, 66, 70, 76, 86, 90];
    // Read-backs every 3 s, the first after the kettle 1.5 to 3 s after the meter showed it (it shows at 10 s).
    for (const readBatteryOffsetMs of [2500, 0, 1000, 2300]) {
      const run = simulate({
        ...KETTLE_HOUSE,
        load: matrixHouse,
        durationS: 90,
        readBatteryEveryMs: 3000,
        readBatteryOffsetMs,
        capW,
        readOnCheckMs: 150,
      });
      const where = `read-backs from ${readBatteryOffsetMs} ms`;
      for (let i = 0; i + 1 < stretches.length; i++)
        should(reversals(run.decisions, stretches[i], stretches[i + 1])).be.belowOrEqual(2, `${where}: ${stretches[i]} s`);
      // The kettle's pulse is the only one: the battery's shortfall before a read-back shows it looks like more load
      // the same way, which gets no pulse of its own while the battery still answers.
      should(pulseStarts(run.decisions.filter((d) => d.action === 'set' && d.t >= 10000 && d.t < 40000))).have.length(1, where);
      // More of the kettle's way while the battery answers waits for a read of 6000 (it used to move on at once, to
      // 2271 W with read-backs from 2300 ms): at most 200 W past the kettle's need (1400 W) whenever the reads come.
      const sent = run.decisions.filter((d) => d.action === 'set' && d.reason !== 'overdrive' && d.t >= 10000 && d.t < 40000);
      should(Math.max(...sent.map((d) => d.setpoint!))).be.belowOrEqual(1600, where);
      // A read-back while the battery answers the kettle's pulse (within 2 s of it) shows the shortfall: what follows
      // stays at the kettle's need, no wind-up towards the maximum, and nothing reverses.
      if (readBatteryOffsetMs >= 2500 || readBatteryOffsetMs === 0) {
        const after = run.decisions.filter((d) => d.action === 'set' && d.t >= 12000 && d.t < 40000);
        should(Math.max(...after.map((d) => d.setpoint!))).be.belowOrEqual(1500, where);
        should(reversals(run.decisions, 10, 40)).be.belowOrEqual(1, where);
        should(run.decisions.some((d) => d.t < 14000 && d.limitedBy === 'battery')).be.true(where);
      }
    }
  });

  it("the device's own meter (a sample held for 3 s, read every second): a repeat moves nothing, at most 1 reversal", function () {
    // As the controller sets it up for meter source 'device': the meter up to a refresh (3 s) later.
    const settings = { heldMeter: true, slow: { ...PLANT_BOUNDS.slow, meterDelayS: PLANT_BOUNDS.slow.meterDelayS + 3 } };
    const stretches = [0, 10, 40, 48, 52, 66, 70, 76, 86, 90];
    for (const seed of [1, 2, 3])
      for (const answerMs of [100, 300]) {
        const run = simulate({ ...KETTLE_HOUSE, answerMs, load: matrixHouse, durationS: 90, holdMs: 3000, noiseW: 10, seed, settings });
        for (let i = 0; i + 1 < stretches.length; i++) {
          const where = `seed ${seed}, ${answerMs} ms answers, ${stretches[i]}-${stretches[i + 1]} s`;
          should(reversals(run.decisions, stretches[i], stretches[i + 1])).be.belowOrEqual(1, where);
        }
        // A step is still followed: the kettle settles within ±50 W in 10 s.
        should(settlingS(run.trace, 10, 40)).be.belowOrEqual(10);
      }
  });

  it("the device's own meter: a small load change (a trim) is still followed, over two new samples, not their repeats", function () {
    const settings = { heldMeter: true, slow: { ...PLANT_BOUNDS.slow, meterDelayS: PLANT_BOUNDS.slow.meterDelayS + 3 } };
    // 300 W, then 35 W more at 30 s: beyond the 20 W dead band, under two of them. The samples differ by a few watts
    // (a sample equal to the last is taken for its repeat).
    const load = (t: number) => (t < 30 ? 300 : 335);
    const run = simulate({ ...KETTLE_HOUSE, load, durationS: 60, holdMs: 3000, noiseW: 3, settings });
    const trim = run.decisions.find((d) => d.action === 'set' && d.t >= 30000)!;
    should(trim).be.ok();
    // Two new samples show it: from 30 s on, one every 3 s unless a sample equals the last (here 30, 33 and 36 s read
    // 35 W, 39 s 38 W). Counted with their repeats, the two never came one after the other.
    trim.t.should.be.belowOrEqual(42000);
    trim.setpoint!.should.be.approximately(335, 10);
  });

  it("the device's own meter read in the device's queue (a pulse delays the next reading): at most 1 reversal", function () {
    // Each reading is a request in a slot no setpoint takes, with battery power (6000) read in the same request: after a
    // pulse and its follow-up the held sample may be up to 3 s old. Taken with the models' battery (one fixed delay
    // each), such a sample moved the setpoint away from the load and back: 3 reversals at a 1050 ms pace.
    const settings = { heldMeter: true, slow: { ...PLANT_BOUNDS.slow, meterDelayS: PLANT_BOUNDS.slow.meterDelayS + 3 } };
    for (const intervalMs of [1000, 1050, 1100])
      for (const seed of [1, 2, 3])
        for (const answerMs of [100, 300]) {
          const house = { ...KETTLE_HOUSE, answerMs, load: matrixHouse, durationS: 90, noiseW: 10, seed };
          const run = simulate({ ...house, holdMs: 3000, meterInQueue: true, intervalMs, settings });
          for (let i = 0; i + 1 < MATRIX_STRETCHES.length; i++) {
            const [from, to] = [MATRIX_STRETCHES[i], MATRIX_STRETCHES[i + 1]];
            const where = `${intervalMs} ms pace, seed ${seed}, ${answerMs} ms answers, ${from}-${to} s`;
            should(reversals(run.decisions, from, to)).be.belowOrEqual(1, where);
          }
          gapsOk(run.requests, intervalMs);
          // A step is still followed: the kettle settles within ±50 W in 10 s.
          should(settlingS(run.trace, 10, 40)).be.belowOrEqual(10, `${intervalMs} ms pace, seed ${seed}, ${answerMs} ms answers`);
        }
  });

  it('the dead band in force is capped at 100 W however noisy the meter, reported with each decision, and on the import side', function () {
    const run = simulate({ deadTimeS: 1, lagS: 0.5, meterDelayS: 0, answerMs: 100, load: kettles, durationS: 150, noiseW: 150 });
    const bands = run.decisions.filter((d) => d.deadBand !== undefined).map((d) => d.deadBand!);
    should(bands.length).be.above(100);
    should(Math.max(...bands)).be.within(60, 100);
    // Quiet stretches (meter without noise): the grid settles between the target and the target plus the band.
    const quiet = simulate({ deadTimeS: 1, lagS: 0.5, meterDelayS: 0, answerMs: 100, load: kettles, durationS: 150 });
    for (const { from, to } of kettleStretches(150)) {
      const end = quiet.trace.filter((p) => p.t >= (to - 3) * 1000 && p.t < to * 1000).map((p) => p.grid);
      should(Math.min(...end)).be.aboveOrEqual(-10, `grid at the end of ${from}-${to} s`);
      should(Math.max(...end)).be.belowOrEqual(20, `grid at the end of ${from}-${to} s`);
    }
  });
});
