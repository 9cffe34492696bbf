/**
 * What Home Assistant accepts, from its sensor and MQTT discovery documentation (and core's sensor constants):
 * the units each sensor device class allows, the state classes it allows, and the discovery topic's form.
 * Written out here, independently of src/home-assistant.ts, so the tests check the rule against Home Assistant.
 */
import should from 'should';

export const DEVICE_CLASS_UNITS: Record<string, (string | undefined)[]> = {
  apparent_power: ['mVA', 'VA', 'kVA'],
  battery: ['%'],
  current: ['mA', 'A'],
  duration: ['d', 'h', 'min', 's', 'ms', 'µs'],
  energy: ['J', 'kJ', 'MJ', 'GJ', 'mWh', 'Wh', 'kWh', 'MWh', 'GWh', 'TWh', 'cal', 'kcal', 'Mcal', 'Gcal'],
  energy_storage: ['J', 'kJ', 'MJ', 'GJ', 'mWh', 'Wh', 'kWh', 'MWh', 'GWh', 'TWh', 'cal', 'kcal', 'Mcal', 'Gcal'],
  enum: [undefined],
  frequency: ['Hz', 'kHz', 'MHz', 'GHz'],
  power: ['mW', 'W', 'kW', 'MW', 'GW', 'TW', 'BTU/h'],
  reactive_power: ['mvar', 'var', 'kvar'],
  temperature: ['°C', '°F', 'K'],
  voltage: ['µV', 'mV', 'V', 'kV', 'MV'],
};

export const DEVICE_CLASS_STATE_CLASSES: Record<string, string[]> = {
  apparent_power: ['measurement'],
  battery: ['measurement'],
  current: ['measurement'],
  duration: ['measurement', 'total', 'total_increasing'],
  energy: ['total', 'total_increasing'],
  energy_storage: ['measurement'],
  enum: [],
  frequency: ['measurement'],
  power: ['measurement'],
  reactive_power: ['measurement'],
  temperature: ['measurement'],
  voltage: ['measurement'],
};

/** `<discovery_prefix>/<component>/[<node_id>/]<object_id>/config`, ids of [a-zA-Z0-9_-]. */
export const DISCOVERY_TOPIC = /^([^/#+]+)\/([a-z_]+)\/(?:([a-zA-Z0-9_-]+)\/)?([a-zA-Z0-9_-]+)\/config$/;

/** Checks a sensor's device class, state class and unit against each other as Home Assistant does. */
export function checkSensorSemantics(
  what: string,
  sensor: { device_class?: string; state_class?: string; unit_of_measurement?: string; options?: unknown },
): void {
  if (sensor.state_class !== undefined)
    should(['measurement', 'total', 'total_increasing'].includes(sensor.state_class)).be.true(`${what}: state class ${sensor.state_class}`);
  if (sensor.device_class === undefined) return;
  should.exist(DEVICE_CLASS_UNITS[sensor.device_class], `${what}: device class ${sensor.device_class}`);
  should(DEVICE_CLASS_UNITS[sensor.device_class].includes(sensor.unit_of_measurement)).be.true(
    `${what}: unit ${sensor.unit_of_measurement} for ${sensor.device_class}`,
  );
  if (sensor.state_class !== undefined) {
    should(DEVICE_CLASS_STATE_CLASSES[sensor.device_class].includes(sensor.state_class)).be.true(
      `${what}: ${sensor.state_class} for ${sensor.device_class}`,
    );
  }
  if (sensor.device_class === 'enum') should(sensor.options).be.an.Array().and.not.be.empty();
}
