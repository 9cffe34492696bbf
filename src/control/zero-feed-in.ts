/**
 * Zero feed-in without Node-RED: wires a Regulator (src/control/regulator.ts) to a plant (src/control/device-plant.ts:
 * one device's session, or a group of devices). It feeds the regulator grid readings (given, or read from the device's
 * own meter through the shared queue) and battery power, sends its setpoints through the plant, follows other writers
 * of the same device, drives the pulse follow-ups, the meter time-out and the repeats of a meter that publishes only on
 * change by a timer, and on disable, close or a silent meter leaves the battery as configured. The
 * node (nodes/localbattery-zero-feed-in.ts) only turns messages into calls and decisions into messages and a status.
 */
import type { ClientSession } from '../device/client';
import { DevicePlant, type BatteryPlant, type ReadOptions } from './device-plant';
import { Regulator } from './regulator';
import type { MeterFault } from './meter-check';
import type { BatteryMode, ChargeMode } from './modes';
import type { ZeroFeedInConfig, ZeroFeedInHost } from './zero-feed-in-config';
import { ControllerVoice } from './zero-feed-in-voice';
import { Exits } from './zero-feed-in-exits';
import { ReadSchedule } from './zero-feed-in-reads';
import { MeterInput, meterRegulatorSettings } from './zero-feed-in-meter';
import { Actuator } from './zero-feed-in-actuator';
import { ModeRoom } from './zero-feed-in-modes';

export {
  METER_SENDS,
  METER_SOURCES,
  ON_STOP,
  type MeterSends,
  type MeterSource,
  type OnStop,
  type ZeroFeedInConfig,
  type ZeroFeedInHost,
} from './zero-feed-in-config';

/** How often the regulator's clock is looked at (pulse follow-ups, a silent meter). */
const TICK_MS = 250;

/**
 * The facade the node, the group bench and the tests use. Its rooms, each with its own state and contract: the voice
 * (what the host is told, warnings once), the exits (disable, close, a meter fault: On stop), the read schedule (reads
 * of 6000, the device's meter), the meter input (readings, their repeats, the meter check), the actuator (the intent
 * sent through the plant) and the mode room (battery modes, grid charging, the plant's limits). Each reading runs one
 * cycle (take()): the snapshot (the battery given with it, the SOC, what other writers did), the regulator's decision,
 * the actuator's send. The order of calls is in docs/regulator.md (The controller's order of calls).
 */
export class ZeroFeedInController {
  readonly regulator: Regulator;
  readonly plant: BatteryPlant;
  private readonly voice: ControllerVoice;
  private readonly exits: Exits;
  private readonly reads: ReadSchedule;
  private readonly meter: MeterInput;
  private readonly actuator: Actuator;
  private readonly modes: ModeRoom;
  private tickTimer: NodeJS.Timeout | undefined;
  /** What the battery may still move by itself under the leash (Wh), as last read. */
  private leashWhNow: number | undefined;

  /** `steered`: one device's session, or a plant (a group of devices, src/control/group-plant.ts). */
  constructor(
    steered: ClientSession | BatteryPlant,
    config: ZeroFeedInConfig,
    host: ZeroFeedInHost,
    private readonly now: () => number = () => performance.now(),
  ) {
    const plant: BatteryPlant = (this.plant = 'apply' in steered ? steered : new DevicePlant(steered, config.regulator));
    const regulator = (this.regulator = new Regulator(meterRegulatorSettings(config, plant.minIntervalMs), now()));
    if (plant.estimate) regulator.useEstimate((at) => plant.estimate!(at), plant.members && (() => plant.members!()));
    plant.whenUnitLeaves?.(() => this.totalAfterLeave());
    // The charge mode charges from the grid as set: no floor then.
    plant.steeredBy?.({ steering: () => this.steers, floor: () => (this.modes.regulated ? regulator.floor : -Infinity) });
    const closed = () => this.exits.closed;
    const voice = (this.voice = new ControllerVoice(host, closed));
    const send = (watts: number, urgent?: boolean, soc?: number) => this.actuator.send(watts, urgent, soc);
    const { onStop } = config;
    const faultFound = (fault: MeterFault) => this.meter.faultFound(fault);
    this.exits = new Exits({ regulator, plant, now, voice, onStop, send, wrote: () => this.actuator.wrote(), faultFound });
    const read = (withMeter: boolean, options?: ReadOptions) => this.readDevice(withMeter, options);
    this.reads = new ReadSchedule({ regulator, config, now, closed, read });
    const bound = (setpoint: number) => this.modes.bound(setpoint);
    this.meter = new MeterInput({ regulator, config, now, voice, bound });
    const { reads } = this;
    this.actuator = new Actuator({
      regulator,
      plant,
      now,
      voice,
      reads,
      minPower: config.regulator.minPower,
      closed,
      bound,
      resting: () => this.exits.closed || this.exits.handing,
      regulating: () => this.regulating,
      selfConsumption: () => this.exits.track(this.exits.handBack('self-consumption')),
      afterSent: (sent) => this.modes.restoreAfter(sent),
    });
    const take = (grid: number) => this.take(grid);
    const heard = () => this.meter.heard;
    this.modes = new ModeRoom({ regulator, plant, config, now, voice, exits: this.exits, send, take, heard });
  }

  /** What the charge mode charges with (within the battery's own charge limit) and up to. */
  get chargeMode(): ChargeMode {
    return this.modes.chargeMode;
  }

  /** The battery mode in force (src/control/modes.ts). */
  get mode(): BatteryMode {
    return this.modes.mode;
  }

  /** What the battery may still move by itself if this controller stopped now (Wh; the leash); undefined when not known. */
  get leashWh(): number | undefined {
    return this.regulator.setpoint && this.modes.regulated ? this.leashWhNow : undefined;
  }

  /** Why the meter cannot be right, where it was found so: the loop stopped until it is enabled again. */
  get meterFault(): MeterFault | undefined {
    return this.meter.fault;
  }

  /** Starts the reads and the clock. */
  start(): void {
    // What an earlier deployment saw of the working mode may be stale: the first setpoint waits for one read of it.
    void this.plant.learn();
    this.modes.start();
    // The device's meter needs the maker's meter accessory: 7120 says whether it is set up, before the first reading.
    this.reads.start(() => this.checkDeviceMeter());
    // A pulse's follow-up is due by time, and a silent meter is looked for.
    this.tickTimer = setInterval(() => {
      // In charge and standby the regulator rests: no pulse, and the meter is not needed.
      if (this.exits.closed || this.exits.handing || !this.modes.regulated) return;
      const repeat = this.meter.repeat();
      if (repeat !== undefined) this.take(repeat);
      const decision = this.regulator.tick(this.now());
      if (decision) this.actuator.act(decision, true);
    }, TICK_MS);
  }

  /** Steering now: not closed, disabled, handing back, handed back or timed out. */
  private get steers(): boolean {
    const { regulator } = this;
    return !this.exits.closed && !this.exits.handing && regulator.enabled && regulator.steering && !regulator.meterTimedOut;
  }

  /** The regulator steers the battery now (normal or hold, on, no hand-back under way). */
  private get regulating(): boolean {
    const { regulator } = this;
    return !this.exits.closed && !this.exits.handing && regulator.enabled && this.modes.regulated && regulator.steering;
  }

  /** A new grid power to hold (checked by the caller), from the next reading on. */
  setTarget(target: number): void {
    this.regulator.adjust({ target });
  }

  /** Turns the loop on or off; off, the battery is left as On stop says (with keep: the needed setpoint). */
  enable(on: boolean): void {
    if (on) this.meter.enabledAgain();
    const was = this.regulator.enabled;
    if (was && !on) this.exits.disable();
    this.regulator.enable(on, this.now());
    this.modes.switched(was, on);
    // Back on: what the battery gives now is where the loop starts (a meter that sends on change was silent meanwhile);
    // a mode that sets the setpoint sets it at once.
    if (!was && on) {
      this.modes.forget();
      void this.readDevice(false);
      this.meter.resume();
      if (!this.modes.regulated) this.modes.steerFixed(undefined, true);
    }
    this.voice.changed();
  }

  /**
   * A new battery mode (checked by the caller), obeyed at once: a pulse under way ends on the value it was heading
   * to, within the new mode; hold sends no discharge, charge and standby their setpoint, normal steers from the next
   * reading. Off, the mode waits for the loop to be on again.
   */
  setMode(mode: BatteryMode): void {
    if (mode !== this.modes.mode) this.modes.set(mode);
    this.voice.changed();
  }

  /**
   * A grid reading from a message (checked; in the meter's sign and unit, converted here); `battery` (W, positive
   * discharging like 6000) and `soc` (%) where the message carries them. An implausible battery power is ignored.
   */
  reading(given: number, battery?: number, soc?: number): void {
    if (this.exits.closed) return;
    this.take(this.meter.given(given), battery, soc);
  }

  /** One cycle on a grid reading (a message's, its repeat or the device's meter): snapshot, decision, send. */
  private take(grid: number, given?: number, soc?: number): void {
    const snapshot = this.snapshot(grid, given, soc);
    if (!snapshot) return;
    const answered = this.meter.answer(grid);
    if (answered) return this.exits.stopForMeter(answered);
    const held = this.meter.commanded;
    const decision = this.regulator.meter(grid, this.now(), snapshot.battery);
    // While the meter check's probe shows, what the regulator decided is dropped (its models still learn the reading).
    const holding = this.meter.holding;
    if (holding && decision.action === 'set') this.regulator.failed(true);
    const fault = this.meter.verdict(grid, decision, held);
    if (fault) return this.exits.stopForMeter(fault);
    if (holding) return;
    // The meter check's probe, where one is due, goes instead of a hold (and no read follows it).
    const probe = this.meter.probe(decision);
    if (probe) return this.actuator.act(probe);
    this.actuator.act(decision);
    this.reads.afterHold(decision);
  }

  /**
   * What the regulator takes with a reading: the battery power given with it where plausible, the SOC, and what other
   * writers did meanwhile. Undefined where the regulator takes none: closed, off, handing back, or resting in charge or
   * standby (whose mode steers from the reading itself).
   */
  private snapshot(grid: number, given?: number, soc?: number): { battery: number | undefined } | undefined {
    const { regulator, meter } = this;
    if (this.exits.closed) return undefined;
    const battery = meter.plausible(given);
    if (soc !== undefined) regulator.observeSoc(soc, this.now());
    if (!regulator.enabled || this.exits.handing) {
      meter.gap();
      return undefined;
    }
    if (!this.modes.regulated) {
      meter.gap();
      this.modes.steerFixed(grid, false);
      return undefined;
    }
    // While a write of this controller is on its way, what the queue knows may be that write.
    if (!regulator.inFlight) this.actuator.followOthers();
    meter.taken();
    return { battery };
  }

  /**
   * Battery power and SOC (and the meter, when it is the device's) in one read through the shared queue; `signal`
   * withdraws it while it waits (quietly).
   */
  private async readDevice(withMeter: boolean, options: ReadOptions = {}): Promise<void> {
    const { regulator, modes } = this;
    const asked = this.now();
    try {
      const { battery, soc, meter, dischargeSoc, leashWh } = await this.plant.read(withMeter, options);
      if (soc !== undefined) regulator.observeSoc(soc, this.now());
      modes.followFloor(dischargeSoc);
      modes.followLimits();
      this.leashWhNow = leashWh ?? this.leashWhNow;
      // In charge, the SOC decides when it stops (with the device's meter, the reading below looks).
      if (!withMeter && !modes.regulated && regulator.enabled && !this.exits.handing && !this.exits.closed)
        modes.steerFixed(undefined, false);
      // The meter may be up to its refresh older than 6000: the battery counts as a read-back, the models bridge the age.
      if (battery !== undefined) regulator.observeBattery(battery, this.now(), asked);
      if (this.regulating) {
        this.actuator.checkCommand();
        this.actuator.renewLeash();
      }
      // A frozen meter's repeats are no readings: the time-out acts.
      if (withMeter && meter !== undefined && !this.meter.frozen(meter, battery)) this.take(meter);
    } catch (error) {
      if (!options.signal?.aborted) this.voice.failure(error);
    }
  }

  /** The device's meter not set up (7120): the loop does not start. A failed read leaves it to the readings. Never rejects. */
  private async checkDeviceMeter(): Promise<void> {
    try {
      if ((await this.plant.meterConnected?.()) === false) this.exits.stopForMeter('not connected');
    } catch (error) {
      this.voice.failure(error);
    }
  }

  /** A unit of the group left: the total its share goes over with, as the regulator reads the last reading now. */
  private totalAfterLeave(): number | undefined {
    if (this.exits.closed || this.exits.handing || !this.regulator.enabled || !this.modes.regulated) return undefined;
    const total = this.regulator.unitLeft(this.now());
    return total === undefined ? undefined : this.modes.bound(total);
  }

  /** Stops the reads and the clock and leaves the battery as configured; resolves when the device has it. */
  close(): Promise<void> {
    const handedBack = this.exits.close();
    this.plant.close?.();
    clearInterval(this.tickTimer);
    this.reads.close();
    // The charge mode's grid charging goes back as it was.
    return handedBack.then(() => this.modes.gridCharging(false));
  }
}
