/** A real-time setpoint written to a simulator in process, signed like battery power, as a controller would write it. */
import { REAL_TIME } from '../src/points/catalogue';
import type { DeviceSimulator } from '../src/simulator';

/** Positive discharges (down to 5 %), negative charges (up to 100 %), 0 is standby; the write must be accepted. */
export function setpoint(sim: DeviceSimulator, watts: number): void {
  const values = watts > 0 ? [2, watts, 5] : watts < 0 ? [1, -watts, 100] : [0, 0, 5];
  if (!sim.setData(REAL_TIME.stateAddress, values)) throw new Error(`the simulator refused the setpoint ${watts} W`);
}

/** The setpoint a simulator holds, signed like battery power (0 outside real-time control). */
export function held(sim: DeviceSimulator): number {
  const { state, power } = sim.control;
  return sim.workingMode !== REAL_TIME.mode ? 0 : state === 1 ? -power : state === 2 ? power : 0;
}
