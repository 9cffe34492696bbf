/** Home Assistant semantics derived from the catalogue: valid for Home Assistant, and right for the points. */
import should from 'should';
import { READ_POINTS, catalogueJson, pointByName, type ReadPoint } from '../src/points/catalogue';
import { homeAssistantSensor } from '../src/points/home-assistant';
import { checkSensorSemantics } from './home-assistant-schema';

const sensorOf = (name: string) => homeAssistantSensor(pointByName(name) as ReadPoint);

describe('Home Assistant semantics', () => {
  it('are valid for Home Assistant on every read point that has them', () => {
    let withSemantics = 0;
    for (const point of READ_POINTS) {
      const sensor = homeAssistantSensor(point);
      if (!sensor) continue;
      withSemantics++;
      checkSensorSemantics(point.name, sensor);
    }
    withSemantics.should.be.above(READ_POINTS.length / 2);
  });

  it('make energy counters total_increasing, powers, voltages, currents and frequency measurements, SOC a battery', () => {
    for (const point of READ_POINTS.filter((p) => p.category === 'Energy')) {
      should(homeAssistantSensor(point)).have.properties({ device_class: 'energy', state_class: 'total_increasing' });
    }
    should(sensorOf('pvEnergyTotal')).eql({ device_class: 'energy', unit_of_measurement: 'Wh', state_class: 'total_increasing' });
    should(sensorOf('batteryChargeEnergyDaily')).eql({
      device_class: 'energy',
      unit_of_measurement: 'kWh',
      state_class: 'total_increasing',
    });
    should(sensorOf('meterPower')).eql({ device_class: 'power', unit_of_measurement: 'W', state_class: 'measurement' });
    should(sensorOf('pv2Voltage')).eql({ device_class: 'voltage', unit_of_measurement: 'V', state_class: 'measurement' });
    should(sensorOf('pack1Current')).eql({ device_class: 'current', unit_of_measurement: 'A', state_class: 'measurement' });
    should(sensorOf('gridFrequency')).eql({ device_class: 'frequency', unit_of_measurement: 'Hz', state_class: 'measurement' });
    should(sensorOf('mbSoc')).eql({ device_class: 'battery', unit_of_measurement: '%', state_class: 'measurement' });
    should(sensorOf('calibrationCycle')).eql({ device_class: 'duration', unit_of_measurement: 'd' });
  });

  it('leave settings without a state class, and texts, packed times and unitless numbers without semantics', () => {
    should(sensorOf('feedInPowerLimit')).eql({ device_class: 'power', unit_of_measurement: 'W' });
    should(sensorOf('backupSoc')).eql({ device_class: 'battery', unit_of_measurement: '%' });
    should(sensorOf('gridCharging')).eql({ device_class: 'enum', options: ['Disable', 'Enable'] });
    for (const name of ['serialNumber', 'emsFirmware', 'calibrationStartTime', 'pack4SerialNumber', 'mbTemperature']) {
      should(sensorOf(name)).equal(undefined, name);
    }
  });

  it('cover points the catalogue may gain (temperatures in °C, kW, mV, counters in Wh), by rule', () => {
    const point = (name: string, unit: string): ReadPoint => ({
      direction: 'read',
      address: 60000,
      name,
      label: name,
      category: 'Test',
      type: 'num',
      unit,
    });
    should(homeAssistantSensor(point('inverterTemperature', '°C'))).eql({
      device_class: 'temperature',
      unit_of_measurement: '°C',
      state_class: 'measurement',
    });
    should(homeAssistantSensor(point('loadPower', 'kW'))).eql({
      device_class: 'power',
      unit_of_measurement: 'kW',
      state_class: 'measurement',
    });
    should(homeAssistantSensor(point('cellVoltageMax', 'mV'))).eql({
      device_class: 'voltage',
      unit_of_measurement: 'mV',
      state_class: 'measurement',
    });
    should(homeAssistantSensor(point('gridExportEnergyTotal', 'KWh'))).eql({
      device_class: 'energy',
      unit_of_measurement: 'kWh',
      state_class: 'total_increasing',
    });
    should(homeAssistantSensor(point('packHealth', '%'))).eql({ unit_of_measurement: '%', state_class: 'measurement' });
    should(homeAssistantSensor(point('cycleCount', 'cycles'))).eql({ unit_of_measurement: 'cycles', state_class: 'measurement' });
  });

  it('reach the editor and documentation through the catalogue JSON', () => {
    const soc = catalogueJson().read.find((p) => p.name === 'batterySoc')!;
    should(soc.homeAssistant).eql({ device_class: 'battery', unit_of_measurement: '%', state_class: 'measurement' });
  });
});
