/** The device simulator over real HTTP and UDP on 127.0.0.1. */
import http from 'node:http';
import net from 'node:net';
import { once } from 'node:events';
import dgram from 'node:dgram';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { createCipheriv } from 'node:crypto';
import should from 'should';
import { MAX_ADDRESSES_PER_READ, READ_POINTS, REAL_TIME, pointByName } from '../src/points/catalogue';
import { digestResponse, parseDigestHeader } from '../src/simulator/digest';
import { encryptPassword } from '../src/device/password-crypto';
import { DeviceSimulator, SIMULATOR_DEFAULTS, defaultUnsupportedAddresses, modelAddresses, type SimulatorOptions } from '../src/simulator';
import { HELP, listeningLine, parseSimulatorArgs } from '../src/cli/simulator';
import { loopStalls } from '../src/simulator/loop-stalls';
import { until } from './node-support';

const PASSWORD = 'sim-test-pw';
const NS = 'Vendor';

const address = (name: string): number => {
  const point = pointByName(name);
  if (!point) throw new Error(`no point ${name}`);
  return point.address;
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface Call {
  operation: string;
  method?: string;
  config?: unknown;
  /** The query as sent, instead of the encoded `config`. */
  rawQuery?: string;
  password?: string;
  username?: string;
  realm?: string;
  nonce?: string;
  /** Digest uri, when it should differ from the request target. */
  uri?: string;
  auth?: boolean;
  headers?: Record<string, string>;
  omitHeaders?: string[];
  body?: string;
  timeoutMs?: number;
}

function call(simulator: DeviceSimulator, c: Call): Promise<Reply> {
  const query = c.rawQuery ?? (c.config === undefined ? undefined : `config=${encodeURIComponent(JSON.stringify(c.config))}`);
  const target = `/rpc/${c.operation}` + (query ? `?${query}` : '');
  const method = c.method ?? (c.operation === 'Sys.GetConfig' ? 'GET' : 'POST');
  const headers: Record<string, string> = { 'Content-Type': 'application/json', Connection: 'close' };
  if (method === 'POST') headers['Content-Length'] = String(Buffer.byteLength(c.body ?? ''));
  if (c.auth !== false) {
    // Written by hand (the vendor's example values), independent of the client's digest-fetch.
    const digest = {
      username: c.username ?? 'opend',
      password: c.password ?? PASSWORD,
      method,
      uri: c.uri ?? target,
      realm: c.realm ?? 'opend',
      nonce: c.nonce ?? '123456',
      nc: '00000001',
      cnonce: '2',
    };
    headers.Authorization =
      `Digest username="${digest.username}", realm="${digest.realm}", nonce="${digest.nonce}", uri="${digest.uri}", ` +
      `algorithm=MD5, response="${digestResponse(digest)}", qop=auth, nc=00000001, cnonce="2"`;
  }
  Object.assign(headers, c.headers);
  for (const name of c.omitHeaders ?? []) delete headers[name];
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: simulator.port, method, path: target, agent: false, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (c.timeoutMs)
      req.setTimeout(c.timeoutMs, () => req.destroy(Object.assign(new Error('client time-out'), { code: 'CLIENT_TIMEOUT' })));
    req.end(c.body);
  });
}

async function getData(simulator: DeviceSimulator, addresses: number[], password = PASSWORD): Promise<Record<string, number | string>> {
  const reply = await call(simulator, { operation: `${NS}.GetData`, config: { t: addresses }, password });
  reply.status.should.equal(200, reply.body);
  return JSON.parse(reply.body) as Record<string, number | string>;
}

async function setData(simulator: DeviceSimulator, t: unknown, v: unknown): Promise<unknown> {
  const reply = await call(simulator, { operation: `${NS}.SetData`, config: { f: 16, t, v } });
  reply.status.should.equal(200, reply.body);
  return (JSON.parse(reply.body) as { result: unknown }).result;
}

function errorOf(promise: Promise<unknown>): Promise<NodeJS.ErrnoException> {
  return promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: NodeJS.ErrnoException) => error,
  );
}

/** A connection opened now, whose request leaves on the call it resolves with; that call returns when its bytes left. */
async function openedRequest(port: number): Promise<() => number> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  socket.resume();
  await once(socket, 'connect');
  return () => {
    socket.end('GET /rpc/Sys.GetConfig HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n\r\n');
    return performance.now();
  };
}

/** Holds the event loop, as a busy Node-RED sharing the simulator's process does. */
function busyFor(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

describe('DeviceSimulator', function () {
  this.timeout(10000);
  let simulator: DeviceSimulator | undefined;

  async function start(options: SimulatorOptions = {}): Promise<DeviceSimulator> {
    simulator = new DeviceSimulator({ port: 0, udpPort: null, password: PASSWORD, minIntervalMs: 0, ...options });
    await simulator.start();
    return simulator;
  }

  afterEach(async () => {
    await simulator?.stop();
    simulator = undefined;
  });

  describe('authentication', () => {
    it('accepts only User.SetConfig while the password is the default, then the new password', async () => {
      const sim = await start({ password: undefined });
      sim.hasDefaultPassword.should.be.true();
      const locked = await call(sim, { operation: `${NS}.GetData`, config: { t: [address('batterySoc')] }, password: 'opendefault' });
      locked.status.should.equal(401);
      (await call(sim, { operation: 'Sys.GetConfig', password: 'opendefault' })).status.should.equal(401);

      const encrypted = encryptPassword('opendefault', 'new-pass-1', '123456');
      const change = await call(sim, {
        operation: 'User.SetConfig',
        config: { Password: encrypted.ciphertext },
        password: 'opendefault',
        realm: encrypted.tag,
        nonce: encrypted.nonce,
      });
      change.status.should.equal(200);
      change.body.should.equal('{"result":true}');
      sim.hasDefaultPassword.should.be.false();
      sim.password.should.equal('new-pass-1');

      (await getData(sim, [address('batterySoc')], 'new-pass-1')).should.have.property(String(address('batterySoc')));
      (
        await call(sim, { operation: `${NS}.GetData`, config: { t: [address('batterySoc')] }, password: 'opendefault' })
      ).status.should.equal(401);
    });

    it('accepts the known-answer vector of the field notes', async () => {
      const sim = await start({ password: 'qazwsxed' });
      const reply = await call(sim, {
        operation: 'User.SetConfig',
        config: { Password: 'TrKQZ1QC1MQ=' },
        password: 'qazwsxed',
        realm: 'zwvQTjeg5rvLdBvLzqtymg==',
        nonce: '123456',
      });
      reply.body.should.equal('{"result":true}');
      sim.password.should.equal('qwertyui');
    });

    it('answers result false to a tag that does not verify or a new password over 16 bytes', async () => {
      const sim = await start({ password: 'qazwsxed' });
      const badTag = await call(sim, {
        operation: 'User.SetConfig',
        config: { Password: 'TrKQZ1QC1MQ=' },
        password: 'qazwsxed',
        realm: 'AAAAAAAAAAAAAAAAAAAAAA==',
        nonce: '123456',
      });
      badTag.body.should.equal('{"result":false}');
      const key = Buffer.alloc(16);
      Buffer.from('qazwsxed').copy(key);
      const iv = Buffer.alloc(12);
      Buffer.from('123456').copy(iv);
      const cipher = createCipheriv('aes-128-gcm', key, iv);
      const ciphertext = Buffer.concat([cipher.update('x'.repeat(17)), cipher.final()]).toString('base64');
      const tooLong = await call(sim, {
        operation: 'User.SetConfig',
        config: { Password: ciphertext },
        password: 'qazwsxed',
        realm: cipher.getAuthTag().toString('base64'),
        nonce: '123456',
      });
      tooLong.body.should.equal('{"result":false}');
      sim.password.should.equal('qazwsxed');
    });

    it('answers wrong credentials with 401 and a digest challenge', async () => {
      const sim = await start();
      const config = { t: [address('batterySoc')] };
      const cases: Call[] = [
        { operation: `${NS}.GetData`, config, password: 'wrong' },
        { operation: `${NS}.GetData`, config, username: 'admin' },
        { operation: `${NS}.GetData`, config, uri: `/rpc/${NS}.GetData` },
        { operation: `${NS}.GetData`, config, auth: false },
      ];
      for (const c of cases) {
        const reply = await call(sim, c);
        reply.status.should.equal(401);
        const challenge = parseDigestHeader(String(reply.headers['www-authenticate']));
        should(challenge).be.ok();
        challenge!.should.have.properties({ qop: 'auth', algorithm: 'MD5' });
        challenge!.nonce.should.match(/^[0-9a-f]{16}$/);
      }
      (await call(sim, { operation: `${NS}.GetData`, config })).status.should.equal(200);
    });

    it('with requireChallenge accepts only its own latest nonce', async () => {
      const sim = await start({ requireChallenge: true });
      const first = await call(sim, { operation: 'Sys.GetConfig' });
      first.status.should.equal(401);
      const challenge = parseDigestHeader(String(first.headers['www-authenticate']))!;
      const second = await call(sim, { operation: 'Sys.GetConfig', realm: challenge.realm, nonce: challenge.nonce });
      second.status.should.equal(200);
      JSON.parse(second.body).device.sn.should.equal(sim.value(0));
    });
  });

  describe('HTTP mode (auth none)', () => {
    it('serves data operations without an Authorization header, ignores one it gets, and has no default-password lock', async () => {
      const sim = await start({ auth: 'none', password: undefined });
      sim.hasDefaultPassword.should.be.true();
      const soc = String(address('batterySoc'));
      const bare = await call(sim, { operation: `${NS}.GetData`, config: { t: [Number(soc)] }, auth: false });
      bare.status.should.equal(200, bare.body);
      JSON.parse(bare.body).should.have.property(soc);
      (await call(sim, { operation: `${NS}.GetData`, config: { t: [Number(soc)] }, password: 'wrong' })).status.should.equal(200);
      (await call(sim, { operation: 'Sys.GetConfig', auth: false })).status.should.equal(200);
      const write = await call(sim, {
        operation: `${NS}.SetData`,
        config: { f: 16, t: address('workingModeSetting'), v: [REAL_TIME.mode] },
        auth: false,
      });
      write.body.should.equal('{"result":true}');
      sim.workingMode.should.equal(REAL_TIME.mode);
      listeningLine(sim, { auth: 'none' })
        .should.match(/\(HTTP mode, no authentication\)/)
        .and.not.containEql('default password');
    });

    it('refuses User.SetConfig with 403 and keeps the password', async () => {
      const sim = await start({ auth: 'none', password: 'qazwsxed' });
      for (const auth of [false, true]) {
        const reply = await call(sim, {
          operation: 'User.SetConfig',
          config: { Password: 'TrKQZ1QC1MQ=' },
          password: 'qazwsxed',
          realm: 'zwvQTjeg5rvLdBvLzqtymg==',
          nonce: '123456',
          auth,
        });
        reply.status.should.equal(403);
      }
      sim.password.should.equal('qazwsxed');
    });

    it('serves the maker namespace Indevolt together with HTTP mode', async () => {
      const sim = await start({ auth: 'none', namespace: 'Indevolt' });
      (await call(sim, { operation: 'Indevolt.GetData', config: { t: [0] }, auth: false })).status.should.equal(200);
      (await call(sim, { operation: `${NS}.GetData`, config: { t: [0] }, auth: false })).status.should.equal(404);
    });

    it('refuses an unknown auth mode', () => {
      (() => new DeviceSimulator({ auth: 'basic' as never })).should.throw(/auth must be one of digest, none/);
    });
  });

  describe('requests', () => {
    it('answers 404 to unknown operations and 405 to the wrong method', async () => {
      const sim = await start();
      (await call(sim, { operation: 'Other.GetData', config: { t: [0] } })).status.should.equal(404);
      (await call(sim, { operation: `${NS}.GetData`, method: 'GET', config: { t: [0] } })).status.should.equal(405);
      (await call(sim, { operation: 'Sys.GetConfig', method: 'POST' })).status.should.equal(405);
    });

    it('serves another namespace when configured', async () => {
      const sim = await start({ namespace: 'Maker' });
      (await call(sim, { operation: 'Maker.GetData', config: { t: [0] } })).status.should.equal(200);
      (await call(sim, { operation: `${NS}.GetData`, config: { t: [0] } })).status.should.equal(404);
    });

    it('answers {} to JSON with whitespace and records a protocol error', async () => {
      const sim = await start();
      const reply = await call(sim, {
        operation: `${NS}.GetData`,
        rawQuery: `config=${encodeURIComponent(`{"t": [${address('batterySoc')}]}`)}`,
      });
      reply.status.should.equal(200);
      reply.body.should.equal('{}');
      sim.stats.protocolErrors.should.have.length(1);
      sim.stats.protocolErrors[0].should.match(/whitespace/);
    });

    it('answers 400 to a config that is not JSON, a missing config or a bad t', async () => {
      const sim = await start();
      (await call(sim, { operation: `${NS}.GetData`, rawQuery: 'config=notjson' })).status.should.equal(400);
      (await call(sim, { operation: `${NS}.GetData` })).status.should.equal(400);
      (await call(sim, { operation: `${NS}.GetData`, config: { t: 'x' } })).status.should.equal(400);
      (await call(sim, { operation: `${NS}.GetData`, config: { t: [1.5] } })).status.should.equal(400);
    });

    it(`answers 400 to more than ${MAX_ADDRESSES_PER_READ} addresses and records the largest t`, async () => {
      const sim = await start();
      const addresses = READ_POINTS.map((p) => p.address).filter((a) => !sim.isUnsupported(a));
      const tooMany = await call(sim, { operation: `${NS}.GetData`, config: { t: addresses.slice(0, MAX_ADDRESSES_PER_READ + 1) } });
      tooMany.status.should.equal(400);
      Object.keys(await getData(sim, addresses.slice(0, MAX_ADDRESSES_PER_READ))).should.have.length(MAX_ADDRESSES_PER_READ);
      sim.stats.maxAddressesPerRead.should.equal(MAX_ADDRESSES_PER_READ + 1);
    });

    it('answers compact JSON with Content-Type application/json', async () => {
      const sim = await start();
      const reply = await call(sim, { operation: 'Sys.GetConfig' });
      reply.headers['content-type']!.should.match(/^application\/json/);
      reply.body.should.equal(JSON.stringify(JSON.parse(reply.body)));
    });

    it('records missing Connection: close, a POST body and a missing Content-Type', async () => {
      const sim = await start();
      const config = { t: [0] };
      (await call(sim, { operation: `${NS}.GetData`, config, headers: { Connection: 'keep-alive' } })).status.should.equal(200);
      (await call(sim, { operation: `${NS}.GetData`, config, body: '{"t":[0]}' })).status.should.equal(200);
      (await call(sim, { operation: `${NS}.GetData`, config, omitHeaders: ['Content-Type'] })).status.should.equal(200);
      const errors = sim.stats.protocolErrors;
      errors.should.have.length(3);
      errors[0].should.match(/Connection: close/);
      errors[1].should.match(/non-empty body/);
      errors[2].should.match(/Content-Type/);
      sim.stats.byOperation.should.eql({ [`${NS}.GetData`]: 3 });
    });
  });

  describe('values', () => {
    it('answers every supported catalogue point and leaves out unsupported and unknown ones', async () => {
      const sim = await start();
      const unsupported = defaultUnsupportedAddresses();
      unsupported.should.containEql(address('pack2Soc'));
      unsupported.should.containEql(address('bms5Firmware'));
      unsupported.should.not.containEql(address('pack1Soc'));
      unsupported.should.not.containEql(address('dcdc1Firmware'));

      // The 2000 class leaves out the 1600 class's own points too.
      for (const point of READ_POINTS.filter((p) => p.beyondSpec && !p.models!.includes('2000'))) unsupported.push(point.address);
      for (const address of READ_POINTS.map((p) => p.address))
        sim.isUnsupported(address).should.equal(unsupported.includes(address), `address ${address}`);

      const all = [...READ_POINTS.map((p) => p.address), 65000];
      const answer: Record<string, number | string> = {};
      for (let i = 0; i < all.length; i += MAX_ADDRESSES_PER_READ)
        Object.assign(answer, await getData(sim, all.slice(i, i + MAX_ADDRESSES_PER_READ)));
      answer.should.not.have.property('65000');
      for (const point of READ_POINTS) {
        const key = String(point.address);
        if (unsupported.includes(point.address)) {
          answer.should.not.have.property(key);
          should(sim.value(point.address)).be.undefined();
          continue;
        }
        answer.should.have.property(key);
        const value = answer[key];
        if (point.type === 'string') value.should.be.a.String();
        else if (point.enum) {
          // Real firmware sends some enumerated points as numeric strings; these two at least.
          if (['batteryState', 'meterStatus'].includes(point.name)) value.should.be.a.String().and.match(/^\d+$/);
          point.enum.map((o) => o.value).should.containEql(Number(value));
        } else value.should.be.a.Number();
        if (/h$/i.test(point.unit ?? '')) (Math.round((value as number) * 100) / 100).should.equal(value);
      }
      answer[String(address('serialNumber'))].should.equal(sim.value(0));
      Number.isInteger(answer[String(address('batterySoc'))]).should.be.true();
      answer[String(address('calibrationStartTime'))].should.equal(0x0200);
      answer[String(address('ratedCapacity'))].should.equal(sim.ratedCapacityKwh);
      answer[String(address('workingMode'))].should.equal(1);
    });

    it('honours a custom unsupported list', async () => {
      const sim = await start({ unsupported: [address('batteryPower')] });
      const answer = await getData(sim, [address('batteryPower'), address('pack5Soc')]);
      Object.keys(answer).should.eql([String(address('pack5Soc'))]);
    });
  });

  describe('writes', () => {
    it('checks write addresses and bounds with the catalogue and reflects writes in the paired read point', async () => {
      const sim = await start();
      const maxAc = address('maxAcOutputPowerSetting');
      should(await setData(sim, maxAc, [2401])).be.false();
      should(await setData(sim, maxAc, [49])).be.false();
      should(await setData(sim, maxAc, [800, 900])).be.false();
      should(await setData(sim, maxAc, 800)).be.false(); // v must be an array
      should(await setData(sim, address('workingMode'), [4])).be.false(); // a read address only
      should(await setData(sim, 9999, [1])).be.false();
      should(await setData(sim, maxAc, [650])).be.true();
      (await getData(sim, [address('maxAcOutputPower')]))[String(address('maxAcOutputPower'))].should.equal(650);

      should(await setData(sim, address('gridChargingSetting'), [0])).be.true();
      sim.value(address('gridCharging'))!.should.equal(1000); // readValueOffset
      should(await setData(sim, address('backupSocSetting'), [35])).be.true();
      sim.backupSoc.should.equal(35);
      sim.value(address('backupSoc'))!.should.equal(35);
    });

    it('accepts real-time control writes only in working mode 4', async () => {
      const sim = await start();
      should(await setData(sim, REAL_TIME.stateAddress, [1, 1000, 90])).be.false();
      should(await setData(sim, REAL_TIME.powerAddress, [500])).be.false();
      should(await setData(sim, REAL_TIME.modeAddress, [4])).be.true();
      sim.workingMode.should.equal(4);
      sim.value(address('workingMode'))!.should.equal(4);
      should(await setData(sim, REAL_TIME.stateAddress, [1, 2401, 90])).be.false();
      should(await setData(sim, REAL_TIME.stateAddress, [1, 1000, 101])).be.false();
      should(await setData(sim, REAL_TIME.stateAddress, [3, 1000, 90])).be.false();
      should(await setData(sim, REAL_TIME.stateAddress, [1, 1000, 90])).be.true();
      sim.control.should.eql({ state: 1, power: 1000, soc: 90 });
      should(await setData(sim, REAL_TIME.socAddress, [80])).be.true();
      sim.controlSoc.should.equal(80);
    });

    it('charges and discharges with a real-time write, SOC moving the right way', async () => {
      const sim = await start({ timeScale: 600 });
      should(await setData(sim, REAL_TIME.modeAddress, [4])).be.true();
      const [soc, power, state, meter, charged] = [
        'batterySoc',
        'batteryPower',
        'batteryState',
        'meterPower',
        'batteryChargeEnergyTotal',
      ].map((name) => String(address(name)));
      const before = await getData(sim, [address('batterySoc'), address('batteryChargeEnergyTotal')]);
      should(await setData(sim, REAL_TIME.stateAddress, [1, 2400, 100])).be.true();
      await sleep(300);
      const charging = await getData(
        sim,
        ['batterySoc', 'batteryPower', 'batteryState', 'meterPower', 'batteryChargeEnergyTotal'].map(address),
      );
      charging[power].should.equal(-2400);
      charging[state].should.equal('1001');
      (charging[soc] as number).should.be.above(before[soc] as number);
      (charging[charged] as number).should.be.above(before[charged] as number);
      // Charging draws from the grid: the meter imports more than the house load alone would.
      (charging[meter] as number).should.be.above(2400 - sim.pvPower);

      should(await setData(sim, REAL_TIME.stateAddress, [2, 2400, 5])).be.true();
      const top = sim.exactSoc;
      await sleep(300);
      const discharging = await getData(sim, [address('batterySoc'), address('batteryPower'), address('batteryState')]);
      discharging[power].should.equal(2400);
      discharging[state].should.equal('1002');
      sim.exactSoc.should.be.below(top);
    });

    it('stops charging and discharging at the target SOC', async () => {
      const sim = await start({ timeScale: 3600 });
      should(await setData(sim, REAL_TIME.modeAddress, [4])).be.true();
      const target = sim.soc + 3;
      should(await setData(sim, REAL_TIME.stateAddress, [1, 2400, target])).be.true();
      await sleep(300);
      sim.soc.should.equal(target);
      sim.batteryPower.should.equal(0);
      sim.value(address('batteryState'))!.should.equal('1000');

      should(await setData(sim, REAL_TIME.stateAddress, [2, 2400, target - 6])).be.true();
      await sleep(300);
      sim.soc.should.equal(target - 6);
      sim.batteryPower.should.equal(0);
    });

    it('moves the meter when a setpoint written over HTTP reaches the battery, after its dead time and lag', async () => {
      const sim = await start({ timeScale: 0, deadTimeS: 1, lagS: 1.5, house: { baseLoadW: 600, pvW: 100 } });
      should(await setData(sim, REAL_TIME.modeAddress, [4])).be.true();
      const meter = async () => (await getData(sim, [address('meterPower')]))[String(address('meterPower'))];
      should(await meter()).equal(500);
      should(await setData(sim, REAL_TIME.stateAddress, [2, 800, 5])).be.true();
      sim.tick(0.9);
      should(await meter()).equal(500);
      sim.tick(1.6);
      (await meter()).should.be.within(-300 + 800 / Math.E - 5, -300 + 800 / Math.E + 5);
      sim.tick(20);
      should(await meter()).equal(-300);
    });

    it('covers the house load in self-consumption down to the backup SOC, and idles in mode 5', async () => {
      const sim = await start({ timeScale: 36000 });
      should(await setData(sim, address('backupSocSetting'), [45])).be.true();
      await sleep(300);
      sim.exactSoc.should.be.aboveOrEqual(45);
      // One answer is one moment of the model: meter = load - pv - battery, with a plausible house load.
      const flows = await getData(sim, ['meterPower', 'pvPower', 'batteryPower', 'batterySoc'].map(address));
      const load = ['meterPower', 'pvPower', 'batteryPower'].reduce((sum, name) => sum + (flows[String(address(name))] as number), 0);
      load.should.be.within(250, 600);
      (flows[String(address('batterySoc'))] as number).should.be.aboveOrEqual(45);

      should(await setData(sim, REAL_TIME.modeAddress, [5])).be.true();
      await sleep(50);
      sim.batteryPower.should.equal(0);
      sim.value(address('batteryState'))!.should.equal('1000');
    });
  });

  it('answers Sys.GetConfig with the device object', async () => {
    const sim = await start({ serialNumber: 'SIMTEST000000042', type: 'SIM-TEST' });
    const reply = await call(sim, { operation: 'Sys.GetConfig' });
    reply.status.should.equal(200);
    const device = JSON.parse(reply.body).device;
    device.should.have.properties(['hostname', 'timezone', 'type', 'sn', 'mac', 'fw', 'f_ver', 'p_ver', 'time', 'time_stamp', 'run_time']);
    device.sn.should.equal('SIMTEST000000042');
    device.hostname.should.equal('SIM-TEST-0042');
    device.type.should.equal('SIM-TEST');
    device.time.should.match(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    // The maker's example: twelve hex digits without separators, the time zone in minutes east of UTC.
    device.mac.should.match(/^[0-9A-F]{12}$/);
    device.timezone.should.equal(-new Date().getTimezoneOffset());
    Math.abs(device.time_stamp - Date.now() / 1000).should.be.below(5);
  });

  it("answers Sys.GetConfig with empty sn and hostname and a firmware with a space, as the maker's example", async () => {
    const sim = await start({ blankIdentity: true, type: 'CMS-SF2000', firmware: 'T1.4.06_ROOD. 072_M4801_0000002C' });
    const device = JSON.parse((await call(sim, { operation: 'Sys.GetConfig' })).body).device;
    device.should.have.properties({ sn: '', hostname: '', type: 'CMS-SF2000', fw: 'T1.4.06_ROOD. 072_M4801_0000002C' });
    // The serial number is still there where the specification puts it: point 0.
    (await getData(sim, [0]))['0'].should.equal(SIMULATOR_DEFAULTS.serialNumber);
  });

  describe('model classes', () => {
    it('serves the 1600 class its own point set: 21028 instead of 11016, the read-backs and temperatures', async () => {
      const sim = await start({ model: '1600' });
      sim.model.should.equal('1600');
      const served = modelAddresses('1600');
      served.should.containEql(21028).and.containEql(6109).and.containEql(7600).and.containEql(6002);
      served.should.not.containEql(11016);
      served.should.not.containEql(address('gridVoltage'));
      const answer = await getData(sim, [6002, 11016, 21028, 6107, 6108, 6109, 7600, 7620, 2600, 9079]);
      Object.keys(answer).sort().should.eql(['21028', '6002', '6107', '6108', '6109', '7600', '7620']);
      answer['21028'].should.equal(sim.meterPower);
      answer['7600'].should.be.a.Number().and.above(0);
      (await getData(sim, [address('ratedCapacity')]))[String(address('ratedCapacity'))].should.equal(1.64);
    });

    it('serves the 2000 class the specification points and its heating states, not the 1600 class points', async () => {
      const sim = await start();
      sim.model.should.equal('2000');
      const answer = await getData(sim, [11016, 21028, 6109, 9079, 2600]);
      Object.keys(answer).sort().should.eql(['11016', '2600', '9079']);
    });

    it('refuses 1600-class real-time power beyond 1200 W charging and 800 W discharging, and settings it does not list', async () => {
      const sim = await start({ model: '1600', workingMode: REAL_TIME.mode });
      should(await setData(sim, REAL_TIME.stateAddress, [1, 1201, 90])).be.false();
      should(await setData(sim, REAL_TIME.stateAddress, [1, 1200, 90])).be.true();
      should(await setData(sim, REAL_TIME.stateAddress, [2, 801, 10])).be.false();
      should(await setData(sim, REAL_TIME.stateAddress, [2, 800, 10])).be.true();
      should(await setData(sim, REAL_TIME.powerAddress, [801])).be.false(); // still discharging
      sim.control.should.eql({ state: 2, power: 800, soc: 10 });
      should(await setData(sim, REAL_TIME.stateAddress, [0, 0, 0])).be.true();
      should(await setData(sim, address('maxAcOutputPowerSetting'), [800])).be.false();
      (await getData(sim, [6107, 6108, 6109])).should.eql({ 6107: 1000, 6108: 0, 6109: 0 });
    });

    it('lets the 2000 class take 2400 W and the standby write [0, 0, 0]', async () => {
      const sim = await start({ workingMode: REAL_TIME.mode });
      should(await setData(sim, REAL_TIME.stateAddress, [2, 2400, 10])).be.true();
      should(await setData(sim, REAL_TIME.stateAddress, [0, 0, 0])).be.true();
      sim.control.should.eql({ state: 0, power: 0, soc: 0 });
      should(await setData(sim, REAL_TIME.stateAddress, [1, 0, 0])).be.false();
    });

    it('refuses an unknown model class', () => {
      (() => new DeviceSimulator({ model: '3000' as never })).should.throw(/model must be one of 2000, 1600/);
    });
  });

  describe('faults', () => {
    const soc = () => ({ operation: `${NS}.GetData`, config: { t: [address('batterySoc')] } });

    it('timeout holds the request until the client gives up', async () => {
      const sim = await start();
      sim.setFault('timeout', 1);
      (await errorOf(call(sim, { ...soc(), timeoutMs: 300 }))).code!.should.equal('CLIENT_TIMEOUT');
      (await call(sim, soc())).status.should.equal(200);
      sim.stats.requests.should.equal(2);
    });

    it('slow answers correctly after the delay', async () => {
      const sim = await start({ slowDelayMs: 200 });
      sim.setFault('slow', 1);
      const started = Date.now();
      const reply = await call(sim, soc());
      (Date.now() - started).should.be.aboveOrEqual(190);
      JSON.parse(reply.body).should.have.property(String(address('batterySoc')));
    });

    it('reset destroys the connection', async () => {
      const sim = await start();
      sim.setFault('reset', 1);
      (await errorOf(call(sim, soc()))).code!.should.equal('ECONNRESET');
      (await call(sim, soc())).status.should.equal(200);
    });

    it('malformed answers 200 with a body that is not JSON', async () => {
      const sim = await start();
      sim.setFault('malformed', 1);
      const reply = await call(sim, soc());
      reply.status.should.equal(200);
      (() => JSON.parse(reply.body)).should.throw();
    });

    it('http500 and http503 answer with that status, for `count` requests', async () => {
      const sim = await start();
      sim.setFault('http500', 2);
      (await call(sim, soc())).status.should.equal(500);
      (await call(sim, soc())).status.should.equal(500);
      (await call(sim, soc())).status.should.equal(200);
      sim.setFault('http503');
      (await call(sim, soc())).status.should.equal(503);
      (await call(sim, soc())).status.should.equal(503);
      sim.setFault(null);
      (await call(sim, soc())).status.should.equal(200);
    });

    it('resultFalse refuses SetData and User.SetConfig but leaves reads alone', async () => {
      const sim = await start();
      sim.setFault('resultFalse', 2);
      (await call(sim, soc())).status.should.equal(200);
      should(await setData(sim, address('lightSetting'), [0])).be.false();
      sim.value(address('light'))!.should.equal(1);
      const encrypted = encryptPassword(PASSWORD, 'other-pw');
      const change = await call(sim, {
        operation: 'User.SetConfig',
        config: { Password: encrypted.ciphertext },
        realm: encrypted.tag,
        nonce: encrypted.nonce,
      });
      change.body.should.equal('{"result":false}');
      sim.password.should.equal(PASSWORD);
      should(await setData(sim, address('lightSetting'), [0])).be.true();
      sim.value(address('light'))!.should.equal(0);
    });

    it('offline refuses connections, and clearing it listens again on the same port', async () => {
      const sim = await start();
      const port = sim.port;
      sim.setFault('offline');
      await sim.ready();
      (await errorOf(call(sim, soc()))).code!.should.equal('ECONNREFUSED');
      sim.setFault(null);
      await sim.ready();
      sim.port.should.equal(port);
      (await call(sim, soc())).status.should.equal(200);
    });
  });

  describe('recording', () => {
    it('records an interval violation for two quick requests, none for requests 1.1 s apart', async () => {
      const sim = await start({ minIntervalMs: 1000 });
      await call(sim, { operation: 'Sys.GetConfig' });
      await call(sim, { operation: 'Sys.GetConfig' });
      const violations = sim.stats.violations;
      violations.should.have.length(1);
      violations[0].kind.should.equal('interval');
      violations[0].gapMs!.should.be.below(1000);
      violations[0].path.should.equal('/rpc/Sys.GetConfig');
      // Which request it came too soon after, for a failure's message.
      violations[0].after!.path.should.equal('/rpc/Sys.GetConfig');
      violations[0].after!.atMs.should.be.below(violations[0].atMs);

      sim.resetStats();
      await call(sim, { operation: 'Sys.GetConfig' });
      await sleep(1100);
      await call(sim, { operation: 'Sys.GetConfig' });
      sim.stats.violations.should.be.empty();
      sim.stats.requests.should.equal(2);
      sim.stats.byOperation.should.eql({ 'Sys.GetConfig': 2 });
    });

    it('counts the gap from when a request came, not from when its own busy process got to it', async () => {
      const sim = await start({ minIntervalMs: 1000, auth: 'none' });
      const opened = () => openedRequest(sim.port);
      const pair = async (secondAfterMs: number) => {
        sim.resetStats();
        const first = await opened();
        const sent = first();
        // The process (Node-RED and the simulator in one) is busy: the request waits in the kernel meanwhile.
        busyFor(200);
        const second = await opened();
        await sleep(sent + secondAfterMs - performance.now());
        second();
        await until(() => sim.stats.requests === 2);
        return sim.stats;
      };

      const late = await pair(1050);
      late.violations.should.be.empty();
      late.minGapMs!.should.be.aboveOrEqual(1000);
      const early = await pair(900);
      early.violations.map((v) => v.kind).should.eql(['interval']);
      early.minGapMs!.should.be.below(1000);
    });

    /** A request sent, then the process busy for 150 ms and `meanwhile`; the next request 1050 ms after the first. */
    const heldThrough = async (meanwhile: () => void) => {
      const sim = await start({ minIntervalMs: 1000, auth: 'none' });
      const send = async () => (await openedRequest(sim.port))();
      const sent = await send();
      busyFor(150);
      meanwhile();
      await until(() => sim.stats.requests === 1);
      await sleep(sent + 1050 - performance.now());
      await send();
      await until(() => sim.stats.requests === 2);
      return sim.stats.violations;
    };

    it('counts a busy stretch as one across what ran between its parts: a request held through both may have come before them', async () => {
      const violations = await heldThrough(() => {
        // Another device's request is handled between two busy callbacks, before this one is read.
        loopStalls.earliest(performance.now());
        busyFor(150);
      });
      violations.should.be.empty();
    });

    it('counts a request handled in the backlog after a busy stretch from the stretch, whatever was handled before it', async () => {
      // The live run's Node-RED start (two simulators of the harness process each got a request while it was busy): the
      // loop handles one request after the other, and the heartbeat runs before the last, 30 ms after the stretch.
      const violations = await heldThrough(() => {
        for (let other = 0; other < 2; other++) {
          loopStalls.earliest(performance.now());
          busyFor(15);
        }
      });
      violations.should.be.empty();
    });

    it('records a parallel violation for a request that arrives while another is in flight', async () => {
      const sim = await start({ slowDelayMs: 150 });
      sim.setFault('slow');
      await Promise.all([call(sim, { operation: 'Sys.GetConfig' }), sleep(30).then(() => call(sim, { operation: 'Sys.GetConfig' }))]);
      sim.stats.violations.map((v) => v.kind).should.eql(['parallel']);
    });

    it('answers after the configured latency, and keeps the smallest gap between arrivals', async () => {
      const sim = await start({ latencyMs: [300, 350] });
      const started = performance.now();
      (await call(sim, { operation: 'Sys.GetConfig' })).status.should.equal(200);
      (performance.now() - started).should.be.within(300, 600);
      await sleep(1000);
      await call(sim, { operation: 'Sys.GetConfig' });
      sim.stats.minGapMs!.should.be.within(1300, 1800);
      sim.stats.violations.should.be.empty();
    });

    it('with rejectEarly, answers a too-early request 503 and does not carry it out', async () => {
      const sim = await start({ rejectEarly: true, minIntervalMs: 1000 });
      should(await setData(sim, address('lightSetting'), [1])).equal(true);
      const early = await call(sim, { operation: `${NS}.SetData`, config: { f: 16, t: address('backupSocSetting'), v: [40] } });
      early.status.should.equal(503);
      sim.stats.rejectedEarly.should.equal(1);
      sim.stats.violations.map((v) => v.kind).should.eql(['interval']);
      should(sim.value(address('backupSoc'))).not.equal(40);
    });
  });

  describe('UDP discovery', () => {
    it('answers AT+IGDEVICEIP with sn, fw, ip and opendata_ver, and ignores other text', async () => {
      const sim = await start({ udpPort: 0, serialNumber: 'SIMUDP0000000007' });
      should(sim.udpPort).be.a.Number().and.above(0);
      const socket = dgram.createSocket('udp4');
      try {
        await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
        const answers: string[] = [];
        socket.on('message', (message) => answers.push(message.toString('utf8')));
        socket.send('hello', sim.udpPort, '127.0.0.1');
        await sleep(100);
        answers.should.be.empty();
        socket.send('AT+IGDEVICEIP', sim.udpPort, '127.0.0.1');
        for (let i = 0; i < 50 && answers.length === 0; i++) await sleep(10);
        answers.should.have.length(1);
        answers[0].should.equal(JSON.stringify(JSON.parse(answers[0])));
        JSON.parse(answers[0]).should.eql({
          sn: 'SIMUDP0000000007',
          fw: SIMULATOR_DEFAULTS.firmware,
          ip: '127.0.0.1',
          opendata_ver: 'V1.0.1',
        });
        sim.stats.udpQueries.should.equal(1);
      } finally {
        socket.close();
      }
    });
  });

  it('stop() closes every server, socket and timer, and is idempotent', async () => {
    const kinds = ['TCPServerWrap', 'TCPSocketWrap', 'UDPWrap', 'Timeout'];
    const count = () => Object.fromEntries(kinds.map((kind) => [kind, process.getActiveResourcesInfo().filter((r) => r === kind).length]));
    await new Promise(setImmediate); // mocha arms its own time-out timer once the test has returned its promise
    const before = count();
    const sim = new DeviceSimulator({ port: 0, udpPort: 0, password: PASSWORD, minIntervalMs: 0, slowDelayMs: 5000 });
    await sim.start();
    await getData(sim, [address('batterySoc')]);
    sim.setFault('timeout', 1);
    const held = call(sim, { operation: 'Sys.GetConfig' }).catch(() => undefined);
    sim.setFault('slow');
    await sleep(30);
    const delayed = call(sim, { operation: 'Sys.GetConfig' }).catch(() => undefined);
    await sleep(50);
    sim.stats.requests.should.equal(3);
    const running = count();
    running.TCPServerWrap.should.be.above(before.TCPServerWrap);
    running.UDPWrap.should.be.above(before.UDPWrap);
    running.Timeout.should.be.above(before.Timeout); // the slow answer's timer
    await sim.stop();
    await sim.stop();
    await Promise.all([held, delayed]);
    await sleep(20);
    count().should.eql(before);
    await new DeviceSimulator().stop(); // never started
  });

  describe('command line', () => {
    it('parses its options', () => {
      parseSimulatorArgs(['--latency', '900-1100', '--reject-early']).options.should.containEql({
        latencyMs: [900, 1100],
        rejectEarly: true,
      });
      parseSimulatorArgs(['--latency=1000']).options.latencyMs!.should.eql([1000, 1000]);
      (() => parseSimulatorArgs(['--latency', '1100-900'])).should.throw(/min <= max/);
      const command = parseSimulatorArgs([
        '--port',
        '0',
        '--udp-port=off',
        '--time-scale',
        '60',
        '--fault',
        'slow',
        '--password',
        'x',
        '--require-challenge',
      ]);
      command.should.eql({
        options: { port: 0, udpPort: null, timeScale: 60, password: 'x', requireChallenge: true },
        fault: 'slow',
        help: false,
      });
      parseSimulatorArgs(['--help']).help.should.be.true();
      (() => parseSimulatorArgs(['--port', '70000'])).should.throw(/--port/);
      (() => parseSimulatorArgs(['--time-scale', '0x3c'])).should.throw(/--time-scale needs a number >= 0, got "0x3c"/);
      (() => parseSimulatorArgs(['--fault', 'nope'])).should.throw(/--fault/);
      (() => parseSimulatorArgs(['--bogus', '1'])).should.throw(/Unknown option/);
      parseSimulatorArgs(['--auth', 'none', '--namespace', 'Indevolt']).options.should.eql({ auth: 'none', namespace: 'Indevolt' });
      (() => parseSimulatorArgs(['--auth', 'basic'])).should.throw(/--auth needs one of digest, none/);
      HELP.should.match(/--auth <digest\|none>/).and.match(/--namespace <name>[^]*Indevolt/);
      parseSimulatorArgs(['--model', '1600', '--type', 'BK1600', '--blank-identity']).options.should.eql({
        model: '1600',
        type: 'BK1600',
        blankIdentity: true,
      });
      (() => parseSimulatorArgs(['--model', 'SIM-5120'])).should.throw(/--model needs one of 2000, 1600/);
      HELP.should
        .match(/--model <2000\|1600>/)
        .and.match(/--type <text>/)
        .and.match(/--blank-identity/);
    });

    it('starts, serves requests, never prints a changed password and stops on SIGTERM', async () => {
      const script = path.join(__dirname, '..', 'src', 'cli', 'simulator.js');
      const child = spawn(process.execPath, [script, '--port', '0', '--udp-port', '0', '--password', PASSWORD], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      try {
        let output = '';
        child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
        for (let i = 0; i < 300 && !output.includes('\n'); i++) await sleep(10);
        const line = output.split('\n')[0];
        line.should.match(/^Battery simulator listening on http:\/\/127\.0\.0\.1:\d+ \(user opend, password set\) – UDP discovery on \d+$/);
        line.should.not.containEql(PASSWORD);
        const port = Number(/:(\d+) \(/.exec(line)![1]);
        const proxy = { port } as DeviceSimulator;
        (await call(proxy, { operation: 'Sys.GetConfig' })).status.should.equal(200);
        const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
        child.kill('SIGTERM');
        should(await exited).equal(0);
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
      }
    });
  });
});
