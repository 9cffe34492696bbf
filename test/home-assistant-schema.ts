/**
 * What Home Assistant accepts, from its sensor and MQTT discovery documentation (and core's sensor constants):
 * the units each sensor device class allows, the state classes it allows, and the discovery topic's form.
 * Written out here, independently of src/points/home-assistant.ts, so the tests check the rule against Home Assistant.
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

/** Options every MQTT discovery entity may carry (MQTT integration documentation: availability, device, entity). */
const COMMON_OPTIONS = [
  'availability',
  'availability_mode',
  'availability_template',
  'availability_topic',
  'default_entity_id',
  'device',
  'enabled_by_default',
  'encoding',
  'entity_category',
  'entity_picture',
  'icon',
  'json_attributes_template',
  'json_attributes_topic',
  'name',
  'object_id',
  'origin',
  'payload_available',
  'payload_not_available',
  'platform',
  'qos',
  'unique_id',
];

/** The MQTT switch's options (integrations/switch.mqtt), beside the common ones. */
export const SWITCH_OPTIONS = [
  ...COMMON_OPTIONS,
  'command_template',
  'command_topic',
  'device_class',
  'optimistic',
  'payload_off',
  'payload_on',
  'retain',
  'state_off',
  'state_on',
  'state_topic',
  'value_template',
];

/** The MQTT number's options (integrations/number.mqtt), beside the common ones. */
export const NUMBER_OPTIONS = [
  ...COMMON_OPTIONS,
  'command_template',
  'command_topic',
  'device_class',
  'max',
  'min',
  'mode',
  'optimistic',
  'payload_reset',
  'retain',
  'state_topic',
  'step',
  'unit_of_measurement',
  'value_template',
];

/** The MQTT select's options (integrations/select.mqtt), beside the common ones. */
export const SELECT_OPTIONS = [
  ...COMMON_OPTIONS,
  'command_template',
  'command_topic',
  'optimistic',
  'options',
  'retain',
  'state_topic',
  'value_template',
];

const isTopic = (topic: unknown) => typeof topic === 'string' && topic.length > 0 && !/[#+]/.test(topic) && !topic.includes('//');

/** An MQTT switch's discovery config as Home Assistant validates it: known options, a command topic, device class. */
export function checkSwitchConfig(what: string, config: Record<string, unknown>): void {
  for (const key of Object.keys(config)) should(SWITCH_OPTIONS.includes(key)).be.true(`${what}: switch option ${key}`);
  should(isTopic(config.command_topic)).be.true(`${what}: command_topic`);
  if (config.state_topic !== undefined) should(isTopic(config.state_topic)).be.true(`${what}: state_topic`);
  if (config.device_class !== undefined) should(['outlet', 'switch']).containEql(config.device_class);
  for (const key of ['payload_on', 'payload_off', 'state_on', 'state_off'])
    if (config[key] !== undefined) should(typeof config[key]).equal('string', `${what}: ${key}`);
}

/** An MQTT select's discovery config as Home Assistant validates it: known options, a command topic, a list of choices. */
export function checkSelectConfig(what: string, config: Record<string, unknown>): void {
  for (const key of Object.keys(config)) should(SELECT_OPTIONS.includes(key)).be.true(`${what}: select option ${key}`);
  should(isTopic(config.command_topic)).be.true(`${what}: command_topic`);
  if (config.state_topic !== undefined) should(isTopic(config.state_topic)).be.true(`${what}: state_topic`);
  const options = config.options as unknown[];
  should(options).be.an.Array().and.not.be.empty();
  for (const option of options) should(option).be.a.String().and.not.be.empty();
  should(new Set(options).size).equal(options.length, `${what}: options unique`);
}

/** An MQTT number's discovery config as Home Assistant validates it: known options, min < max, step, mode, unit. */
export function checkNumberConfig(what: string, config: Record<string, unknown>): void {
  for (const key of Object.keys(config)) should(NUMBER_OPTIONS.includes(key)).be.true(`${what}: number option ${key}`);
  should(isTopic(config.command_topic)).be.true(`${what}: command_topic`);
  if (config.state_topic !== undefined) should(isTopic(config.state_topic)).be.true(`${what}: state_topic`);
  const min = (config.min ?? 1) as number;
  const max = (config.max ?? 100) as number;
  should(min).be.a.Number().and.below(max, `${what}: min below max`);
  // Home Assistant's smallest step.
  if (config.step !== undefined) should(config.step).be.a.Number().and.aboveOrEqual(0.001);
  if (config.mode !== undefined) should(['auto', 'box', 'slider']).containEql(config.mode);
  // A number's device class takes the sensor's units (number.const's DEVICE_CLASS_UNITS mirrors the sensor's).
  if (config.device_class !== undefined) {
    const deviceClass = config.device_class as string;
    const unit = config.unit_of_measurement as string | undefined;
    should.exist(DEVICE_CLASS_UNITS[deviceClass], `${what}: device class ${deviceClass}`);
    should(DEVICE_CLASS_UNITS[deviceClass].includes(unit)).be.true(`${what}: unit ${unit} for ${deviceClass}`);
  }
}
