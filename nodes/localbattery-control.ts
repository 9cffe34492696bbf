/**
 * Real-time control: msg.payload (signed watts or {state, power, soc}) becomes one three-value write of
 * 47015, after switching the working mode to real-time control where needed. The logic lives in
 * src/control/control.ts and src/flow/control.ts; this node glues it to messages, status and the shared client.
 */
import type { Node, NodeAPI, NodeDef, NodeMessageInFlow, NodeStatus } from 'node-red';
import { CONTROL_LIMITS, type ControlCommand, type ControlOutcome } from '../src/control/control';
import { ControlFlow, controlPayload } from '../src/flow/control';
import { deviceOf, serveDevice, timeOfDay, keepErrorCodes } from './shared';

interface ControlDef extends NodeDef {
  device: string;
  power: string | number;
  chargeSoc: string | number;
  dischargeSoc: string | number;
  clamp: boolean;
  switchMode: boolean;
  /** Seconds for which what is known of the working mode is trusted; 0: until a refused write. */
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

/** A command as the status shows it, in the user's language. */
function describe(RED: NodeAPI, command: ControlCommand): string {
  let text =
    command.state === 'standby'
      ? command.belowMinimum
        ? RED._('localbattery-control.status.belowMinimum', { min: CONTROL_LIMITS.power.min })
        : RED._('localbattery-control.status.standby')
      : RED._(`localbattery-control.status.${command.state}`, { power: command.power });
  if (command.clamped) text = RED._('localbattery-control.status.clamped', { text });
  return text;
}

function output(msg: ControlMessage, command: ControlCommand, outcome: ControlOutcome): ControlMessage {
  msg.payload = controlPayload(command, outcome);
  msg.skipped = outcome.status === 'repeat';
  return msg;
}

export = function (RED: NodeAPI) {
  function ControlNode(this: Node, def: ControlDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    keepErrorCodes(RED, node);
    const missing = RED._('localbattery-control.errors.noDevice');
    const device = deviceOf(RED, node, def.device, missing);

    function status(value: NodeStatus): void {
      if (!life.closed) node.status(value);
    }

    let control: ControlFlow | undefined;

    async function handle(msg: ControlMessage): Promise<ControlMessage | undefined> {
      if (!control) throw configError ?? new Error(missing);
      const { command, outcome } = await control.apply(msg, () =>
        status({ fill: 'blue', shape: 'ring', text: RED._('localbattery-control.status.sending') }),
      );
      if (outcome.status === 'repeat') {
        status({ fill: 'green', shape: 'ring', text: RED._('localbattery-control.status.skipped', { text: describe(RED, command) }) });
        return def.skipped === 'drop' ? undefined : output(msg, command, outcome);
      }
      if (outcome.status === 'superseded') {
        status({ fill: 'yellow', shape: 'ring', text: RED._('localbattery-control.status.superseded') });
        return undefined;
      }
      status({
        fill: 'green',
        shape: 'dot',
        text: RED._('localbattery-control.status.sent', { text: describe(RED, command), time: timeOfDay() }),
      });
      return output(msg, command, outcome);
    }

    const life = serveDevice(node, device, missing, handle);
    // Every setting is checked now, with the device's limits, so a wrong one shows before the first message.
    let configError: Error | undefined;
    if (life.session) {
      try {
        control = new ControlFlow(
          life.session,
          def,
          () => status({ fill: 'blue', shape: 'ring', text: RED._('localbattery-control.status.switching') }),
          (error) => node.warn(error.message),
        );
      } catch (error) {
        configError = error as Error;
        node.status({ fill: 'red', shape: 'ring', text: RED._('localbattery-control.status.invalidConfig') });
        node.error(configError.message);
      }
    }
  }

  RED.nodes.registerType('localbattery-control', ControlNode);
};
