/**
 * Zero feed-in without Node-RED: wires a Regulator (src/control/regulator.ts) to a device session. It feeds the
 * regulator grid readings (given, or read from the device's own meter through the shared queue) and battery power,
 * sends its setpoints with RealTimeController, follows other writers of the same device, drives the pulse follow-ups
 * and the meter time-out by a timer, and on disable, close or a silent meter leaves the battery as configured. The
 * node (nodes/localbattery-zero-feed-in.ts) only turns messages into calls and decisions into messages and a status.
 */
import { REAL_TIME, pointByName } from '../points/catalogue';
import type { ClientSession } from '../device/client';
import { CONTROL_DEFAULTS, RealTimeController, STATE_CODES, parseControl, type ControlCommand, type ControllerSettings } from './control';
import { Regulator, gridReading, type Decision, type RegulatorSettings } from './regulator';

/** Where grid readings come from, and what a stop or disable leaves (node settings). */
export const METER_SOURCES = ['message', 'device'] as const;
export const ON_STOP = ['self-consumption', 'standby', 'keep'] as const;
export type MeterSource = (typeof METER_SOURCES)[number];
export type OnStop = (typeof ON_STOP)[number];

export interface ZeroFeedInConfig {
  regulator: RegulatorSettings;
  meterSource: MeterSource;
  meterIntervalMs: number;
  onStop: OnStop;
}

/** What the controller tells its host (the node): each decision, a change worth a new status, failures. */
export interface ZeroFeedInHost {
  decision(decision: Decision): void;
  changed(): void;
  failure(error: unknown): void;
  /** A battery power given with a reading that the battery cannot be giving (said once). */
  implausibleBattery(power: number): void;
}

const address = (name: string) => pointByName(name)!.address;
const METER = address('meterPower');
const METER_1600 = address('meterPower1600');
const BATTERY = address('batteryPower');
const SOC = address('batterySoc');
const SELF_CONSUMPTION = 1;
/** With the meter from messages, battery power and SOC are read this often (one request, shared with the others)... */
const STATE_READ_MS = 30000;
/** ...and this often while it steers: a battery that falls short of its setpoint is seen within seconds (this cost
 * the bench's house 0.2 to 0.9 Wh of grid error in 6 minutes: a read takes the slot a load step may need). */
const STEERING_READ_MS = 3000;
/** How often a read of 6000 is looked at: whether it is due, and whether a move under way lets it go. */
const MOVING_WAIT_MS = 1000;
/** The device's own meter refreshes this often (BK1600 Ultra, EMS V2.00.02): its reading may be this much older. */
const DEVICE_METER_REFRESH_S = 3;
/** How long before its acknowledgement a write may have been carried out (the specification's response time). */
const ANSWER_MS = 1000;
/** How often the regulator's clock is looked at (pulse follow-ups, a silent meter). */
const TICK_MS = 250;

/** The signed watts a command gives the battery (6000's sign): what the device acknowledged. */
function signedPower(command: ControlCommand): number {
  return command.state === 'charge' ? -command.power : command.state === 'discharge' ? command.power : 0;
}

export class ZeroFeedInController {
  readonly regulator: Regulator;
  private readonly controller: RealTimeController;
  private readonly controlOptions: ControllerSettings;
  private readonly timers = new Set<NodeJS.Timeout>();
  private tickTimer: NodeJS.Timeout | undefined;
  /** The hand-backs under way (disable, time-out), so that a close waits for every one rather than racing them. */
  private readonly handBacks = new Set<Promise<void>>();
  /** When this controller's last write was acknowledged (performance.now(), as the queue's known values). */
  private ownWriteAt = -Infinity;
  private closed = false;
  /** When battery power and SOC were last asked for (meter from messages). */
  private stateReadAt = -Infinity;
  private warnedBattery = false;

  constructor(
    private readonly session: ClientSession,
    private readonly config: ZeroFeedInConfig,
    private readonly host: ZeroFeedInHost,
    private readonly now: () => number = () => performance.now(),
  ) {
    // The device's meter may be up to its refresh older than the battery power read with it: a longer meter delay.
    const slow = { ...config.regulator.slow };
    if (config.meterSource === 'device') slow.meterDelayS += DEVICE_METER_REFRESH_S;
    const heldMeter = config.meterSource === 'device';
    this.regulator = new Regulator({ ...config.regulator, slow, requestIntervalMs: session.client.minIntervalMs, heldMeter }, now());
    this.controlOptions = {
      power: config.regulator.minPower,
      chargeSoc: config.regulator.chargeSoc,
      dischargeSoc: config.regulator.dischargeSoc,
      clamp: true,
      // The regulator keeps within its own maximum powers; the device's limits are the last check.
      limits: session.limits,
      switchMode: true,
      repeatMs: CONTROL_DEFAULTS.repeatSeconds * 1000,
      modeCheckMs: CONTROL_DEFAULTS.modeCheckSeconds * 1000,
    };
    this.controller = new RealTimeController(session, this.controlOptions);
  }

  /** Starts the reads and the clock. */
  start(): void {
    // What an earlier deployment saw of the working mode may be stale: the first setpoint waits for one read of it.
    void this.controller.learnMode();
    if (this.config.meterSource === 'device') this.later(() => this.pollMeter(), 0);
    else this.later(() => this.pollState(), 0);
    // A pulse's follow-up is due by time, and a silent meter is looked for.
    this.tickTimer = setInterval(() => {
      if (this.closed || this.handing) return;
      const decision = this.regulator.tick(this.now());
      if (decision) this.act(decision, true);
    }, TICK_MS);
  }

  private get handing(): boolean {
    return this.handBacks.size > 0;
  }

  /** A new grid power to hold (checked by the caller), from the next reading on. */
  setTarget(target: number): void {
    this.regulator.setTarget(target);
  }

  /** Turns the loop on or off; off, the battery is left as On stop says (with keep: the needed setpoint). */
  enable(on: boolean): void {
    const was = this.regulator.enabled;
    if (was && !on) void this.track(this.handBack(this.config.onStop));
    this.regulator.enable(on, this.now());
    // Back on: what the battery gives now is where the loop starts.
    if (!was && on) void this.readDevice(false);
    this.host.changed();
  }

  /**
   * A grid reading from a message (checked: W, positive importing); `battery` (W, positive discharging like 6000) and
   * `soc` (%) where the message carries them. An implausible battery power is ignored.
   */
  reading(grid: number, battery?: number, soc?: number): void {
    if (this.closed) return;
    if (battery !== undefined && !this.regulator.plausibleBattery(battery, this.now())) {
      if (!this.warnedBattery) this.host.implausibleBattery(battery);
      this.warnedBattery = true;
      battery = undefined;
    }
    if (soc !== undefined) this.regulator.observeSoc(soc, this.now());
    if (!this.regulator.enabled || this.handing) return;
    // While a write of this controller is on its way, what the queue knows may be that write.
    if (!this.regulator.inFlight) this.followOthers();
    this.act(this.regulator.meter(grid, this.now(), battery));
  }

  /** Stops the reads and the clock and leaves the battery as configured; resolves when the device has it. */
  close(): Promise<void> {
    this.closed = true;
    clearInterval(this.tickTimer);
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    return Promise.all([...this.handBacks]).then(() => (this.regulator.enabled ? this.handBack(this.config.onStop) : undefined));
  }

  /**
   * Another writer in this process (a control or write node, a dashboard button) changed the setpoint or the working
   * mode since this controller's last write: that is the state now, and the next reading steers from it.
   */
  private followOthers(): void {
    const mode = this.session.knownValue(REAL_TIME.modeAddress);
    const state = this.session.knownValue(REAL_TIME.stateAddress);
    const power = this.session.knownValue(REAL_TIME.powerAddress);
    // A write of the power (47016) alone changes the setpoint as well.
    const newest = Math.max(mode?.at ?? -Infinity, state?.at ?? -Infinity, power?.at ?? -Infinity);
    if (newest <= this.ownWriteAt) return;
    this.ownWriteAt = newest;
    // Handed back by another: only a controller that steers has a state to drop (at the start, the read of 6000 stands).
    if (mode && mode.at === newest && mode.value !== REAL_TIME.mode) {
      if (this.regulator.steering) this.regulator.handedBack();
    } else if (state && power && typeof power.value === 'number') {
      const watts = state.value === STATE_CODES.charge ? -power.value : state.value === STATE_CODES.discharge ? power.value : 0;
      // Carried out when it arrived, up to an answer time before it was acknowledged.
      this.regulator.acknowledge(watts, newest, newest - ANSWER_MS);
    }
  }

  private later(run: () => void, ms: number): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, ms);
    this.timers.add(timer);
  }

  private track(work: Promise<void>): Promise<void> {
    this.handBacks.add(work);
    void work.finally(() => this.handBacks.delete(work));
    return work;
  }

  private report(decision: Decision): void {
    if (!this.closed) this.host.decision(decision);
  }

  private failure(error: unknown): void {
    if (!this.closed) this.host.failure(error);
  }

  /**
   * Sends a setpoint (W, signed); the regulator learns when it left and whether the device acknowledged it, and an
   * overdrive's next setpoint follows at once, ahead of waiting reads (`urgent`). Never rejects.
   */
  private async send(watts: number, urgent = false): Promise<void> {
    const regulator = this.regulator;
    try {
      const command = parseControl(watts, this.controlOptions);
      const outcome = await this.controller.apply(command, false, undefined, { urgent, onStart: () => regulator.started(this.now()) });
      if (outcome.status === 'superseded') regulator.failed(true);
      else regulator.acknowledge(signedPower(command), this.now());
      this.ownWriteAt = this.now();
      if (!this.closed) this.host.changed();
    } catch (error) {
      regulator.failed();
      this.failure(error);
    }
    if (this.closed || this.handing) return;
    const next = regulator.followUp(this.now());
    if (next) this.act(next, true);
  }

  /**
   * Leaves the battery as `how` says (keep: the setpoint a pulse was heading to, where one may be in force); resolves
   * when the device has it (or it failed). Only a controller that steers acts. Never rejects.
   */
  private async handBack(how: OnStop): Promise<void> {
    if (!this.regulator.steering) return;
    try {
      if (how === 'keep') {
        const steady = this.regulator.exit(this.now());
        if (steady) {
          this.report(steady);
          await this.send(steady.setpoint!, true);
        }
      } else if (how === 'self-consumption') {
        await this.session.write(REAL_TIME.modeAddress, SELF_CONSUMPTION);
        this.ownWriteAt = this.now();
        this.regulator.handedBack();
      } else {
        await this.send(0);
      }
    } catch (error) {
      this.failure(error);
    }
  }

  private act(decision: Decision, urgent = false): void {
    this.report(decision);
    if (decision.action === 'set') void this.send(decision.setpoint!, urgent);
    else if (decision.action === 'standby') void this.send(0);
    else if (decision.action === 'self-consumption') void this.track(this.handBack('self-consumption'));
  }

  /** Battery power and SOC (and the meter, when it is the device's) in one read through the shared queue. */
  private async readDevice(withMeter: boolean): Promise<void> {
    const asked = this.now();
    try {
      const { values } = await this.session.read(withMeter ? [METER, METER_1600, BATTERY, SOC] : [BATTERY, SOC]);
      const number = (a: number) => (typeof values.get(a) === 'number' ? (values.get(a) as number) : undefined);
      const soc = number(SOC);
      if (soc !== undefined) this.regulator.observeSoc(soc, this.now());
      const battery = number(BATTERY);
      const meter = gridReading(values.get(METER) ?? values.get(METER_1600));
      // The meter may be up to its refresh older than 6000: the battery counts as a read-back, the models bridge the age.
      if (battery !== undefined) this.regulator.observeBattery(battery, this.now(), asked);
      if (withMeter && meter !== undefined) this.reading(meter);
    } catch (error) {
      this.failure(error);
    }
  }

  // The device's meter: one read per interval, the next only after the last has come back (the queue paces it).
  private pollMeter(): void {
    const started = this.now();
    void this.readDevice(true).finally(() =>
      this.later(() => this.pollMeter(), Math.max(0, this.config.meterIntervalMs - (this.now() - started))),
    );
  }

  private pollState(): void {
    const now = this.now();
    const every = this.regulator.steering ? STEERING_READ_MS : STATE_READ_MS;
    // A move under way has the device's slots first (a pulse's follow-up must not wait for a read), for up to one more
    // interval: a battery that does not follow shows within two.
    const wait = now - this.stateReadAt < every || (this.regulator.moving && now - this.stateReadAt < 2 * every);
    if (wait) return this.later(() => this.pollState(), MOVING_WAIT_MS);
    this.stateReadAt = now;
    void this.readDevice(false).finally(() => this.later(() => this.pollState(), MOVING_WAIT_MS));
  }
}
