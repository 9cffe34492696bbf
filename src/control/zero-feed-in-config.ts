/**
 * The zero feed-in controller's settings and what it tells its host (src/control/zero-feed-in.ts, which exports them
 * for the node and the editor): apart, so that the controller's rooms read them without importing the controller.
 */
import type { Decision, RegulatorSettings } from './regulator';
import type { MeterFault, MeterSign, MeterUnit } from './meter-check';
import type { BatteryMode, ChargeMode } from './modes';

/** Where grid readings come from, and what a stop or disable leaves (node settings). */
export const METER_SOURCES = ['message', 'device'] as const;
export const ON_STOP = ['self-consumption', 'standby', 'keep'] as const;
/** A meter from messages publishes every interval, even unchanged ('always'), or only when its value changes. */
export const METER_SENDS = ['always', 'on-change'] as const;
export type MeterSource = (typeof METER_SOURCES)[number];
export type OnStop = (typeof ON_STOP)[number];
export type MeterSends = (typeof METER_SENDS)[number];

export interface ZeroFeedInConfig {
  regulator: RegulatorSettings;
  meterSource: MeterSource;
  meterIntervalMs: number;
  /** 'on-change': silence means unchanged, and the meter time-out is the longest silence (see MeterInput.repeat()). */
  meterSends: MeterSends;
  /** How a meter from messages counts: its readings are converted to W, positive importing (meterWatts()). */
  meterSign: MeterSign;
  meterUnit: MeterUnit;
  onStop: OnStop;
  /** The battery mode at start (src/control/modes.ts), and what the charge mode charges with and up to. */
  mode: BatteryMode;
  charge: ChargeMode;
}

/** What the controller tells its host (the node): each decision, a change worth a new status, failures. */
export interface ZeroFeedInHost {
  decision(decision: Decision): void;
  changed(): void;
  failure(error: unknown): void;
  /** A battery power given with a reading that the battery cannot be giving (said once). */
  implausibleBattery(power: number): void;
  /**
   * Said once each: 'backupFloor': the device's backup SOC raised Discharge to (values: floor, dischargeSoc);
   * 'commandDropped': the device dropped its command (a restart, a reconnect) and was steered again (values: setpoint);
   * 'noGridCharging': the charge mode found a battery without a grid-charging setting (the 1600 class) and left it;
   * 'deviceLimits': the battery reports lower limits than the settings (values: charge, discharge), kept within.
   */
  warning?(kind: 'backupFloor' | 'commandDropped' | 'noGridCharging' | 'deviceLimits', values: Record<string, number>): void;
  /** The meter cannot be right (said once per fault): the loop stopped, the battery left in standby or as On stop says. */
  meterFault(fault: MeterFault): void;
}
