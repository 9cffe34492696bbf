/**
 * The zero feed-in regulator's terms, shared by its rooms (src/control/regulator.ts and regulator-*.ts): its settings
 * and the decision it hands the controller. Only types and their constants: no rule lives here.
 */
import type { PlantBound } from './plant-family';

/** What happens when the meter falls silent. */
export type OnTimeout = 'standby' | 'self-consumption' | 'keep';
export const ON_TIMEOUT: readonly OnTimeout[] = ['standby', 'self-consumption', 'keep'];

export interface RegulatorSettings {
  /** Grid power to hold, W (positive: import). */
  target: number;
  /** The setpoint moves only when the new one differs by more than this, W. */
  deadBand: number;
  /** W, positive. */
  maxCharge: number;
  maxDischarge: number;
  /** No charging at or above this SOC (%); no discharging at or below dischargeSoc. */
  chargeSoc: number;
  dischargeSoc: number;
  meterTimeoutMs: number;
  onTimeout: OnTimeout;
  /** The battery may charge from the grid (otherwise only from what would be exported). */
  gridCharge: boolean;
  /** The device's smallest power; a smaller setpoint is standby. */
  minPower: number;
  /**
   * SOC points (% of capacity) each real-time command lets the battery go past the SOC now by itself, within chargeSoc
   * and dischargeSoc: the device stops there if its sender is gone (it has no watchdog). Undefined: to those SOCs.
   */
  leash?: number;
  /** The fastest and the slowest plant the regulator must be right for. */
  fast: PlantBound;
  slow: PlantBound;
  /** The device's minimum interval between requests (ms, default 1000): an overdrive's halves are that far apart. */
  requestIntervalMs?: number;
  /**
   * The meter holds each sample until its next refresh (the device's own, every 3 s): a reading equal to the one before
   * is that sample again, up to a refresh old, and tells nothing new. Without this, a repeat is a reading like any.
   */
  heldMeter?: boolean;
}

export type DecisionAction = 'set' | 'hold' | 'standby' | 'self-consumption';

/** Why a decision was taken, for the output message and the status. */
export type DecisionReason =
  | 'start'
  | 'load'
  | 'overdrive'
  | 'dead band'
  | 'settling'
  | 'in flight'
  | 'limit'
  | 'soc'
  | 'grid charge'
  | 'meter timeout'
  | 'disabled'
  | 'suspect'
  | 'battery check'
  | 'meter check'
  | 'mode';

export interface Decision {
  action: DecisionAction;
  /** The setpoint to send ('set'), or the one in force (W, signed like 6000); undefined when not known. */
  setpoint: number | undefined;
  grid: number | undefined;
  /** Battery power as measured or estimated for this reading (the middle of the models' interval). */
  battery: number | undefined;
  soc: number | undefined;
  reason: DecisionReason;
  /** The setpoint the regulator stands behind (a pulse's value is not one): what an exit leaves. */
  steady?: number;
  /** The dead band in force (W): steady, the grid stays within half of it below the target and all of it above. */
  deadBand?: number;
  /** The battery delivers less than its setpoint: `delivered` W (signed like 6000) is what it gives. */
  limitedBy?: 'battery';
  delivered?: number;
}
