/**
 * The group regulator over hours, in simulated time (issue 25: the SOC spread narrows during a long discharge and a
 * long charge). The product's own parts run as the node wires them: ZeroFeedInController (its Regulator and timers)
 * over a GroupPlant (splitGroup's staging and balance by SOC, unitHealth), on a VirtualClock. Only the devices are
 * simulated: each unit is a DeviceSimulator in one SharedHouse behind one meter (capacity, one-way efficiency, 30 W
 * of self-use while active, its dead time and lag), reached through SimulatedUnit, a plant of one unit that stands
 * for the device's queue as scripts/bench-day.js does: one request at a time at the device's 1 s pace, each answered
 * 0.4 s after it left; a newer setpoint replaces one still waiting; an acknowledged setpoint is not sent again within
 * the repeat time (as RealTimeController skips it). The meter is read once a second and given to the controller as a
 * message would. Used by test/group-long-run.test.ts and scripts/bench-group.js (its long run).
 */
import { ZeroFeedInController, type OnStop } from '../src/control/zero-feed-in';
import { type MeterFault, type MeterSign, type MeterUnit } from '../src/control/meter-check';
import { GroupPlant, type UnitReport } from '../src/control/group-plant';
import type { BatteryPlant, PlantOutcome, PlantReading, ReadOptions, SendOptions } from '../src/control/device-plant';
import { CONTROL_DEFAULTS, controlValues, parseControl, type ControlOptions } from '../src/control/control';
import type { RegulatorSettings } from '../src/control/regulator';
import type { Decision } from '../src/control/regulator-types';
import { zeroFeedInSettings } from '../src/editor/inputs';
import { groupLimits } from '../src/points/catalogue';
import { MODEL_CLASSES, REAL_TIME, type PowerLimits } from '../src/points/catalogue';
import { DeviceSimulator, SharedHouse, type Derating, type HouseScenario, type MeterFeedOptions } from '../src/simulator';
import type { ModelClass } from '../src/points/catalogue';
import { VirtualClock, settle } from './virtual-clock';

/**
 * The house of the group bench (scripts/bench-group.js), 100 s: 300 W ± 10 W, a fridge, 900 W of PV; a 2 kW kettle
 * 20-50 s, a cloud taking 85 % of the PV 62-88 s (5 s ramps): the direction reverses four times.
 */
export const benchHouse = (seed = 25): HouseScenario => ({
  seed,
  baseLoadW: 300,
  noiseW: 10,
  appliances: [{ name: 'fridge', powerW: 110, onS: 40, offS: 60, startS: 5 }],
  pvW: 900,
  events: [
    { name: 'kettle', atS: 20, durationS: 30, loadW: 2000 },
    { name: 'cloud', atS: 62, durationS: 26, cloud: 0.85, rampS: 5 },
  ],
});

/** The device's pace and response time, as scripts/bench-day.js has them (ms). */
const PACE_MS = 1000;
const ANSWER_MS = 400;
/** The physics' step, s: short against the units' dead times and lags. */
const STEP_S = 0.1;

export interface LongUnit {
  key: string;
  model: ModelClass;
  initialSoc: number;
  deadTimeS: number;
  lagS: number;
  /** Default: the model class's rated capacity. */
  capacityKwh?: number;
  /** Times the battery delivers less than its setpoint (see DeviceSimulator's derating). */
  derating?: readonly Derating[];
}

export interface LongRunOptions {
  units: readonly LongUnit[];
  house: HouseScenario;
  seconds: number;
  /** A sample of every unit this often, s. */
  sampleS: number;
  /** One-way, 0 to 1 (see DeviceSimulator's efficiency). */
  efficiency: number;
  /** Each meter reading reaches the controller this much after it was taken (s; default 0). */
  meterLateS?: number;
  /** The meter's timing, gaps and noise, instead of a reading every second from 0.5 s, `meterLateS` late. */
  meterFeed?: MeterFeedOptions;
  /** The unit of this index is switched off at `atS`: its battery stops and its requests fail (refused at once). */
  switchOff?: { unit: number; atS: number };
  /** The unit of this index answers nothing from `fromS` until `toS` (its battery goes on). */
  offline?: { unit: number; fromS: number; toS: number };
  /** What a stop or disable leaves (default self-consumption), and grid charging (default off). */
  onStop?: OnStop;
  gridCharge?: boolean;
  /** The controller is enabled (msg.enable = true) at this time (s): after a meter fault, the owner starts it again. */
  enableAtS?: number;
  /** The controller is closed or disabled at the first step where `when` says so; the run goes on to `seconds`. */
  end?: { how: 'close' | 'disable'; when: (t: number, record: LongRecord) => boolean };
  /** How the meter gives its readings (default: W, import positive); a wrong one is what issue 34 catches. */
  meterGives?: { sign: MeterSign; unit: MeterUnit };
  /** Node settings beyond the bench's (e.g. meterSign, meterUnit). */
  settings?: Record<string, unknown>;
  /** One unit steered as one device (its plant alone), not as a group of one. */
  alone?: boolean;
  /** Each request is answered this long after it left (ms; default ANSWER_MS). */
  answerMs?: number;
  /** Each decision of the controller, as the node's output would carry it. */
  onDecision?: (decision: Decision, t: number) => void;
}

/** A request a unit carried out (s): a setpoint (W, signed like 6000), a read, or the hand-back to self-consumption. */
export type UnitRequest = { t: number; kind: 'setpoint' | 'read' | 'self-consumption'; watts?: number };

export interface LongSample {
  t: number;
  grid: number;
  units: { soc: number; b: number; s: number }[];
}

export interface LongRecord {
  samples: LongSample[];
  /** ∫|grid − target| dt, Wh. */
  errorWh: number;
  selfUseWh: number;
  movedWh: number;
  groupWh: number;
  /** Requests each unit carried out (writes of a setpoint). */
  writes: number[];
  /** The controller's failures (none expected unless a unit is switched off). */
  failures: unknown[];
  /** The meter's readings as the controller got them (s, W). */
  readings: { t: number; grid: number }[];
  /** When the unit was switched off (s). */
  offAt?: number;
  /** The meter faults the controller found (s). */
  meterFaults: { t: number; fault: MeterFault }[];
  /** The battery charging from the grid (what it charged beyond the export), Wh; exporting what it discharged, Wh. */
  chargedFromGridWh: number;
  exportedByBatteryWh: number;
  /** Each unit at the end, as the output message shows it. */
  report: UnitReport[];
  /** Each unit's requests, as they went. */
  requests: UnitRequest[][];
  /** When the controller was closed or disabled (s), and its hand-back done. */
  endAt?: number;
  handedBackAt?: number;
  /** The setpoint the regulator stood behind once the hand-back was done (W). */
  steadyAfterEnd?: number;
  /** The plant's totals as the controller sent them (s, W). */
  totals: { t: number; watts: number }[];
}

interface Job {
  kind: 'write' | 'read';
  urgent: boolean;
  onStart?: () => void;
  signal?: AbortSignal;
  watts?: number;
  run: () => PlantOutcome | PlantReading;
  resolve: (value: PlantOutcome | PlantReading) => void;
  reject: (error: unknown) => void;
}

const signed = (values: readonly number[]) => (values[0] === 1 ? -values[1] : values[0] === 2 ? values[1] : 0);

/** One simulated unit as a plant: its device's queue, pace and answer time, on the clock the globals have now. */
export class SimulatedUnit implements BatteryPlant {
  readonly minIntervalMs = PACE_MS;
  writes = 0;
  readonly requests: UnitRequest[] = [];
  private readonly queue: Job[] = [];
  private readonly controlOptions: ControlOptions;
  private free = 0;
  private busy = false;
  private waiting = false;
  private last: { values: number[]; at: number } | undefined;

  constructor(
    readonly sim: DeviceSimulator,
    readonly limits: PowerLimits,
    private readonly now: () => number,
    { minPower, chargeSoc, dischargeSoc }: Pick<RegulatorSettings, 'minPower' | 'chargeSoc' | 'dischargeSoc'>,
    private readonly answerMs = ANSWER_MS,
  ) {
    // As DevicePlant's RealTimeController takes a setpoint: clamped to the limits, the SOCs carried with it.
    this.controlOptions = { power: minPower, chargeSoc, dischargeSoc, clamp: true, limits };
  }

  learn(): Promise<void> {
    return Promise.resolve();
  }

  apply(watts: number, options: SendOptions): Promise<PlantOutcome> {
    const values = controlValues(parseControl(options.soc === undefined ? watts : { power: watts, soc: options.soc }, this.controlOptions));
    const outcome = { superseded: false, watts: signed(values) };
    // A setpoint waiting replaces the one before it (the hand-back to self-consumption is none).
    const waiting = this.queue.findIndex((job) => job.kind === 'write' && job.watts !== undefined);
    if (waiting !== -1) {
      const [old] = this.queue.splice(waiting, 1);
      old.resolve({ superseded: true, watts: old.watts ?? 0 });
    }
    const { last } = this;
    const repeat = last && values.every((v, i) => v === last.values[i]) && this.now() - last.at < CONTROL_DEFAULTS.repeatSeconds * 1000;
    if (repeat) return Promise.resolve(outcome);
    return this.enqueue({ kind: 'write', urgent: options.urgent, onStart: options.onStart, watts: outcome.watts }, () => {
      // After a hand-back the mode is switched to real-time control first, as RealTimeController does: its own request.
      if (this.sim.workingMode !== REAL_TIME.mode) {
        this.sim.setData(REAL_TIME.modeAddress, [REAL_TIME.mode]);
        this.free += PACE_MS;
      }
      this.sim.setData(REAL_TIME.stateAddress, values);
      this.last = { values, at: this.now() + this.answerMs };
      this.writes++;
      this.log('setpoint', outcome.watts);
      return outcome;
    }) as Promise<PlantOutcome>;
  }

  read(withMeter: boolean, options: ReadOptions = {}): Promise<PlantReading> {
    const job = { kind: 'read' as const, urgent: false, onStart: options.onStart, signal: options.signal };
    return this.enqueue(job, () => ({
      ...this.log('read'),
      battery: this.sim.batteryPower,
      soc: this.sim.soc,
      meter: withMeter ? this.sim.meterPower : undefined,
    })) as Promise<PlantReading>;
  }

  selfConsumption(): Promise<void> {
    const job = { kind: 'write' as const, urgent: true };
    return this.enqueue(job, () => {
      this.sim.setData(REAL_TIME.modeAddress, [1]);
      this.log('self-consumption');
      // A hand-back forgets the setpoint: the next one is no repeat.
      this.last = undefined;
      return { superseded: false, watts: 0 };
    }).then(() => undefined);
  }

  gridCharging(): Promise<boolean> {
    return Promise.resolve(true);
  }

  othersWrote(): undefined {
    return undefined;
  }

  private log(kind: UnitRequest['kind'], watts?: number): object {
    this.requests.push({ t: this.now() / 1000, kind, ...(watts === undefined ? {} : { watts }) });
    return {};
  }

  private enqueue(
    job: Omit<Job, 'run' | 'resolve' | 'reject'>,
    run: () => PlantOutcome | PlantReading,
  ): Promise<PlantOutcome | PlantReading> {
    return new Promise((resolve, reject) => {
      const entry: Job = { ...job, run, resolve, reject };
      // A read withdrawn while it waits is rejected with the signal's reason, as the queue does.
      job.signal?.addEventListener('abort', () => {
        const at = this.queue.indexOf(entry);
        if (at === -1) return;
        this.queue.splice(at, 1);
        reject(job.signal!.reason as Error);
      });
      this.queue[job.urgent ? 'unshift' : 'push'](entry);
      this.pump();
    });
  }

  private pump(): void {
    if (this.busy || this.waiting || this.queue.length === 0) return;
    this.waiting = true;
    setTimeout(() => this.next(), Math.max(0, this.free - this.now()));
  }

  private next(): void {
    this.waiting = false;
    const job = this.queue.shift();
    if (!job) return;
    this.busy = true;
    this.free = this.now() + PACE_MS;
    job.onStart?.();
    // Switched off: the request is refused at once.
    if (this.sim.currentFault === 'offline') {
      this.busy = false;
      job.reject(new Error('connect ECONNREFUSED'));
      this.pump();
      return;
    }
    const result = job.run();
    setTimeout(() => {
      this.busy = false;
      job.resolve(result);
      this.pump();
    }, this.answerMs);
  }
}

/** The group regulator on `options.units` through `options.seconds` of `options.house`; the globals' timers are virtual meanwhile. */
export async function groupLongRun(options: LongRunOptions): Promise<LongRecord> {
  const house = new SharedHouse({
    house: options.house,
    timeScale: 0,
    meterFeed: options.meterFeed ?? { everyS: 1, startS: 0.5, lateS: options.meterLateS },
  });
  const sims = options.units.map(
    (u, i) =>
      new DeviceSimulator({
        sharedHouse: house,
        udpPort: null,
        workingMode: REAL_TIME.mode,
        model: u.model,
        initialSoc: u.initialSoc,
        capacityKwh: u.capacityKwh,
        deadTimeS: u.deadTimeS,
        lagS: u.lagS,
        derating: u.derating,
        efficiency: options.efficiency,
        serialNumber: `SIMLONG00000000${i + 1}`,
      }),
  );
  // Each unit at its model class's limits (the catalogue's), the group at their sum as the node has it.
  const limits = options.units.map(({ model }) => ({
    chargeLimit: MODEL_CLASSES[model].maxChargePower,
    dischargeLimit: MODEL_CLASSES[model].maxDischargePower,
  }));
  const config = zeroFeedInSettings(
    {
      meterSource: 'message',
      meterInterval: 1,
      target: 0,
      onStop: options.onStop ?? 'self-consumption',
      gridCharge: options.gridCharge ?? false,
      ...options.settings,
    },
    groupLimits(limits.map((unitLimits) => ({ limits: unitLimits }))),
  );
  const clock = new VirtualClock();
  const now = () => clock.now;
  const restore = clock.install();
  const record: LongRecord = {
    samples: [],
    errorWh: 0,
    selfUseWh: 0,
    movedWh: 0,
    groupWh: 0,
    writes: [],
    failures: [],
    meterFaults: [],
    chargedFromGridWh: 0,
    exportedByBatteryWh: 0,
    readings: [],
    report: [],
    requests: [],
    totals: [],
  };
  try {
    const plants = options.units.map((_, i) => new SimulatedUnit(sims[i], limits[i], now, config.regulator, options.answerMs));
    record.requests = plants.map((p) => p.requests);
    const members = options.units.map((u, i) => ({ id: u.key, session: plants[i], capacityWh: sims[i].ratedCapacityKwh * 1000 }));
    const group = new GroupPlant(members, config.regulator, { now });
    const apply = group.apply.bind(group);
    group.apply = (watts, sendOptions) => {
      record.totals.push({ t: now() / 1000, watts });
      return apply(watts, sendOptions);
    };
    const host = {
      decision: (decision: Decision) => options.onDecision?.(decision, clock.now / 1000),
      changed: () => undefined,
      failure: (e: unknown) => record.failures.push(e),
      implausibleBattery: () => undefined,
      meterFault: (fault: MeterFault) => record.meterFaults.push({ t: house.simSeconds, fault }),
    };
    const zero = new ZeroFeedInController(options.alone ? plants[0] : group, config, host, now);
    zero.start();
    const steps = Math.round(options.seconds / STEP_S);
    const every = Math.max(1, Math.round(options.sampleS / STEP_S));
    const target = config.regulator.target;
    let closed = false;
    const handedBack = () => {
      record.handedBackAt = clock.now / 1000;
      record.steadyAfterEnd = zero.regulator.steady;
    };
    for (let k = 0; k <= steps; k++) {
      if (k > 0) house.run(STEP_S);
      const end = options.end;
      if (end && record.endAt === undefined && end.when(house.simSeconds, record)) {
        record.endAt = house.simSeconds;
        if (end.how === 'close') void zero.close().finally(() => ((closed = true), handedBack()));
        else {
          zero.enable(false);
          void settle().then(() => handedBack());
        }
      }
      if (options.enableAtS !== undefined && k === Math.round(options.enableAtS / STEP_S)) zero.enable(true);
      const off = options.switchOff;
      if (off && record.offAt === undefined && house.simSeconds >= off.atS) {
        sims[off.unit].switchOff();
        record.offAt = house.simSeconds;
      }
      const offline = options.offline;
      if (offline) sims[offline.unit].setFault(house.simSeconds >= offline.fromS && house.simSeconds < offline.toS ? 'offline' : null);
      await clock.runTo(house.simSeconds * 1000);
      for (const reading of sims[0].takeMeterReadings()) {
        record.readings.push({ t: house.simSeconds, grid: reading.grid });
        zero.reading(options.meterGives ? asGiven(reading.grid, options.meterGives) : reading.grid);
        await settle();
      }
      const dt = k > 0 ? STEP_S : 0;
      record.errorWh += (Math.abs(house.gridW - target) * dt) / 3600;
      const battery = sims.reduce((sum, sim) => sum + sim.batteryPower, 0);
      record.chargedFromGridWh += (Math.max(0, Math.min(-battery, house.gridW)) * dt) / 3600;
      record.exportedByBatteryWh += (Math.max(0, Math.min(battery, -house.gridW)) * dt) / 3600;
      if (k % every === 0)
        record.samples.push({
          t: house.simSeconds,
          grid: house.gridW,
          units: sims.map((sim) => ({ soc: sim.exactSoc, b: sim.batteryPower, s: signed(controlValuesOf(sim)) })),
        });
    }
    record.report = group.report();
    if (!closed) void zero.close().finally(() => (closed = true));
    for (let k = 0; k < 20 && !closed; k++) await clock.runTo(clock.now + PACE_MS);
    Object.assign(record, {
      selfUseWh: house.selfUseWh,
      movedWh: house.movedBetweenUnitsWh,
      groupWh: house.chargedWh + house.dischargedWh,
      writes: plants.map((p) => p.writes),
    });
  } finally {
    restore();
  }
  return record;
}

/** What a meter that gives `gives` shows for `grid` (W, import positive). */
function asGiven(grid: number, gives: { sign: MeterSign; unit: MeterUnit }): number {
  const signed = gives.sign === 'export-positive' ? -grid : grid;
  return gives.unit === 'kW' ? signed / 1000 : signed;
}

/** The setpoint a unit holds (state, power) as signed watts; 0 outside real-time mode. */
function controlValuesOf(sim: DeviceSimulator): number[] {
  if (sim.workingMode !== REAL_TIME.mode) return [0, 0];
  const { state, power } = sim.control;
  return [state, power];
}

/** Largest SOC minus smallest, points. */
export const spread = (sample: LongSample) => Math.max(...sample.units.map((u) => u.soc)) - Math.min(...sample.units.map((u) => u.soc));
