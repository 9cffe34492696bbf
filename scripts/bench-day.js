#!/usr/bin/env node
// A day in simulated time (issue 24, item 10): the zero feed-in regulator core (src/control/regulator.ts, no Node-RED)
// against the simulator's plant through 24 hours of a house: night base load 150 W, 300 W by day, a fridge, a kettle
// in the morning, a washing machine, cooking and a dishwasher in the evening, TV; PV 2 kW at noon as a bell from 06:00
// to 20:00 with passing clouds. The battery: 2 kWh, starting at 30 % SOC, dead time 1 s, lag 1.5 s; the node's
// settings with 1200 W charge and 800 W discharge, SOC 10 to 100 %, no grid charging; so it reaches both SOC limits
// and both power limits. The loop runs as the node runs it with the meter by message: a reading every second, battery
// power and SOC read every 30 s (every 3 s while it steers), its clock looked at every step (0.2 s); every request (write or read) takes the device's 1 s pace, one at a time, and is
// answered 0.4 s after it left, when the regulator learns it was acknowledged (it learns when it left at once).
//
// Against (a) an oracle with the same information (the readings of the same meter, once a second; the plant and its
// SOC known exactly): a deadbeat once a second, the setpoint whose lag brings the battery onto the need one second
// after the dead time, limited by the powers, by what the SOC allows and by min(0, load) without grid charging; it
// writes when it moves by over 20 W; it follows a change of the load beyond the noise's spread (35 W) only. And (b) the device's own self-consumption mode (working mode 1, 800 W output,
// 1200 W input), for scale.
//
// Prints: energy from PV into the battery and from the battery to the house (self-consumed through it), grid error,
// import while the battery could still deliver (SOC above its floor, below its discharge power), export while it could
// still take the surplus, energy charged from the grid with grid charging off, wind-up at the SOC limits (minutes and
// Wh with the setpoint beyond what the battery delivers, at a limit), writes per hour (mean, most in one hour).
// Asserts nothing. Needs `npm run build`. Options: --hours <n> (default 24).
const path = require('node:path');

const dist = path.resolve(__dirname, '..', 'dist', 'src');
const { DeviceSimulator } = require(path.join(dist, 'simulator'));
const { Regulator } = require(path.join(dist, 'control', 'regulator'));
const { MeterCheck } = require(path.join(dist, 'control', 'meter-check'));
const { zeroFeedInSettings } = require(path.join(dist, 'editor', 'inputs'));
const { parseControl, controlValues } = require(path.join(dist, 'control', 'control'));
const { REAL_TIME } = require(path.join(dist, 'points', 'catalogue'));

const H = 3600;
const DT = 0.2;
const ANSWER_S = 0.4;
const PACE_S = 1;
const STATE_READ_S = 30;
/** While it steers, the node reads battery power this often (STEERING_READ_MS of src/control/zero-feed-in-reads.ts). */
const STEERING_READ_S = 3;
const DEAD_TIME_S = 1;
const LAG_S = 1.5;
const MAX_CHARGE = 1200;
const MAX_DISCHARGE = 800;
const SOC = { charge: 100, discharge: 10 };
/** A SOC within this of its limit counts as at the limit (%). */
const AT_LIMIT = 0.5;
/** The oracle follows a change of the load beyond the noise's spread only. */
const NOISE_W = 35;

const daily = (name, hour, minutes, loadW) => ({ name, atS: hour * H, durationS: minutes * 60, everyS: 24 * H, loadW });
const HOUSE = {
  seed: 3,
  baseLoadW: 150,
  noiseW: 15,
  appliances: [{ name: 'fridge', powerW: 90, onS: 900, offS: 1800 }],
  pvW: 2000,
  pvDay: { sunriseS: 6 * H, sunsetS: 20 * H },
  events: [
    daily('day base', 7, 16 * 60, 150),
    daily('kettle', 7.25, 4, 2000),
    daily('washing machine', 10, 90, 500),
    daily('cooking', 18, 60, 1500),
    daily('dishwasher', 20, 90, 1100),
    daily('tv', 19, 240, 150),
    { name: 'cloud', atS: 9 * H, durationS: 1200, everyS: 2700, cloud: 0.7, rampS: 60 },
    { name: 'passing cloud', atS: 12.5 * H, durationS: 300, everyS: 1900, cloud: 0.5, rampS: 8 },
  ],
};

function options(argv) {
  const chosen = { hours: 24 };
  for (let i = 0; i < argv.length; i += 2) {
    if (argv[i] === '--hours') chosen.hours = Number(argv[i + 1]);
    else throw new Error(`unknown option ${argv[i]}; --hours`);
  }
  if (!(chosen.hours >= 1 && chosen.hours <= 48)) throw new Error('--hours needs 1 to 48');
  return chosen;
}

function plant(workingMode) {
  return new DeviceSimulator({
    udpPort: null,
    timeScale: 0,
    workingMode,
    house: HOUSE,
    deadTimeS: DEAD_TIME_S,
    lagS: LAG_S,
    capacityKwh: 2,
    initialSoc: 30,
  });
}

const settings = zeroFeedInSettings(
  { maxCharge: MAX_CHARGE, maxDischarge: MAX_DISCHARGE, chargeSoc: SOC.charge, dischargeSoc: SOC.discharge, gridCharge: false },
  { chargeLimit: 2400, dischargeLimit: 2400 },
);
const controlOptions = { power: settings.regulator.minPower, chargeSoc: SOC.charge, dischargeSoc: SOC.discharge, clamp: true };
const signed = (command) => (command.state === 'charge' ? -command.power : command.state === 'discharge' ? command.power : 0);

/**
 * The one place that drives the regulator, as the node does: readings in, setpoints out through a queue at the
 * device's pace, answered ANSWER_S after they left. After the regulator's rewrite, adapt here.
 */
function regulatorLoop(sim) {
  const ms = (s) => s * 1000;
  const regulator = new Regulator({ ...settings.regulator, requestIntervalMs: PACE_S * 1000 }, 0);
  const queue = [];
  let free = 0;
  let answer;
  const loop = { writes: 0, setpoint: undefined, meterAlarms: 0 };
  // The controller's meter check (issue 34) on the same readings: a right meter must never raise it.
  const check = new MeterCheck();
  const act = (decision, urgent) => {
    if (decision?.action === 'set' || decision?.action === 'standby') {
      const command = parseControl(decision.action === 'standby' ? 0 : decision.setpoint, controlOptions);
      queue[urgent ? 'unshift' : 'push']({ kind: 'write', command });
    }
  };
  return Object.assign(loop, {
    second(now) {
      const decision = regulator.meter(sim.meterPower, ms(now));
      if (check.observe(sim.meterPower, decision.battery)) loop.meterAlarms++;
      act(decision);
      const every = loop.setpoint ? STEERING_READ_S : STATE_READ_S;
      if (Math.round(now) % every === 0 && !queue.some((request) => request.kind === 'read')) queue.push({ kind: 'read' });
    },
    step(now) {
      act(regulator.tick(ms(now)), true);
      if (answer && now + 1e-9 >= answer.at) {
        const done = answer;
        answer = undefined;
        if (done.kind === 'read') {
          regulator.observeSoc(done.soc, ms(now));
          regulator.observeBattery(done.battery, ms(now));
        } else {
          regulator.acknowledge(signed(done.command), ms(now));
          act(regulator.followUp(ms(now)), true);
        }
      }
      if (answer || queue.length === 0 || now + 1e-9 < free) return;
      const request = queue.shift();
      free = now + PACE_S;
      answer = { ...request, at: now + ANSWER_S };
      if (request.kind === 'read') Object.assign(answer, { soc: sim.soc, battery: sim.batteryPower });
      else {
        regulator.started(ms(now));
        sim.setData(REAL_TIME.stateAddress, controlValues(request.command));
        loop.writes++;
        loop.setpoint = signed(request.command);
      }
    },
  });
}

/** The oracle with the same information: the meter once a second, the plant (and its SOC) exactly. */
function oracleLoop(sim) {
  const a = Math.exp(-1 / LAG_S);
  const writes = [];
  const loop = { writes: 0, setpoint: undefined };
  let estimate;
  const ahead = (now) => {
    let b = sim.batteryPower;
    const demand = (tau) => writes.findLast((w) => w.t <= tau - DEAD_TIME_S + 1e-9)?.s ?? 0;
    for (let tau = now; tau < now + DEAD_TIME_S - 1e-9; tau += DT) b += (demand(tau) - b) * (1 - Math.exp(-DT / LAG_S));
    return b;
  };
  return Object.assign(loop, {
    second(now) {
      // The load as the meter shows it, a change within the noise (±15 W) not followed.
      const implied = sim.meterPower + sim.batteryPower;
      if (estimate === undefined || Math.abs(implied - estimate) > NOISE_W) estimate = implied;
      const load = estimate;
      const soc = sim.exactSoc;
      const low = soc >= SOC.charge - AT_LIMIT ? 0 : -MAX_CHARGE;
      const high = soc <= SOC.discharge + AT_LIMIT ? 0 : MAX_DISCHARGE;
      const need = Math.max(low, Math.min(high, Math.max(load - settings.regulator.target, Math.min(0, load))));
      const s = Math.round(Math.max(low, Math.min(high, (need - ahead(now) * a) / (1 - a))));
      if (loop.setpoint !== undefined && Math.abs(s - loop.setpoint) <= 20) return;
      sim.setData(REAL_TIME.stateAddress, controlValues(parseControl(s, controlOptions)));
      writes.push({ t: now, s });
      if (writes.length > 8) writes.shift();
      loop.writes++;
      loop.setpoint = s;
    },
    step() {},
  });
}

function run(name, hours, makeLoop) {
  const sim = plant(makeLoop ? 4 : 1);
  const loop = makeLoop?.(sim) ?? { writes: 0, setpoint: undefined, second() {}, step() {} };
  const f = {
    socLow: 100,
    socHigh: 0,
    pvIn: 0,
    toHouse: 0,
    error: 0,
    importCould: 0,
    exportCould: 0,
    fromGrid: 0,
    windUpS: 0,
    windUpWh: 0,
    hourly: [],
    counted: 0,
  };
  const wh = DT / H;
  const steps = Math.round((hours * H) / DT);
  for (let i = 1; i <= steps; i++) {
    sim.tick(DT);
    const now = i * DT;
    if (i % Math.round(1 / DT) === 0) loop.second(now);
    loop.step(now);
    const [b, load, pv, grid, soc] = [sim.batteryPower, sim.houseLoad, sim.pvPower, sim.gridPower, sim.exactSoc];
    const surplus = Math.max(0, pv - load);
    [f.socLow, f.socHigh] = [Math.min(f.socLow, soc), Math.max(f.socHigh, soc)];
    f.pvIn += Math.min(Math.max(0, -b), surplus) * wh;
    f.toHouse += Math.min(Math.max(0, b), Math.max(0, load - pv)) * wh;
    f.error += Math.abs(grid - settings.regulator.target) * wh;
    if (soc > SOC.discharge + AT_LIMIT && b < MAX_DISCHARGE - 20) f.importCould += Math.max(0, grid) * wh;
    if (soc < SOC.charge - AT_LIMIT && -b < MAX_CHARGE - 20) f.exportCould += Math.max(0, -grid) * wh;
    f.fromGrid += Math.max(0, -b - surplus) * wh;
    const s = loop.setpoint;
    const atLimit = s !== undefined && ((s < 0 && soc >= SOC.charge - AT_LIMIT) || (s > 0 && soc <= SOC.discharge + AT_LIMIT));
    if (atLimit && Math.abs(s) > Math.abs(b) + 50) {
      f.windUpS += DT;
      f.windUpWh += (Math.abs(s) - Math.abs(b)) * wh;
    }
    if (i % Math.round(H / DT) === 0) {
      f.hourly.push(loop.writes - f.counted);
      f.counted = loop.writes;
    }
  }
  return { name, f, writes: loop.writes, hours, socEnd: sim.exactSoc, meterAlarms: loop.meterAlarms };
}

function main() {
  const { hours } = options(process.argv.slice(2));
  const started = performance.now();
  const rows = [
    run('regulator (as the node drives it)', hours, regulatorLoop),
    run('oracle, same information', hours, oracleLoop),
    run("device's own self-consumption (mode 1)", hours, undefined),
  ];
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    `\nZero feed-in, a day in simulated time: ${hours} h; 2 kWh battery from 30 % SOC, SOC ${SOC.discharge}-${SOC.charge} %, ` +
      `charge ≤ ${MAX_CHARGE} W, discharge ≤ ${MAX_DISCHARGE} W, dead time ${DEAD_TIME_S} s, lag ${LAG_S} s; computed in ${seconds} s.\n`,
  );
  const kwh = (x) => (x / 1000).toFixed(2);
  const one = (x) => x.toFixed(1);
  console.log(
    '| controller | PV into battery (kWh) | battery to house (kWh) | × oracle | grid error (kWh) | import while it could deliver (Wh) | ' +
      'export while it could take (Wh) | from the grid, grid charging off (Wh) | wind-up at SOC limits (min / Wh) | writes per hour (mean / most) | SOC lowest / highest / at the end (%) |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|');
  const oracle = rows[1].f.toHouse;
  for (const { name, f, writes, socEnd } of rows)
    console.log(
      `| ${name} | ${kwh(f.pvIn)} | ${kwh(f.toHouse)} | ${(f.toHouse / oracle).toFixed(3)} | ${kwh(f.error)} | ${one(f.importCould)} | ` +
        `${one(f.exportCould)} | ${one(f.fromGrid)} | ${(f.windUpS / 60).toFixed(1)} / ${one(f.windUpWh)} | ` +
        `${(writes / hours).toFixed(0)} / ${Math.max(0, ...f.hourly)} | ${one(f.socLow)} / ${one(f.socHigh)} / ${one(socEnd)} |`,
    );
  for (const { name, meterAlarms } of rows.filter((row) => row.meterAlarms !== undefined))
    console.log(`
Meter alarms (src/control/meter-check.ts on the same readings), ${name}: ${meterAlarms} (must be 0).`);
}

main();
