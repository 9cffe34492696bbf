/**
 * Zero feed-in: holds the grid meter at its target by steering the battery in real-time control. The core controller
 * (src/control/zero-feed-in.ts, around the regulator of src/control/regulator.ts) does the work; this node checks its
 * settings and messages, turns msg.payload, msg.enable, msg.target and msg.mode (src/control/modes.ts) into calls, and
 * each decision into a message and a status. On close it waits, bounded, for the controller to leave the battery as configured.
 */
import type { Node, NodeAPI, NodeDef, NodeMessageInFlow } from 'node-red';
import type { ClientSession } from '../src/device/client';
import { ValidationError } from '../src/errors';
import { ZERO_FEED_IN_RULES, groupDevices, numberIn, zeroFeedInSettings, type ZeroFeedInSettings } from '../src/editor/inputs';
import { gridReading, type Decision } from '../src/control/regulator';
import { ZeroFeedInController } from '../src/control/zero-feed-in';
import { GroupPlant } from '../src/control/group-plant';
import { parseMode, type BatteryMode } from '../src/control/modes';
import { deviceOf, errorStatus, keepErrorCodes, type DeviceConfigNode } from './shared';

interface ZeroFeedInDef extends NodeDef {
  device: string;
  /** Further devices behind the same meter (optional): the node then steers them as one group. */
  device2?: string;
  device3?: string;
  device4?: string;
  meterSource: string;
  meterInterval: string | number;
  meterSends: string;
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
  mode: string;
  chargeModePower: string | number;
  chargeModeSoc: string | number;
}

type Done = (error?: Error) => void;
type ZeroFeedInMessage = NodeMessageInFlow & { enable?: unknown; target?: unknown; mode?: unknown };

/** A hand-back on closing may take this long (a request waiting behind others); Node-RED's own limit is 15 s. */
const CLOSE_BOUND_MS = 10000;
const targetIn = numberIn(ZERO_FEED_IN_RULES.target);

/** A unit's name in messages and the status: its configuration's name or host, numbered where two are alike. */
function unitName(devices: readonly DeviceConfigNode[], i: number): string {
  const name = (d: DeviceConfigNode) => d.name || d.client?.host || d.id;
  const alike = devices.filter((d) => name(d) === name(devices[i]!)).length > 1;
  return alike ? `${name(devices[i]!)} (${i + 1})` : name(devices[i]!);
}

/** The status of the loop (its mode aside): off, waiting, the setpoint with the last reading, a shortfall. */
function statusOf(
  zero: ZeroFeedInController,
  t: (key: string, values?: Record<string, string | number>) => string,
  decision: Decision | undefined,
  extra?: string,
  leftOut: readonly string[] = [],
): { fill: 'grey' | 'yellow' | 'blue' | 'green'; shape: 'ring' | 'dot'; text: string } {
  const regulator = zero.regulator;
  if (!regulator.enabled) return { fill: 'grey', shape: 'ring', text: t('status.off') };
  if (decision?.reason === 'meter timeout') return { fill: 'yellow', shape: 'ring', text: t('status.timeout') };
  // Nothing has happened yet: no reading, no setpoint.
  if (!regulator.steering && decision?.grid === undefined) {
    return { fill: 'grey', shape: 'ring', text: extra ? `${t('status.waiting')} · ${extra}` : t('status.waiting') };
  }
  const setpoint = regulator.setpoint;
  let text =
    setpoint === undefined
      ? t('status.selfConsumption')
      : setpoint === 0
        ? t('status.standby')
        : setpoint > 0
          ? t('status.discharge', { power: setpoint })
          : t('status.charge', { power: -setpoint });
  if (decision?.grid !== undefined) {
    const grid = Math.round(decision.grid);
    text += t('status.grid', { grid: `${grid > 0 ? '+' : ''}${grid}` });
  }
  const short = regulator.shortfall;
  if (short !== undefined) text += t('status.short', { power: short });
  if (leftOut.length > 0) text += ` · ${t('status.leftOut', { devices: leftOut.join(', ') })}`;
  if (extra) text += ` · ${extra}`;
  return { fill: short !== undefined ? 'yellow' : regulator.inFlight ? 'blue' : 'green', shape: 'dot', text };
}

export = function (RED: NodeAPI) {
  const t = (key: string, values?: Record<string, string | number>) => RED._(`localbattery-zero-feed-in.${key}`, values);

  function ZeroFeedInNode(this: Node, def: ZeroFeedInDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    keepErrorCodes(RED, node);
    const missing = t('errors.noDevice');
    let settings: ZeroFeedInSettings | undefined;
    let configError: Error | undefined;
    let ids: string[] = [];
    try {
      ids = groupDevices(def);
    } catch (error) {
      configError = error as Error;
      node.status({ fill: 'red', shape: 'ring', text: t('status.invalidConfig') });
      node.error(configError.message);
    }
    // Every device found and opened, or the first that is not (its status says why).
    const devices: DeviceConfigNode[] = [];
    const sessions: ClientSession[] = [];
    for (const id of configError ? [] : ids) {
      const found = deviceOf(RED, node, id, missing);
      const opened = found?.open(node);
      if (found) devices.push(found);
      if (!found || !opened) break;
      sessions.push(opened);
    }
    const device = devices[0];
    const session: ClientSession | undefined = !configError && sessions.length === ids.length ? sessions[0] : undefined;
    if (session) {
      try {
        // A group's maximum powers are within the sums of its units' limits.
        const sum = (key: 'chargeLimit' | 'dischargeLimit') => sessions.reduce((total, s) => total + s.limits[key], 0);
        settings = zeroFeedInSettings(def, { chargeLimit: sum('chargeLimit'), dischargeLimit: sum('dischargeLimit') });
      } catch (error) {
        configError = error as Error;
        node.status({ fill: 'red', shape: 'ring', text: t('status.invalidConfig') });
        node.error(configError.message);
      }
    }
    if (!session || !settings) {
      const failed = devices.find((d) => d.configError);
      node.on('input', (_msg: NodeMessageInFlow, _send: unknown, done: Done) =>
        done(configError ?? new Error(failed?.configError ?? device?.configError ?? missing)),
      );
      node.on('close', (done: () => void) => {
        for (const d of devices) d.leave(node);
        done();
      });
      return;
    }
    const config = settings;
    const group =
      ids.length > 1
        ? new GroupPlant(
            sessions.map((s, i) => ({ id: unitName(devices, i), session: s })),
            config.regulator,
            { unitFailure: (id, error) => unitWarning(id, error), changed: () => status(undefined) },
          )
        : undefined;
    let closed = false;
    /** The last warning logged: a device that stays away is logged once, not at every reading. */
    let warned: string | undefined;

    const zero: ZeroFeedInController = new ZeroFeedInController(group ?? session, config, {
      decision: (decision) => {
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
            mode: zero.mode,
            deadBand: deadBand ?? zero.regulator.deadBand,
            ...(limitedBy ? { delivered } : {}),
            // Several devices: each unit's share, what it delivers and its SOC, and whether it is left out.
            ...(group ? { units: group.report() } : {}),
          },
          ...(limitedBy ? { limitedBy } : {}),
        });
        status(decision);
      },
      changed: () => {
        warned = undefined;
        status(undefined);
      },
      failure: (error) => {
        if (closed) return;
        node.status(errorStatus(error));
        const message = (error as Error)?.message ?? String(error);
        if (message !== warned) node.warn(message);
        warned = message;
      },
      implausibleBattery: (power) => node.warn(t('errors.implausibleBattery', { power })),
    });

    /** A unit's failure: the group goes on without it; logged once per message, named. */
    function unitWarning(id: string, error: unknown): void {
      if (closed) return;
      const message = `${id}: ${(error as Error)?.message ?? String(error)}`;
      if (message !== warned) node.warn(message);
      warned = message;
    }

    function status(decision: Decision | undefined, extra?: string): void {
      if (closed) return;
      const out = group?.report().filter((u) => u.leftOut) ?? [];
      const shown = statusOf(
        zero,
        t,
        decision,
        extra,
        out.map((u) => u.device),
      );
      // A mode other than zero feed-in leads the status (off too: it applies once on again).
      const mode = zero.mode === 'normal' ? '' : `${t(`status.mode.${zero.mode}`)} · `;
      node.status({ ...shown, text: mode + shown.text });
    }

    /** msg.payload as a reading: grid power, and the battery power and SOC an object may carry. */
    function reading(payload: unknown): void {
      const grid = gridReading(payload);
      // Nonsense never moves the battery; the time-out covers a meter that only sends nonsense.
      if (grid === undefined) return status(undefined, t('status.ignored'));
      const given = payload as { batteryPower?: unknown; soc?: unknown } | undefined;
      // Positive discharging, as 6000; the controller ignores a value the battery cannot be giving.
      const battery = typeof given?.batteryPower === 'number' && Number.isFinite(given.batteryPower) ? given.batteryPower : undefined;
      zero.reading(grid, battery, typeof given?.soc === 'number' ? given.soc : undefined);
    }

    zero.start();
    status(undefined);

    node.on('input', (msg: ZeroFeedInMessage, _send: unknown, done: Done) => {
      // Both checked before either acts: a bad one changes nothing.
      if (msg.enable !== undefined && typeof msg.enable !== 'boolean')
        return done(new ValidationError('msg.enable', msg.enable, 'true or false'));
      let target: number | undefined;
      let mode: BatteryMode | undefined;
      try {
        target = msg.target === undefined ? undefined : targetIn(msg.target, 'msg.target');
        mode = msg.mode === undefined ? undefined : parseMode(msg.mode, 'msg.mode');
      } catch (error) {
        return done(error as Error);
      }
      // From the next reading on.
      if (target !== undefined) zero.setTarget(target);
      if (msg.enable !== undefined) zero.enable(msg.enable);
      // At once (a mode waits while the loop is off).
      if (mode !== undefined) zero.setMode(mode);
      // A message with a target, an enable or a mode is a command, a reading only where it has a payload and no target
      // (a change node that copied the payload into msg.target left the payload behind).
      const command = msg.target !== undefined || msg.enable !== undefined || msg.mode !== undefined;
      if (config.meterSource === 'message' && msg.target === undefined && (!command || msg.payload !== undefined)) reading(msg.payload);
      done();
    });

    node.on('close', (_removed: boolean, done: () => void) => {
      // Leave the battery as configured: the config node keeps the client until this has settled, bounded here.
      const handOver = zero.close();
      closed = true;
      let bound: NodeJS.Timeout | undefined;
      const finished = Promise.race([handOver, new Promise<void>((resolve) => (bound = setTimeout(resolve, CLOSE_BOUND_MS)))]).finally(() =>
        clearTimeout(bound),
      );
      for (const d of devices) d.leave(node, finished);
      void finished.then(() => done());
    });
  }

  RED.nodes.registerType('localbattery-zero-feed-in', ZeroFeedInNode);
};
