/**
 * What the control node does with a message, without Node-RED: its settings checked with the device's limits at
 * deploy, the start's read of the working mode, msg.payload and msg.force to a command for the real-time controller
 * (src/control/control.ts), and the payload it sends on.
 */
import {
  RealTimeController,
  controlSettings,
  parseControl,
  type ControlCommand,
  type ControlOutcome,
  type ControlSettingsInput,
  type ControlTarget,
} from '../control/control';
import type { WriteLimits } from '../points/catalogue';
import { describeInputs, flag } from '../editor/inputs';

/** msg.force: true sends a setpoint even when it repeats the last one. The payload is parsed by parseControl. */
const controlInputs = describeInputs({ force: { msg: 'force', parse: flag } });
const noSettings = controlInputs.deploy({});

export class ControlFlow {
  private readonly settings: ReturnType<typeof controlSettings>;
  private readonly controller: RealTimeController;

  /** Throws a ValidationError naming the first bad setting. `onSwitching`: the working mode is being switched; `warn`: the start read of the mode failed. */
  constructor(
    target: ControlTarget & { limits?: WriteLimits },
    def: ControlSettingsInput,
    onSwitching: () => void,
    warn: (error: Error) => void,
  ) {
    this.settings = controlSettings(def, target.limits);
    this.controller = new RealTimeController(target, this.settings, onSwitching);
    // What an earlier deployment saw of the working mode may be stale: one read now, through the shared queue.
    if (this.settings.switchMode) void this.controller.learnMode(warn);
  }

  /** Sends what `msg` asks for; `onSending`: it is decided to send. */
  async apply(
    msg: { payload?: unknown; force?: unknown },
    onSending: () => void,
  ): Promise<{ command: ControlCommand; outcome: ControlOutcome }> {
    const force = controlInputs.forMessage(msg, noSettings).force === true;
    const command = parseControl(msg.payload, this.settings);
    return { command, outcome: await this.controller.apply(command, force, onSending) };
  }
}

/** The payload sent on for a command and what became of it. */
export function controlPayload(command: ControlCommand, outcome: ControlOutcome) {
  return {
    state: command.state,
    stateCode: command.code,
    power: command.power,
    soc: command.soc,
    clamped: command.clamped,
    belowMinimum: command.belowMinimum,
    modeChanged: outcome.modeChanged,
    skipped: outcome.status === 'repeat',
  };
}
