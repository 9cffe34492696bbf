/**
 * Zero feed-in: holds the grid meter at its target by steering the battery in real-time control. The regulator
 * (src/control/regulator.ts) decides; this node feeds it grid readings (from messages, or read from the device's own meter
 * through the shared queue), sends its setpoints with RealTimeController through the node's session, reports each
 * decision, and on close, disable or a silent meter leaves the battery as configured.
 */
import type { Node, NodeAPI, NodeDef, NodeMessageInFlow } from 'node-red';
import { REAL_TIME, pointByName } from '../src/points/catalogue';
import type { ClientSession } from '../src/device/client';
import {
  CONTROL_DEFAULTS,
  RealTimeController,
  STATE_CODES,
  parseControl,
  type ControlCommand,
  type ControllerSettings,
} from '../src/control/control';
import { ValidationError } from '../src/errors';
import { numberIn, zeroFeedInSettings, type ZeroFeedInSettings } from '../src/editor/inputs';
import { Regulator, ZERO_FEED_IN_RULES, gridReading, type Decision, type OnStop } from '../src/control/regulator';
import { deviceOf, errorStatus, keepErrorCodes } from './shared';

interface ZeroFeedInDef extends NodeDef {
  device: string;
  meterSource: string;
  meterInterval: string | number;
  target: string | number;
  deadBand: string | number;
  maxCharge: string | number;
  maxDischarge: string | number;
  chargeSoc: string | number;
  dischargeSoc: string | number;
  meterTimeout: string | number;
  onTimeout: string;
  gridCharge: boolean;
  onStop: string;
}

const address = (name: string) => pointByName(name)!.address;
const METER = address('meterPower');
const METER_1600 = address('meterPower1600');
const BATTERY = address('batteryPower');
const SOC = address('batterySoc');
const SELF_CONSUMPTION = 1;
/** With the meter from messages, battery power and SOC are read this often (one request, shared with the others)... */
const STATE_READ_MS = 30000;
/** ...and this often while the node steers: a battery that falls short of its setpoint is seen within seconds. */
const STEERING_READ_MS = 3000;
/** The device's own meter refreshes this often (BK1600 Ultra, EMS V2.00.02): its reading may be this much older. */
const DEVICE_METER_REFRESH_S = 3;
/** How long before its acknowledgement a write may have been carried out (the specification's response time). */
const ANSWER_MS = 1000;
/** How often a silent meter is looked for. */
const TICK_MS = 250;
/** A hand-back on closing may take this long (a request waiting behind others); Node-RED's own limit is 15 s. */
const CLOSE_BOUND_MS = 10000;

/** The signed watts a command gives the battery (6000's sign): what the device acknowledged. */
function signedPower(command: ControlCommand): number {
  return command.state === 'charge' ? -command.power : command.state === 'discharge' ? command.power : 0;
}

export = function (RED: NodeAPI) {
  function ZeroFeedInNode(this: Node, def: ZeroFeedInDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    keepErrorCodes(RED, node);
    const missing = RED._('localbattery-zero-feed-in.errors.noDevice');
    const device = deviceOf(RED, node, def.device, missing);
    const session: ClientSession | undefined = device?.open(node);
    let closed = false;
    const timers = new Set<NodeJS.Timeout>();

    let settings: ZeroFeedInSettings | undefined;
    let configError: Error | undefined;
    if (session) {
      try {
        settings = zeroFeedInSettings(def, session.limits);
      } catch (error) {
        configError = error as Error;
        node.status({ fill: 'red', shape: 'ring', text: RED._('localbattery-zero-feed-in.status.invalidConfig') });
        node.error(configError.message);
      }
    }
    if (!session || !settings) {
      node.on('input', (_msg: NodeMessageInFlow, _send: unknown, done: (error?: Error) => void) =>
        done(configError ?? new Error(device?.configError ?? missing)),
      );
      node.on('close', (done: () => void) => {
        device?.leave(node);
        done();
      });
      return;
    }
    const config = settings;
    const live = session;
    const now = () => performance.now();
    // The device's meter may be up to its refresh older than the battery power read with it: a longer meter delay.
    const slow = { ...config.regulator.slow };
    if (config.meterSource === 'device') slow.meterDelayS += DEVICE_METER_REFRESH_S;
    const regulator = new Regulator({ ...config.regulator, slow, requestIntervalMs: live.client.minIntervalMs }, now());
    const controlOptions: ControllerSettings = {
      power: config.regulator.minPower,
      chargeSoc: config.regulator.chargeSoc,
      dischargeSoc: config.regulator.dischargeSoc,
      clamp: true,
      // The regulator keeps within its own maximum powers; the device's limits are the last check.
      limits: live.limits,
      switchMode: true,
      repeatMs: CONTROL_DEFAULTS.repeatSeconds * 1000,
      modeCheckMs: CONTROL_DEFAULTS.modeCheckSeconds * 1000,
    };
    const controller = new RealTimeController(live, controlOptions);
    // What an earlier deployment saw of the working mode may be stale: the first setpoint waits for one read of it.
    void controller.learnMode();
    /** The hand-backs under way (disable, time-out), so that a close waits for every one rather than racing them. */
    const handBacks = new Set<Promise<void>>();
    const handing = () => handBacks.size > 0;
    function track(work: Promise<void>): Promise<void> {
      handBacks.add(work);
      void work.finally(() => handBacks.delete(work));
      return work;
    }
    /** When this node's last write was acknowledged (performance.now(), as the queue's known values). */
    let ownWriteAt = -Infinity;

    /**
     * Another writer in this process (a control or write node, a dashboard button) changed the setpoint or the working
     * mode since this node's last write: that is the state now, and the next reading steers from it.
     */
    function followOthers(): void {
      const mode = live.knownValue(REAL_TIME.modeAddress);
      const state = live.knownValue(REAL_TIME.stateAddress);
      const power = live.knownValue(REAL_TIME.powerAddress);
      // A write of the power (47016) alone changes the setpoint as well.
      const newest = Math.max(mode?.at ?? -Infinity, state?.at ?? -Infinity, power?.at ?? -Infinity);
      if (newest <= ownWriteAt) return;
      ownWriteAt = newest;
      // Handed back by another: only a node that steers has a state to drop (at the start, the read of 6000 stands).
      if (mode && mode.at === newest && mode.value !== REAL_TIME.mode) {
        if (regulator.steering) regulator.handedBack();
      } else if (state && power && typeof power.value === 'number') {
        const watts = state.value === STATE_CODES.charge ? -power.value : state.value === STATE_CODES.discharge ? power.value : 0;
        // Carried out when it arrived, up to an answer time before it was acknowledged.
        regulator.acknowledge(watts, newest, newest - ANSWER_MS);
      }
    }

    function later(run: () => void, ms: number): void {
      if (closed) return;
      const timer = setTimeout(() => {
        timers.delete(timer);
        run();
      }, ms);
      timers.add(timer);
    }

    function status(decision: Decision | undefined, extra?: string): void {
      if (closed) return;
      if (!regulator.enabled) {
        node.status({ fill: 'grey', shape: 'ring', text: RED._('localbattery-zero-feed-in.status.off') });
        return;
      }
      if (decision?.reason === 'meter timeout') {
        node.status({ fill: 'yellow', shape: 'ring', text: RED._('localbattery-zero-feed-in.status.timeout') });
        return;
      }
      // Nothing has happened yet: no reading, no setpoint.
      if (!regulator.steering && decision?.grid === undefined) {
        const waiting = RED._('localbattery-zero-feed-in.status.waiting');
        node.status({ fill: 'grey', shape: 'ring', text: extra ? `${waiting} · ${extra}` : waiting });
        return;
      }
      const setpoint = regulator.setpoint;
      let text =
        setpoint === undefined
          ? RED._('localbattery-zero-feed-in.status.selfConsumption')
          : setpoint === 0
            ? RED._('localbattery-zero-feed-in.status.standby')
            : setpoint > 0
              ? RED._('localbattery-zero-feed-in.status.discharge', { power: setpoint })
              : RED._('localbattery-zero-feed-in.status.charge', { power: -setpoint });
      if (decision?.grid !== undefined) {
        const grid = Math.round(decision.grid);
        text += RED._('localbattery-zero-feed-in.status.grid', { grid: `${grid > 0 ? '+' : ''}${grid}` });
      }
      if (regulator.shortfall !== undefined) text += RED._('localbattery-zero-feed-in.status.short', { power: regulator.shortfall });
      if (extra) text += ` · ${extra}`;
      node.status({ fill: regulator.shortfall !== undefined ? 'yellow' : regulator.inFlight ? 'blue' : 'green', shape: 'dot', text });
    }

    function report(decision: Decision): void {
      if (closed) return;
      const { setpoint, grid, battery, soc, reason, steady, deadBand, limitedBy, delivered } = decision;
      node.send({
        topic: 'zero feed-in',
        payload: {
          setpoint: setpoint ?? null,
          steady: steady ?? null,
          grid: grid ?? null,
          battery: battery ?? null,
          soc: soc ?? null,
          reason,
          deadBand: deadBand ?? regulator.deadBand,
          ...(limitedBy ? { delivered } : {}),
        },
        ...(limitedBy ? { limitedBy } : {}),
      });
      status(decision);
    }

    /** An implausible msg.payload.batteryPower is warned about once. */
    let warnedBattery = false;
    /** The last warning logged: a device that stays away is logged once, not at every reading. */
    let warned: string | undefined;
    function failure(error: unknown): void {
      if (closed) return;
      node.status(errorStatus(error));
      const message = (error as Error)?.message ?? String(error);
      if (message !== warned) node.warn(message);
      warned = message;
    }

    /**
     * Sends a setpoint (W, signed); the regulator learns when it left and whether the device acknowledged it, and an
     * overdrive's next setpoint follows at once, ahead of waiting reads (`urgent`). Never rejects.
     */
    async function send(watts: number, urgent = false): Promise<void> {
      try {
        const command = parseControl(watts, controlOptions);
        const outcome = await controller.apply(command, false, undefined, { urgent, onStart: () => regulator.started(now()) });
        if (outcome.status === 'superseded') regulator.failed(true);
        else regulator.acknowledge(signedPower(command), now());
        ownWriteAt = now();
        warned = undefined;
        status(undefined);
      } catch (error) {
        regulator.failed();
        failure(error);
      }
      if (closed || handing()) return;
      const next = regulator.followUp(now());
      if (next) act(next, true);
    }

    /**
     * Leaves the battery as `how` says (keep: the setpoint a pulse was heading to, where one may be in force); resolves
     * when the device has it (or it failed). Only a node that steers acts. Never rejects.
     */
    async function handBack(how: OnStop | 'standby'): Promise<void> {
      if (!regulator.steering) return;
      try {
        if (how === 'keep') {
          const steady = regulator.exit(now());
          if (steady) {
            report(steady);
            await send(steady.setpoint!, true);
          }
        } else if (how === 'self-consumption') {
          await live.write(REAL_TIME.modeAddress, SELF_CONSUMPTION);
          ownWriteAt = now();
          regulator.handedBack();
        } else if (how === 'standby') {
          await send(0);
        }
      } catch (error) {
        failure(error);
      }
    }

    function act(decision: Decision, urgent = false): void {
      report(decision);
      if (decision.action === 'set') void send(decision.setpoint!, urgent);
      else if (decision.action === 'standby') void send(0);
      else if (decision.action === 'self-consumption') void track(handBack('self-consumption'));
    }

    function reading(grid: number, battery?: number, soc?: number): void {
      if (closed) return;
      if (soc !== undefined) regulator.observeSoc(soc, now());
      if (!regulator.enabled || handing()) return;
      // While a write of this node is on its way, what the queue knows may be that write.
      if (!regulator.inFlight) followOthers();
      act(regulator.meter(grid, now(), battery));
    }

    /** Battery power and SOC (and the meter, when it is the device's) in one read through the shared queue. */
    async function readDevice(withMeter: boolean): Promise<void> {
      try {
        const { values } = await live.read(withMeter ? [METER, METER_1600, BATTERY, SOC] : [BATTERY, SOC]);
        const number = (a: number) => (typeof values.get(a) === 'number' ? (values.get(a) as number) : undefined);
        const soc = number(SOC);
        if (soc !== undefined) regulator.observeSoc(soc, now());
        const battery = number(BATTERY);
        const meter = gridReading(values.get(METER) ?? values.get(METER_1600));
        // The meter may be up to its refresh older than 6000: the battery counts as a read-back, the models bridge the age.
        if (battery !== undefined) regulator.observeBattery(battery, now());
        if (withMeter && meter !== undefined) reading(meter);
      } catch (error) {
        failure(error);
      }
    }

    // The device's meter: one read per interval, the next only after the last has come back (the queue paces it).
    function pollMeter(): void {
      const started = now();
      void readDevice(true).finally(() => later(pollMeter, Math.max(0, config.meterIntervalMs - (now() - started))));
    }
    function pollState(): void {
      void readDevice(false).finally(() => later(pollState, regulator.steering ? STEERING_READ_MS : STATE_READ_MS));
    }
    if (config.meterSource === 'device') later(pollMeter, 0);
    else later(pollState, 0);

    // A pulse's follow-up is due by time, and a silent meter is looked for.
    const tick = setInterval(() => {
      if (closed || handing()) return;
      const decision = regulator.tick(now());
      if (decision) act(decision, true);
    }, TICK_MS);

    status(undefined);

    const targetIn = numberIn(ZERO_FEED_IN_RULES.target);

    node.on('input', (msg: NodeMessageInFlow & { enable?: unknown; target?: unknown }, _send: unknown, done: (error?: Error) => void) => {
      // Both checked before either acts: a bad one changes nothing.
      if (msg.enable !== undefined && typeof msg.enable !== 'boolean') {
        done(new ValidationError('msg.enable', msg.enable, 'true or false'));
        return;
      }
      if (msg.target !== undefined) {
        let target: number;
        try {
          target = targetIn(msg.target, 'msg.target');
        } catch (error) {
          done(error as Error);
          return;
        }
        // From the next reading on. A message with a target is no reading: a change node may have left the payload.
        regulator.setTarget(target);
        if (msg.enable === undefined) {
          done();
          return;
        }
      }
      if (msg.enable !== undefined) {
        const was = regulator.enabled;
        // Off: handed back as configured, with keep at the setpoint a pulse was heading to (before readings stop).
        if (was && !msg.enable) void track(handBack(config.onStop));
        regulator.enable(msg.enable, now());
        // Back on: what the battery gives now is where the loop starts.
        if (!was && msg.enable) void readDevice(false);
        status(undefined);
        if (config.meterSource === 'device' || msg.payload === undefined || msg.target !== undefined) {
          done();
          return;
        }
      }
      if (config.meterSource === 'message') {
        const grid = gridReading(msg.payload);
        if (grid === undefined) {
          // Nonsense never moves the battery; the time-out covers a meter that only sends nonsense.
          status(undefined, RED._('localbattery-zero-feed-in.status.ignored'));
          done();
          return;
        }
        const payload = msg.payload as { batteryPower?: unknown; soc?: unknown } | undefined;
        let battery = typeof payload?.batteryPower === 'number' && Number.isFinite(payload.batteryPower) ? payload.batteryPower : undefined;
        // Positive discharging, as 6000; a value the models cannot explain (the other sign, say) is ignored, said once.
        if (battery !== undefined && !regulator.plausibleBattery(battery, now())) {
          if (!warnedBattery) node.warn(RED._('localbattery-zero-feed-in.errors.implausibleBattery', { power: battery }));
          warnedBattery = true;
          battery = undefined;
        }
        const soc = typeof payload?.soc === 'number' ? payload.soc : undefined;
        reading(grid, battery, soc);
      }
      done();
    });

    node.on('close', (_removed: boolean, done: () => void) => {
      closed = true;
      clearInterval(tick);
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      // Leave the battery as configured: the config node keeps the client until this has settled, bounded here.
      const handOver = Promise.all([...handBacks]).then(() => (regulator.enabled ? handBack(config.onStop) : undefined));
      let bound: NodeJS.Timeout | undefined;
      const finished = Promise.race([handOver, new Promise<void>((resolve) => (bound = setTimeout(resolve, CLOSE_BOUND_MS)))]).finally(() =>
        clearTimeout(bound),
      );
      device!.leave(node, finished);
      void finished.then(() => done());
    });
  }

  RED.nodes.registerType('localbattery-zero-feed-in', ZeroFeedInNode);
};
