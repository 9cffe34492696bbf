/** The Home Assistant (MQTT discovery) example in Node-RED against the simulator and a test MQTT broker (see examples.test.ts). */
import should from 'should';
import { helper, PASSWORD, startSimulator } from './support';
import type { DeviceSimulator } from '../src/simulator';
import { MODEL_CLASSES, modelReadPointByName, pointByName, servesPoint, type ModelClass } from '../src/points/catalogue';
import { startBroker, type TestBroker } from './mqtt-broker';
import { DISCOVERY_TOPIC, checkNumberConfig, checkSelectConfig, checkSensorSemantics, checkSwitchConfig } from './home-assistant-schema';
import { ZERO_FEED_IN_RULES } from '../src/editor/inputs';
import { CORE_NODES, MQTT_NODES, OUR_NODES, type FlowNode, example, prepared, until, settle } from './examples-support';

describe('Home Assistant (MQTT discovery) example', function () {
  this.timeout(60000);
  const NAME = 'Home Assistant (MQTT discovery)';
  const NODE_RED_STATUS = 'localbattery/node-red/status';
  let simulator: DeviceSimulator;
  let broker: TestBroker;

  afterEach(async () => {
    await helper.unload();
    await broker?.stop();
    await simulator?.stop();
  });

  /** The last message on `topic`. */
  const lastOn = (topic: string) => broker.published.filter((p) => p.topic === topic).at(-1);

  /** The select's writers: armed without zero feed-in, which would overrule them. */
  const SELECT_WRITERS = ['battery setpoint', 'working mode'];

  /** The example against the simulator and the test's broker; `armed` enables the nodes that write (or those named). */
  async function run(armed: boolean | string[], simulatorOptions: Parameters<typeof startSimulator>[0] = {}) {
    simulator = await startSimulator(simulatorOptions);
    broker = await startBroker();
    const { flow, credentials } = prepared(NAME, simulator, PASSWORD, armed);
    for (const node of flow) {
      if (node.type === 'mqtt-broker') Object.assign(node, { broker: '127.0.0.1', port: broker.port });
      // Every 2 s instead of 10 s: a shorter test.
      if (node.type === 'localbattery-read') node.interval = 2;
    }
    await helper.load([...OUR_NODES, ...CORE_NODES, MQTT_NODES], flow, credentials);
    const reader = flow.find((n) => n.type === 'localbattery-read')!;
    const serial = String(simulator.value(0));
    const configs = () => broker.published.filter((p) => p.topic.startsWith('homeassistant/') && p.topic.endsWith('/config'));
    // A sensor for each point the model serves: none for a point that would stay empty.
    const served = (reader.points as string[]).filter((point) => servesPoint(simulator.model, point));
    await until(() => configs().length >= served.length + 4, 20000, 'discovery configs');
    await until(() => broker.subscriptions.includes('localbattery/+/control/set'), 10000, 'the control subscription');
    await until(() => broker.subscriptions.includes('localbattery/+/zero_feed_in/#'), 10000, 'the zero feed-in subscription');
    return { flow, reader, serial, configs, served };
  }

  for (const model of Object.keys(MODEL_CLASSES) as ModelClass[])
    it(`announces one device with a sensor per point the ${model} class serves (grid power on each), valid for Home Assistant, and publishes their states`, async () => {
      const { serial, configs, served } = await run(false, { model });
      const nodeId = `localbattery_${serial}`;
      const announced = configs();
      announced.length.should.equal(
        served.length + 4,
        'one config per point, the control select, the zero feed-in switch, number and battery mode select',
      );
      const components = new Set<string>();
      const uniqueIds = new Set<string>();
      const sensors = new Map<string, FlowNode>();
      for (const { topic, payload, retain } of announced) {
        retain.should.be.true(`${topic} is retained`);
        const match = DISCOVERY_TOPIC.exec(topic);
        should.exist(match, `${topic} has the discovery form`);
        const [, prefix, component, node, object] = match!;
        prefix.should.equal('homeassistant');
        node.should.equal(nodeId);
        const config = JSON.parse(payload);
        config.should.have.properties(['name', 'unique_id', 'device', 'origin']);
        config.unique_id.should.equal(`${nodeId}_${object}`);
        uniqueIds.has(config.unique_id).should.be.false(`${config.unique_id} is unique`);
        uniqueIds.add(config.unique_id);
        // One device, known by the serial number and model from the device info.
        config.device.should.eql({
          identifiers: [nodeId],
          name: 'Home battery',
          model: 'SIM-5120',
          serial_number: serial,
          sw_version: config.device.sw_version,
        });
        config.device.sw_version.should.be.a.String().and.not.be.empty();
        config.origin.name.should.be.a.String();
        // Unavailable unless Node-RED (the broker configuration's birth and will) and the device both say online.
        config.availability.should.eql([{ topic: NODE_RED_STATUS }, { topic: `localbattery/${serial}/availability` }]);
        config.availability_mode.should.equal('all');
        if (component === 'sensor') {
          config.state_topic.should.equal(`localbattery/${serial}/state`);
          config.value_template.should.equal(`{{ value_json.${object} }}`);
          config.name.should.equal((pointByName(object) ?? modelReadPointByName(object))!.label);
          checkSensorSemantics(object, config);
          sensors.set(object, config);
        } else if (component === 'switch') {
          object.should.equal('zero_feed_in');
          checkSwitchConfig(object, config);
          config.should.have.properties({
            name: 'Zero feed-in',
            command_topic: `localbattery/${serial}/zero_feed_in/set`,
            state_topic: `localbattery/${serial}/zero_feed_in/state`,
            payload_on: 'ON',
            payload_off: 'OFF',
          });
        } else if (component === 'number') {
          object.should.equal('zero_feed_in_target');
          checkNumberConfig(object, config);
          // The node's range for msg.target.
          config.should.have.properties({
            command_topic: `localbattery/${serial}/zero_feed_in/target/set`,
            state_topic: `localbattery/${serial}/zero_feed_in/target/state`,
            min: ZERO_FEED_IN_RULES.target.min,
            max: ZERO_FEED_IN_RULES.target.max,
            unit_of_measurement: ZERO_FEED_IN_RULES.target.unit,
            device_class: 'power',
          });
          config.step.should.be.above(0);
        } else if (object === 'battery_mode') {
          component.should.equal('select');
          checkSelectConfig(object, config);
          config.should.have.properties({
            name: 'Battery mode',
            command_topic: `localbattery/${serial}/zero_feed_in/mode/set`,
            state_topic: `localbattery/${serial}/zero_feed_in/mode/state`,
          });
          config.options.should.eql(['Zero feed-in', 'Hold', 'Charge', 'Standby']);
        } else {
          component.should.equal('select');
          checkSelectConfig(object, config);
          config.command_topic.should.equal(`localbattery/${serial}/control/set`);
          config.options.should.eql(['Charge', 'Discharge', 'Standby', 'Self-consumption']);
        }
        components.add(component);
      }
      [...components].sort().should.eql(['number', 'select', 'sensor', 'switch']);
      // The switch and the number have their state from the start: on, at the node's Target setting.
      const zeroNode = example(NAME).find((n) => n.type === 'localbattery-zero-feed-in')!;
      // They go out right after the configs, which run() waits for: on a busy machine they may not be in yet.
      const stateTopics = ['zero_feed_in/state', 'zero_feed_in/target/state', 'zero_feed_in/mode/state'].map(
        (topic) => `localbattery/${serial}/${topic}`,
      );
      await until(() => stateTopics.every((topic) => lastOn(topic) !== undefined), 10000, 'the zero feed-in states');
      lastOn(`localbattery/${serial}/zero_feed_in/state`)!.should.eql({
        topic: `localbattery/${serial}/zero_feed_in/state`,
        payload: 'ON',
        retain: true,
      });
      lastOn(`localbattery/${serial}/zero_feed_in/target/state`)!.payload.should.equal(String(zeroNode.target));
      // The mode it starts in: its Mode setting, normal.
      zeroNode.mode.should.equal('normal');
      lastOn(`localbattery/${serial}/zero_feed_in/mode/state`)!.should.eql({
        topic: `localbattery/${serial}/zero_feed_in/mode/state`,
        payload: 'Zero feed-in',
        retain: true,
      });
      [...sensors.keys()].sort().should.eql([...served].sort());
      sensors
        .get('gridPower')!
        .should.have.properties({ name: 'Grid power', device_class: 'power', state_class: 'measurement', unit_of_measurement: 'W' });
      sensors.get('batterySoc')!.should.have.properties({ device_class: 'battery', state_class: 'measurement', unit_of_measurement: '%' });
      sensors.get('batteryPower')!.should.have.properties({ device_class: 'power', state_class: 'measurement', unit_of_measurement: 'W' });
      sensors
        .get('batteryChargeEnergyTotal')!
        .should.have.properties({ device_class: 'energy', state_class: 'total_increasing', unit_of_measurement: 'kWh' });
      sensors.get('workingMode')!.should.have.properties({ device_class: 'enum' });

      // States: one JSON object per poll with every point the templates name; enum states among the options.
      const stateOf = () => broker.published.filter((p) => p.topic === `localbattery/${serial}/state`);
      await until(() => stateOf().length >= 1, 10000, 'a state message');
      const state = JSON.parse(stateOf()[0].payload);
      Object.keys(state)
        .sort()
        .should.eql([...served].sort());
      state.batterySoc.should.be.within(simulator.soc - 1, simulator.soc + 1);
      state.batteryPower.should.be.a.Number();
      for (const [name, config] of sensors) {
        if (config.device_class === 'enum') config.options.should.containEql(state[name]);
        else should(typeof state[name]).equal('number', name);
      }

      // Home Assistant restarting asks for the configs again.
      const before = configs().length;
      await broker.publish('homeassistant/status', 'online');
      await until(() => configs().length >= before * 2, 10000, 'discovery again after homeassistant/status online');
      simulator.stats.violations.should.be.empty();
    });

  /** What Home Assistant concludes from the retained availability topics: available only when all say online. */
  function available(topics: string[]): boolean {
    return topics.every((topic) => broker.published.filter((p) => p.topic === topic).at(-1)?.payload === 'online');
  }

  it('makes the entities unavailable during a device outage, and available when the device is back', async () => {
    const { serial, configs } = await run(false);
    const topics = JSON.parse(configs()[0].payload).availability.map((a: { topic: string }) => a.topic) as string[];
    const deviceTopic = `localbattery/${serial}/availability`;
    await until(() => available(topics), 10000, 'available after the first reading');
    lastOn(deviceTopic)!.retain.should.be.true();
    lastOn(NODE_RED_STATUS)!.retain.should.be.true();

    simulator.setFault('offline');
    await until(() => lastOn(deviceTopic)?.payload === 'offline', 15000, 'offline after the read node reports the outage');
    available(topics).should.be.false();
    lastOn(deviceTopic)!.retain.should.be.true();

    simulator.setFault(null);
    await until(() => available(topics), 20000, 'available again with the next reading');
  });

  it('makes the entities unavailable when the flow stops, and when Node-RED goes without a word (will)', async () => {
    const { serial } = await run(false);
    const topics = [NODE_RED_STATUS, `localbattery/${serial}/availability`];
    await until(() => available(topics), 10000, 'available');
    // Connection lost without DISCONNECT: the broker publishes Node-RED's will; on reconnecting, its birth.
    const before = broker.published.length;
    broker.dropClients();
    await until(
      () => broker.published.slice(before).some((p) => p.topic === NODE_RED_STATUS && p.payload === 'offline'),
      10000,
      'the will',
    );
    const will = broker.published.slice(before).find((p) => p.topic === NODE_RED_STATUS)!;
    will.should.eql({ topic: NODE_RED_STATUS, payload: 'offline', retain: true });
    await until(() => available(topics), 20000, 'the birth message after reconnecting');
    // Flow stopped: the close message.
    await helper.unload();
    await until(() => lastOn(NODE_RED_STATUS)?.payload === 'offline', 10000, 'the close message');
    available(topics).should.be.false();
  });

  it("takes the serial from point 0 when the device answers the maker's empty sn: no empty topic level, Control works", async () => {
    const { serial, configs } = await run(SELECT_WRITERS, { blankIdentity: true });
    serial.should.not.be.empty();
    for (const { topic } of configs()) topic.should.containEql(`/localbattery_${serial}/`);
    broker.published.some((p) => p.topic.includes('//') || p.topic.includes('localbattery_/')).should.be.false();
    await until(() => broker.published.some((p) => p.topic === `localbattery/${serial}/state`), 10000, 'a state');
    await broker.publish(`localbattery/${serial}/control/set`, 'Charge');
    await until(() => simulator.workingMode === 4 && simulator.controlState === 1, 15000, 'the simulator charging');
    await broker.publish(`localbattery/${serial}/control/set`, 'Self-consumption');
    await until(() => simulator.workingMode === 1, 15000, 'working mode 1 again');
  });

  it('does not touch the battery until armed', async () => {
    const { flow, serial } = await run(false);
    const startMode = simulator.workingMode;
    const commands = flow.filter((node) => node.type === 'mqtt in' && /control\/set$/.test(node.topic)).map((node) => node.id);
    should(commands).have.length(1);
    await settle(commands, () => broker.publish(`localbattery/${serial}/control/set`, 'Charge'));
    // The zero feed-in switch and number reach a disabled node: nothing.
    const zero = flow.filter((node) => node.type === 'mqtt in' && /zero_feed_in/.test(node.topic)).map((node) => node.id);
    should(zero).have.length(1);
    await settle(zero, () => broker.publish(`localbattery/${serial}/zero_feed_in/set`, 'ON'));
    await settle(zero, () => broker.publish(`localbattery/${serial}/zero_feed_in/target/set`, '300'));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    simulator.workingMode.should.equal(startMode);
    (simulator.stats.byOperation['Vendor.SetData'] ?? 0).should.equal(0);
  });

  it('once armed, takes Charge and Self-consumption from the Home Assistant select', async () => {
    const { serial } = await run(SELECT_WRITERS);
    await broker.publish(`localbattery/${serial}/control/set`, 'Charge');
    await until(() => simulator.workingMode === 4 && simulator.controlState === 1, 15000, 'the simulator charging');
    simulator.control.should.containEql({ state: 1, power: 800, soc: 100 });
    await until(() => simulator.batteryPower < 0, 10000, 'negative battery power (charging)');
    await broker.publish(`localbattery/${serial}/control/set`, 'Self-consumption');
    await until(() => simulator.workingMode === 1, 15000, 'working mode 1 again');
    simulator.stats.violations.should.be.empty();
  });

  it('once zero feed-in is armed: holds the grid at 0 W, the number moves the target, the switch OFF hands back, ON steers again', async () => {
    const { serial } = await run(['zero feed-in']);
    await until(() => simulator.workingMode === 4 && Math.abs(simulator.meterPower) <= 50, 25000, 'meter power near 0 W');
    // A new target from Home Assistant's number: exporting 100 W (reachable without grid charging).
    await broker.publish(`localbattery/${serial}/zero_feed_in/target/set`, '-100');
    await until(() => Math.abs(simulator.meterPower + 100) <= 50, 20000, 'meter power near -100 W');
    lastOn(`localbattery/${serial}/zero_feed_in/target/state`)!.should.eql({
      topic: `localbattery/${serial}/zero_feed_in/target/state`,
      payload: '-100',
      retain: true,
    });
    // Out of the number's range: refused before the node, nothing changes.
    await broker.publish(`localbattery/${serial}/zero_feed_in/target/set`, '20000');
    await new Promise((resolve) => setTimeout(resolve, 500));
    lastOn(`localbattery/${serial}/zero_feed_in/target/state`)!.payload.should.equal('-100');
    // The switch OFF hands control back to the battery (the node's On stop: working mode 1).
    await broker.publish(`localbattery/${serial}/zero_feed_in/set`, 'OFF');
    await until(() => simulator.workingMode === 1, 15000, 'working mode 1');
    await until(() => lastOn(`localbattery/${serial}/zero_feed_in/state`)?.payload === 'OFF', 5000, 'the switch state OFF');
    await broker.publish(`localbattery/${serial}/zero_feed_in/set`, 'ON');
    await until(() => simulator.workingMode === 4 && Math.abs(simulator.meterPower + 100) <= 50, 20000, 'steering to -100 W again');
    lastOn(`localbattery/${serial}/zero_feed_in/state`)!.payload.should.equal('ON');
    simulator.stats.violations.should.be.empty();
  });

  it('once zero feed-in is armed: the Battery mode select charges from the grid, refuses an unknown choice, Zero feed-in regulates again', async () => {
    const { serial } = await run(['zero feed-in'], { initialSoc: 50 });
    simulator.setData(pointByName('gridChargingSetting')!.address, [0]);
    await until(() => simulator.workingMode === 4 && Math.abs(simulator.meterPower) <= 50, 25000, 'meter power near 0 W');
    const modeState = `localbattery/${serial}/zero_feed_in/mode/state`;
    await broker.publish(`localbattery/${serial}/zero_feed_in/mode/set`, 'Charge');
    await until(() => simulator.controlState === 1 && simulator.controlPower === 800, 5000, 'charging at 800 W');
    await until(() => simulator.value(pointByName('gridCharging')!.address) === 1001, 5000, 'grid charging on');
    await until(() => lastOn(modeState)?.payload === 'Charge', 5000, 'the mode state Charge');
    lastOn(modeState)!.retain.should.be.true();
    // Not a mode: refused before the node, nothing changes.
    await broker.publish(`localbattery/${serial}/zero_feed_in/mode/set`, 'Boost');
    await broker.publish(`localbattery/${serial}/zero_feed_in/mode/set`, 'Zero feed-in');
    await until(() => lastOn(modeState)?.payload === 'Zero feed-in', 5000, 'the mode state Zero feed-in');
    broker.published
      .filter((p) => p.topic === modeState)
      .map((p) => p.payload)
      .should.not.containEql('Boost');
    await until(() => simulator.controlState !== 1 && Math.abs(simulator.meterPower) <= 50, 20000, 'meter power near 0 W again');
    await until(() => simulator.value(pointByName('gridCharging')!.address) === 1000, 5000, 'grid charging back off');
    simulator.stats.violations.should.be.empty();
  });
});
