/**
 * Zero feed-in: holds the grid meter at its target by steering the battery in real-time control. The core controller
 * (src/control/zero-feed-in.ts, around the regulator of src/control/regulator.ts) does the work; this node checks its
 * settings and messages, turns msg.payload, msg.enable, msg.target and msg.mode (src/control/modes.ts) into calls, and
 * each decision into a message and a status. On close it waits, bounded, for the controller to leave the battery as configured.
 */
import type { Node, NodeAPI, NodeDef, NodeMessageInFlow } from 'node-red';
import type { ClientSession } from '../src/device/client';
import { groupDevices, zeroFeedInSettings, type ZeroFeedInSettings } from '../src/editor/inputs';
import type { Decision } from '../src/control/regulator';
import { ZeroFeedInController } from '../src/control/zero-feed-in';
import { GroupPlant } from '../src/control/group-plant';
import { groupLimits } from '../src/points/catalogue';
import {
  unitNames,
  zeroFeedInInput,
  zeroFeedInMessage,
  zeroFeedInStatus,
  METER_FAULT_KEYS,
  type ZeroFeedInInput,
} from '../src/flow/zero-feed-in';
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
  meterSign?: string;
  meterUnit?: string;
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
  chargeModeSoc?: string | number;
  /** Missing in flows from before it: the default. */
  leash?: string | number;
}

type Done = (error?: Error) => void;
type ZeroFeedInMessage = NodeMessageInFlow & { enable?: unknown; target?: unknown; mode?: unknown };

/** A hand-back on closing may take this long (a request waiting behind others); Node-RED's own limit is 15 s. */
const CLOSE_BOUND_MS = 10000;

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
        settings = zeroFeedInSettings(def, groupLimits(sessions));
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
    /** The last reading's decision: the status keeps its grid once the setpoint it sent is acknowledged. */
    let lastDecision: Decision | undefined;
    const names = unitNames(devices.map((d) => d.name || d.client?.host || d.id));
    const group =
      ids.length > 1
        ? new GroupPlant(
            sessions.map((s, i) => ({ id: names[i]!, session: s })),
            config.regulator,
            { unitFailure: (id, error) => unitWarning(id, error), changed: () => status(lastDecision) },
          )
        : undefined;
    let closed = false;
    /** The last warning logged: a device that stays away is logged once, not at every reading. */
    let warned: string | undefined;

    const zero: ZeroFeedInController = new ZeroFeedInController(group ?? session, config, {
      decision: (decision) => {
        if (closed) return;
        node.send(zeroFeedInMessage(decision, zero, group?.report()));
        lastDecision = decision;
        status(decision);
      },
      changed: () => {
        warned = undefined;
        status(lastDecision);
      },
      failure: (error) => {
        if (closed) return;
        node.status(errorStatus(error));
        warnOnce((error as Error)?.message ?? String(error));
      },
      implausibleBattery: (power) => node.warn(t('errors.implausibleBattery', { power })),
      warning: (kind, values) => node.warn(t(`errors.${kind}`, values)),
      meterFault: (fault) => {
        if (!closed) node.warn(t(`errors.meterFault.${METER_FAULT_KEYS[fault]}`));
      },
    });

    /** A unit's failure: the group goes on without it; named. */
    function unitWarning(id: string, error: unknown): void {
      if (!closed) warnOnce(`${id}: ${(error as Error)?.message ?? String(error)}`);
    }

    function warnOnce(message: string): void {
      if (message !== warned) node.warn(message);
      warned = message;
    }

    function status(decision: Decision | undefined, extra?: string): void {
      if (closed) return;
      const leftOut = group?.report().filter((u) => u.leftOut) ?? [];
      node.status(
        zeroFeedInStatus(
          zero,
          t,
          decision,
          extra,
          leftOut.map((u) => u.device),
        ),
      );
    }

    zero.start();
    status(undefined);

    node.on('input', (msg: ZeroFeedInMessage, _send: unknown, done: Done) => {
      let input: ZeroFeedInInput;
      try {
        input = zeroFeedInInput(msg, config.meterSource === 'message');
      } catch (error) {
        return done(error as Error);
      }
      // The target from the next reading on; a mode at once (while the loop is off, once it is on again).
      if (input.target !== undefined) zero.setTarget(input.target);
      if (input.enable !== undefined) zero.enable(input.enable);
      if (input.mode !== undefined) zero.setMode(input.mode);
      if (input.reading === 'ignored') status(undefined, t('status.ignored'));
      else if (input.reading) zero.reading(input.reading.grid, input.reading.battery, input.reading.soc);
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
