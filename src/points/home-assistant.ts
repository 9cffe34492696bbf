/**
 * Home Assistant's meaning of a read point (sensor device class, state class, unit), derived by rule from what the
 * catalogue already says (unit, type, enum labels, name), so points added to the catalogue get it too.
 * The keys are Home Assistant's own, ready to go into an MQTT discovery config.
 */
import type { ReadPoint } from './read-point';

export type StateClass = 'measurement' | 'total' | 'total_increasing';

export interface HomeAssistantSensor {
  device_class?: string;
  state_class?: StateClass;
  unit_of_measurement?: string;
  /** The possible states of an `enum` sensor. */
  options?: string[];
}

/** Catalogue unit (any case) → Home Assistant's device class and its spelling of the unit. */
const UNITS: Record<string, { deviceClass: string; unit: string }> = {
  w: { deviceClass: 'power', unit: 'W' },
  kw: { deviceClass: 'power', unit: 'kW' },
  wh: { deviceClass: 'energy', unit: 'Wh' },
  kwh: { deviceClass: 'energy', unit: 'kWh' },
  mwh: { deviceClass: 'energy', unit: 'MWh' },
  va: { deviceClass: 'apparent_power', unit: 'VA' },
  var: { deviceClass: 'reactive_power', unit: 'var' },
  v: { deviceClass: 'voltage', unit: 'V' },
  mv: { deviceClass: 'voltage', unit: 'mV' },
  a: { deviceClass: 'current', unit: 'A' },
  ma: { deviceClass: 'current', unit: 'mA' },
  hz: { deviceClass: 'frequency', unit: 'Hz' },
  '°c': { deviceClass: 'temperature', unit: '°C' },
  '℃': { deviceClass: 'temperature', unit: '°C' },
  '°f': { deviceClass: 'temperature', unit: '°F' },
  s: { deviceClass: 'duration', unit: 's' },
  min: { deviceClass: 'duration', unit: 'min' },
  h: { deviceClass: 'duration', unit: 'h' },
  day: { deviceClass: 'duration', unit: 'd' },
  d: { deviceClass: 'duration', unit: 'd' },
};

/** Energy counters (daily or lifetime); they only grow, or start again from 0 (at midnight for the daily ones). */
const ENERGY_COUNTER = /Energy/;
/** A state of charge in %, as against other percentages such as a health figure. */
const STATE_OF_CHARGE = /Soc$/;

/**
 * The Home Assistant sensor semantics of a read point, or undefined where none applies (texts, serial numbers,
 * packed times, numbers without a unit). Settings (points another write point changes) get no state class: they
 * are not measurements worth long-term statistics.
 */
export function homeAssistantSensor(
  point: Pick<ReadPoint, 'name' | 'type' | 'format' | 'enum' | 'unit' | 'writtenBy'>,
): HomeAssistantSensor | undefined {
  if (point.type === 'string' || point.format) return undefined;
  if (point.enum) return { device_class: 'enum', options: point.enum.map((option) => option.label) };
  const unit = point.unit?.trim();
  if (!unit) return undefined;
  const setting = point.writtenBy !== undefined;
  if (unit === '%') {
    const sensor: HomeAssistantSensor = { unit_of_measurement: '%' };
    if (STATE_OF_CHARGE.test(point.name)) sensor.device_class = 'battery';
    if (!setting) sensor.state_class = 'measurement';
    return sensor;
  }
  const known = UNITS[unit.toLowerCase()];
  if (!known) return setting ? { unit_of_measurement: unit } : { unit_of_measurement: unit, state_class: 'measurement' };
  const sensor: HomeAssistantSensor = { device_class: known.deviceClass, unit_of_measurement: known.unit };
  if (known.deviceClass === 'energy') {
    if (ENERGY_COUNTER.test(point.name)) sensor.state_class = 'total_increasing';
    // Energy that is not a counter (a rated capacity) is stored energy.
    else sensor.device_class = 'energy_storage';
  } else if (known.deviceClass !== 'duration' && !setting) {
    sensor.state_class = 'measurement';
  }
  return sensor;
}
