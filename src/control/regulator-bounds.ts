/**
 * The bounds every decision of the regulator keeps, as pure functions of a snapshot: the power and SOC limits, the
 * setpoints a reading's load asks for within the grid-charging floor, and the dead band around the setpoint in force.
 * No state, no I/O: the rooms that hold state are src/control/regulator-plant.ts, regulator-meter.ts and
 * regulator-sent.ts; the decisions that use these are regulator-decide.ts and regulator-pulse.ts.
 */
import type { PlantView } from './regulator-plant';
import type { DecisionReason, RegulatorSettings } from './regulator-types';

/** The dead band is at least this many times the meter's noise (the mean change between readings)... */
const NOISE_BANDS = 3;
/** ...but the noise widens it to this much at most (W): real small loads are no noise. */
const NOISE_BAND_CAP_W = 100;

/** What every decision sees, taken once a reading (or the clock) was recorded: plain data, read only. */
export interface Snapshot {
  now: number;
  settings: RegulatorSettings;
  soc: number | undefined;
  /** The dead band in force (deadBandInForce()). */
  deadBand: number;
  /** The acknowledged setpoint. */
  acknowledged: number | undefined;
  /** The setpoint the regulator stands behind (a pulse's need, not its value). */
  steady: number | undefined;
  plant: PlantView;
  /**
   * The battery's power as the meter shows it at `at` (the plant room's batteryInterval(): a read-back, a plant's
   * estimate or the models' range).
   */
  batteryAt: (at: number) => [number, number];
  /** The gap a pulse is sized for (ms). */
  slotMs: number;
  /** Until then a plant pulses its units itself after one left (ms). */
  pulsesUntil: number;
}

/**
 * The setpoints a reading's load asks for, [low, high], and the grid-charging floor: without grid charging, no setpoint
 * below min(0, load) for any load the models allow (-Infinity with it); `read`: the battery's power was read with the
 * reading, not modelled.
 */
export type Wanted = { low: number; high: number; floored: boolean; floor: number; read: boolean };

/**
 * The dead band in force: the one set, widened to three times the meter's noise, but by the noise to 100 W at most.
 * It leans toward import: steady, the grid is between half of it below the target and all of it above.
 */
export function deadBandInForce(set: number, noiseW: number): number {
  return Math.max(set, Math.min(NOISE_BANDS * noiseW, NOISE_BAND_CAP_W));
}

/** Power and SOC limits and the minimum power; the reason names the limit that bound. */
export function limit(wanted: number, s: RegulatorSettings, soc: number | undefined): { value: number; reason?: DecisionReason } {
  let value = Math.round(wanted);
  let reason: DecisionReason | undefined;
  const bound = (next: number, why: DecisionReason) => {
    if (next !== value) {
      value = next;
      reason = why;
    }
  };
  bound(Math.min(s.maxDischarge, Math.max(-s.maxCharge, value)), 'limit');
  if (soc !== undefined && soc >= s.chargeSoc) bound(Math.max(0, value), 'soc');
  if (soc !== undefined && soc <= s.dischargeSoc) bound(Math.min(0, value), 'soc');
  if (Math.abs(value) < s.minPower) value = 0;
  return { value, reason };
}

/** The setpoints the estimated load (grid + [low, high]) asks for, [low, high], within the grid-charging floor. */
export function wanted(grid: number, low: number, high: number, read: boolean, { target, gridCharge }: RegulatorSettings): Wanted {
  let wantLow = grid + low - target;
  let wantHigh = grid + high - target;
  let floored = false;
  let floor = -Infinity;
  if (!gridCharge) {
    // Charging only by what the house would export: never below min(0, load), edge by edge, so that a charge
    // grows only by what the upper estimate of the load allows.
    const floorLow = Math.min(0, grid + low);
    const floorHigh = Math.min(0, grid + high);
    floored = wantHigh < floorHigh;
    floor = floorHigh;
    wantLow = Math.max(wantLow, floorLow);
    wantHigh = Math.max(wantHigh, floorHigh);
  }
  return { low: wantLow, high: wantHigh, floored, floor, read };
}

/**
 * The setpoints that hold at `current`: the band leans toward import, a move down (export) comes at half the band,
 * a move up (import) at the whole band. So a steady grid lies in [target - band/2, target + band]. Charging without
 * grid charging it leans toward export ([target - band, target + band/2]): an import then is the grid's energy
 * going into the battery. `width`: of the interval of wanted setpoints.
 */
export function band(s: Snapshot, current: number, width = 0): [number, number] {
  const band = s.deadBand;
  // A wide interval of wanted setpoints (a transient the models still disagree on) is its own margin: its nearest edge
  // is where every model still wants to go, so half the band is enough either way.
  if (width > band) return [current - band / 2, current + band / 2];
  if (current < 0 && !s.settings.gridCharge) return [current - band, current + band / 2];
  return [current - band / 2, current + band];
}

/** Whether the whole interval of wanted setpoints lies outside the dead band around `current`. */
export function beyondBand(s: Snapshot, want: { low: number; high: number }, current: number): boolean {
  const [below, above] = band(s, current, want.high - want.low);
  return want.low > above || want.high < below;
}
