/**
 * Real-time control: msg.payload (signed watts or {state, power, soc}) becomes one three-value write of
 * 47015, after switching the working mode to real-time control where needed. The logic lives in
 * src/control.ts; this node glues it to messages, status and the shared client.
 */
import type { Node, NodeAPI, NodeDef, NodeMessageInFlow, NodeStatus } from 'node-red';
import { REAL_TIME } from '../src/catalogue';
import type { DeviceClient } from '../src/client';
import {
  CONTROL_DEFAULTS,
  CONTROL_LIMITS,
  WORKING_MODE_READ_ADDRESS,
  WorkingModeMemory,
  controlValues,
  isRepeat,
  parseControl,
  type ControlCommand,
  type ControlOptions,
  type SentSetpoint,
} from '../src/control';
import { RefusedError, ValidationError } from '../src/errors';
import { decimalNumber } from '../src/numbers';
import { deviceOf, serveDevice, timeOfDay, keepErrorCodes } from './shared';

interface ControlDef extends NodeDef {
  device: string;
  power: string | number;
  chargeSoc: string | number;
  dischargeSoc: string | number;
  clamp: boolean;
  switchMode: boolean;
  /** Seconds after which the working mode is read again; 0: only after a refused write. */
  modeCheck: string | number;
  /** Seconds within which the same setpoint is not sent again; 0: always send. */
  repeat: string | number;
  /** What a skipped repeat does: 'pass' (sent on with msg.skipped = true) or 'drop'. */
  skipped: 'pass' | 'drop';
}

interface ControlMessage extends NodeMessageInFlow {
  force?: unknown;
  skipped?: boolean;
}

interface ModeCheck {
  /** The mode was read from the device in this check. */
  read: boolean;
  /** The mode was switched to real-time control. */
  changed: boolean;
}

/** NaN for what is no decimal number, for the checks to reject. */
function setting(value: unknown, fallback: number): number {
  return value === undefined || value === null || value === '' ? fallback : decimalNumber(value) ?? NaN;
}

export = function (RED: NodeAPI) {
  function ControlNode(this: Node, def: ControlDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    keepErrorCodes(RED, node);
    const missing = RED._('localbattery-control.errors.noDevice');
    const device = deviceOf(RED, node, def.device, missing);

    const options: ControlOptions = {
      power: setting(def.power, CONTROL_DEFAULTS.power),
      chargeSoc: setting(def.chargeSoc, CONTROL_DEFAULTS.chargeSoc),
      dischargeSoc: setting(def.dischargeSoc, CONTROL_DEFAULTS.dischargeSoc),
      clamp: def.clamp === true,
    };
    const switchMode = def.switchMode !== false;
    const repeatSeconds = setting(def.repeat, CONTROL_DEFAULTS.repeatSeconds);
    const modeCheckSeconds = setting(def.modeCheck, CONTROL_DEFAULTS.modeCheckSeconds);
    let configError: ValidationError | undefined;
    if (!(repeatSeconds >= 0)) configError = new ValidationError('repeat time', def.repeat, RED._('localbattery-control.errors.seconds'));
    else if (!(modeCheckSeconds >= 0)) configError = new ValidationError('mode re-check time', def.modeCheck, RED._('localbattery-control.errors.seconds'));
    if (configError) {
      node.status({ fill: 'red', shape: 'ring', text: RED._('localbattery-control.status.invalidConfig') });
      node.error(configError.message);
    }

    const memory = new WorkingModeMemory(modeCheckSeconds * 1000);
    let modeTask: Promise<ModeCheck> | undefined;
    let last: SentSetpoint | undefined;

    function status(value: NodeStatus): void {
      if (!life.closed) node.status(value);
    }

    function describe(command: ControlCommand): string {
      let text =
        command.state === 'standby'
          ? command.belowMinimum
            ? RED._('localbattery-control.status.belowMinimum', { min: CONTROL_LIMITS.power.min })
            : RED._('localbattery-control.status.standby')
          : RED._(`localbattery-control.status.${command.state}`, { power: command.power });
      if (command.clamped) text = RED._('localbattery-control.status.clamped', { text });
      return text;
    }

    async function checkMode(client: DeviceClient): Promise<ModeCheck> {
      let read = false;
      if (memory.next(Date.now()) === 'read') {
        const result = await client.read([WORKING_MODE_READ_ADDRESS]);
        const mode = result.values.get(WORKING_MODE_READ_ADDRESS);
        memory.remember(typeof mode === 'number' ? mode : undefined, Date.now());
        read = true;
      }
      if (memory.next(Date.now()) !== 'switch') return { read, changed: false };
      status({ fill: 'blue', shape: 'ring', text: RED._('localbattery-control.status.switching') });
      const outcome = await client.write(REAL_TIME.modeAddress, REAL_TIME.mode);
      // A newer mode write from elsewhere replaced ours: its value is unknown, so read again next time.
      if (outcome.status === 'superseded') memory.forget();
      else memory.remember(REAL_TIME.mode, Date.now());
      return { read, changed: outcome.status === 'written' };
    }

    /** Messages arriving during a check share it, so the mode is read and switched once. */
    function ensureMode(client: DeviceClient): Promise<ModeCheck> {
      if (!modeTask) {
        modeTask = checkMode(client).finally(() => {
          modeTask = undefined;
        });
      }
      return modeTask;
    }

    function output(msg: ControlMessage, command: ControlCommand, modeChanged: boolean, skipped: boolean): ControlMessage {
      msg.payload = {
        state: command.state,
        stateCode: command.code,
        power: command.power,
        soc: command.soc,
        clamped: command.clamped,
        belowMinimum: command.belowMinimum,
        modeChanged,
        skipped,
      };
      msg.skipped = skipped;
      return msg;
    }

    async function send(client: DeviceClient, command: ControlCommand): Promise<{ written: boolean; modeChanged: boolean }> {
      let check: ModeCheck = { read: false, changed: false };
      if (switchMode) check = await ensureMode(client);
      let modeChanged = check.changed;
      let outcome;
      try {
        outcome = await client.setRealTime(...controlValues(command));
      } catch (error) {
        if (!(error instanceof RefusedError) || !switchMode) throw error;
        // The mode may have been changed elsewhere (app, schedule): read it again and, if it was, retry once.
        memory.forget();
        if (check.read) throw error;
        const again = await ensureMode(client);
        if (!again.changed) throw error;
        modeChanged = true;
        outcome = await client.setRealTime(...controlValues(command));
      }
      return { written: outcome.status === 'written', modeChanged };
    }

    async function handle(msg: ControlMessage, client: DeviceClient): Promise<ControlMessage | undefined> {
      if (configError) throw configError;
      const command = parseControl(msg.payload, { ...options, powerLimit: client.limits.powerLimit });
      const now = Date.now();
      if (msg.force !== true && isRepeat(last, command, now, repeatSeconds * 1000)) {
        status({ fill: 'green', shape: 'ring', text: RED._('localbattery-control.status.skipped', { text: describe(command) }) });
        return def.skipped === 'drop' ? undefined : output(msg, command, false, true);
      }
      const record: SentSetpoint = { code: command.code, power: command.power, soc: command.soc, at: now };
      last = record;
      status({ fill: 'blue', shape: 'ring', text: RED._('localbattery-control.status.sending') });
      let result;
      try {
        result = await send(client, command);
      } catch (error) {
        // Not sent after all: the next message with this setpoint must go out.
        if (last === record) last = undefined;
        throw error;
      }
      if (!result.written) {
        status({ fill: 'yellow', shape: 'ring', text: RED._('localbattery-control.status.superseded') });
        return undefined;
      }
      status({ fill: 'green', shape: 'dot', text: RED._('localbattery-control.status.sent', { text: describe(command), time: timeOfDay() }) });
      return output(msg, command, result.modeChanged, false);
    }

    const life = serveDevice(node, device, missing, handle);
  }

  RED.nodes.registerType('localbattery-control', ControlNode);
};
