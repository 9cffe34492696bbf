/**
 * UDP discovery. Every live scan here sends only to 127.0.0.1; the default (broadcast) scan runs in a child
 * process inside a private network namespace that has nothing but loopback.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as dgram from 'node:dgram';
import * as os from 'node:os';
import * as path from 'node:path';
import should from 'should';
import { broadcastTargets, discover, mergeDevices, parseAnswer, type DiscoveredDevice } from '../src/discovery/discovery';

const FIELD_NOTES_ANSWER = '{"sn":"HMG50DEV1234","fw":"V1.3.07_R003.001_MP12W_00000012","ip":"192.168.3.119","opendata_ver":"V1.0.1"}';

interface Responder {
  port: number;
  queries: { text: string; port: number }[];
  close(): Promise<void>;
}

/** A fake device on 127.0.0.1: answers each query with the given datagrams. */
function startResponder(answers: string[]): Promise<Responder> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket('udp4');
    const queries: { text: string; port: number }[] = [];
    socket.on('message', (data, rinfo) => {
      queries.push({ text: data.toString('ascii'), port: rinfo.port });
      if (data.toString('ascii') !== 'AT+IGDEVICEIP') return;
      for (const answer of answers) socket.send(answer, rinfo.port, rinfo.address);
    });
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => {
      resolve({
        port: socket.address().port,
        queries,
        close: () => new Promise<void>((done) => socket.close(() => done())),
      });
    });
  });
}

function bindBlocker(): Promise<dgram.Socket> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket('udp4');
    socket.once('error', reject);
    // Bound to all addresses, like discover() binds, so that the port is taken for it.
    socket.bind(0, () => resolve(socket));
  });
}

function countResources(): { udp: number; timers: number } {
  const active = process.getActiveResourcesInfo();
  return { udp: active.filter((r) => r === 'UDPWrap').length, timers: active.filter((r) => r === 'Timeout').length };
}

/** The scan's socket and timer are gone (a closed UDP handle is released by libuv one loop turn later). */
async function assertReleased(before: { udp: number; timers: number }): Promise<void> {
  let now = countResources();
  for (let i = 0; i < 50 && (now.udp > before.udp || now.timers > before.timers); i++) {
    await new Promise((done) => setTimeout(done, 10));
    now = countResources();
  }
  should(now.udp).not.be.above(before.udp, 'UDP socket left open');
  should(now.timers).not.be.above(before.timers, 'timer left running');
}

describe('discovery', function () {
  describe('parseAnswer', function () {
    it('keeps every member of the field-notes JSON answer, and the sender as address', function () {
      const device = parseAnswer(FIELD_NOTES_ANSWER, '10.0.0.9');
      should(device).eql({
        sn: 'HMG50DEV1234',
        fw: 'V1.3.07_R003.001_MP12W_00000012',
        ip: '192.168.3.119',
        opendata_ver: 'V1.0.1',
        address: '10.0.0.9',
      });
    });

    it('falls back to the sender for text that is not JSON', function () {
      should(parseAnswer('hello 192.168.3.119', '192.168.3.119')).eql({
        ip: '192.168.3.119',
        address: '192.168.3.119',
        raw: 'hello 192.168.3.119',
      });
      should(parseAnswer('[1,2]', '10.0.0.2')).eql({ ip: '10.0.0.2', address: '10.0.0.2', raw: '[1,2]' });
      should(parseAnswer('', '10.0.0.3')).eql({ ip: '10.0.0.3', address: '10.0.0.3', raw: '' });
    });

    it('uses the sender when the JSON has no usable ip', function () {
      should(parseAnswer('{"sn":"A1"}', '10.0.0.4')).eql({ sn: 'A1', ip: '10.0.0.4', address: '10.0.0.4' });
      should(parseAnswer('{"sn":"A1","ip":""}', '10.0.0.4').ip).equal('10.0.0.4');
    });

    it('tolerates trailing NULs and CR/LF, and turns a numeric serial into text', function () {
      const device = parseAnswer('{"sn":12345,"ip":"10.0.0.5"}\r\n\0\0', '10.0.0.6');
      should(device.sn).equal('12345');
      should(device.ip).equal('10.0.0.5');
    });
  });

  describe('mergeDevices', function () {
    it('merges by serial number, later answers filling in and overriding members', function () {
      const merged = mergeDevices([
        { ip: '10.0.0.1', sn: 'A', fw: 'old', address: '10.0.0.1' },
        { ip: '10.0.0.2', sn: 'B', address: '10.0.0.2' },
        { ip: '10.0.0.1', sn: 'A', fw: 'new', extra: 1, address: '10.0.0.1' },
      ]);
      should(merged).eql([
        { ip: '10.0.0.1', sn: 'A', fw: 'new', extra: 1, address: '10.0.0.1' },
        { ip: '10.0.0.2', sn: 'B', address: '10.0.0.2' },
      ]);
    });

    it('merges answers without a serial by ip, and prefers a JSON answer from the same ip', function () {
      const merged = mergeDevices([
        { ip: '10.0.0.7', address: '10.0.0.7', raw: 'x' },
        { ip: '10.0.0.7', address: '10.0.0.7', raw: 'y' },
        { ip: '10.0.0.8', address: '10.0.0.8', raw: 'z' },
        { ip: '10.0.0.8', sn: 'C', fw: 'f', address: '10.0.0.8' },
      ]);
      should(merged).eql([
        { ip: '10.0.0.7', address: '10.0.0.7', raw: 'y' },
        { ip: '10.0.0.8', sn: 'C', fw: 'f', address: '10.0.0.8', raw: 'z' },
      ]);
    });

    it('does not change its input', function () {
      const input: DiscoveredDevice[] = [
        { ip: '1.1.1.1', sn: 'A' },
        { ip: '1.1.1.2', sn: 'A' },
      ];
      mergeDevices(input);
      should(input[0]).eql({ ip: '1.1.1.1', sn: 'A' });
    });
  });

  describe('broadcastTargets', function () {
    it('adds each external IPv4 interface broadcast address to 255.255.255.255, without duplicates', function () {
      const fake = {
        lo: [{ address: '127.0.0.1', netmask: '255.0.0.0', family: 'IPv4', mac: '00:00:00:00:00:00', internal: true, cidr: '127.0.0.1/8' }],
        eth0: [
          {
            address: '192.168.3.7',
            netmask: '255.255.255.0',
            family: 'IPv4',
            mac: '02:00:00:00:00:01',
            internal: false,
            cidr: '192.168.3.7/24',
          },
          {
            address: 'fe80::1',
            netmask: 'ffff:ffff:ffff:ffff::',
            family: 'IPv6',
            mac: '02:00:00:00:00:01',
            internal: false,
            cidr: 'fe80::1/64',
            scopeid: 2,
          },
        ],
        eth1: [
          {
            address: '192.168.3.8',
            netmask: '255.255.255.0',
            family: 'IPv4',
            mac: '02:00:00:00:00:02',
            internal: false,
            cidr: '192.168.3.8/24',
          },
        ],
        docker0: [
          {
            address: '172.17.0.1',
            netmask: '255.255.0.0',
            family: 'IPv4',
            mac: '02:00:00:00:00:03',
            internal: false,
            cidr: '172.17.0.1/16',
          },
        ],
        tun0: [
          {
            address: '10.8.0.2',
            netmask: '255.255.255.255',
            family: 'IPv4',
            mac: '00:00:00:00:00:00',
            internal: false,
            cidr: '10.8.0.2/32',
          },
        ],
      } as ReturnType<typeof os.networkInterfaces>;
      should(broadcastTargets(fake)).eql(['255.255.255.255', '192.168.3.255', '172.17.255.255']);
    });

    it('gives only the limited broadcast address when there is no external interface', function () {
      should(broadcastTargets({})).eql(['255.255.255.255']);
    });
  });

  describe('discover (live, 127.0.0.1 only)', function () {
    const responders: Responder[] = [];
    const blockers: dgram.Socket[] = [];
    afterEach(async function () {
      await Promise.all(responders.splice(0).map((r) => r.close()));
      for (const socket of blockers.splice(0)) socket.close();
    });

    it('finds a device and keeps the extra members of its answer', async function () {
      const responder = await startResponder([FIELD_NOTES_ANSWER.replace('192.168.3.119', '127.0.0.1')]);
      responders.push(responder);
      const warnings: string[] = [];
      const before = countResources();
      const devices = await discover({
        target: '127.0.0.1',
        port: responder.port,
        localPort: 0,
        listenMs: 300,
        onWarning: (m) => warnings.push(m),
      });
      should(devices).eql([
        {
          sn: 'HMG50DEV1234',
          fw: 'V1.3.07_R003.001_MP12W_00000012',
          ip: '127.0.0.1',
          opendata_ver: 'V1.0.1',
          address: '127.0.0.1',
        },
      ]);
      await assertReleased(before);
      should(warnings).eql([]);
      should(responder.queries.map((q) => q.text)).eql(['AT+IGDEVICEIP']);
    });

    it('merges two answers with the same serial number', async function () {
      const responder = await startResponder(['{"sn":"S1","fw":"a"}', '{"sn":"S1","fw":"b","ip":"127.0.0.1","extra":true}']);
      responders.push(responder);
      const devices = await discover({ target: '127.0.0.1', port: responder.port, localPort: 0, listenMs: 300 });
      should(devices).eql([{ sn: 'S1', fw: 'b', ip: '127.0.0.1', extra: true, address: '127.0.0.1' }]);
    });

    it('falls back to a free local port with a warning when the local port is taken', async function () {
      const responder = await startResponder(['{"sn":"S2"}']);
      responders.push(responder);
      const blocker = await bindBlocker();
      blockers.push(blocker);
      const taken = blocker.address().port;
      const warnings: string[] = [];
      const before = countResources();
      const devices = await discover({
        target: '127.0.0.1',
        port: responder.port,
        localPort: taken,
        listenMs: 300,
        onWarning: (m) => warnings.push(m),
      });
      should(devices).eql([{ sn: 'S2', ip: '127.0.0.1', address: '127.0.0.1' }]);
      await assertReleased(before); // also the socket whose bind failed
      should(warnings).have.length(1);
      should(warnings[0]).containEql(String(taken)).and.containEql('EADDRINUSE');
      should(responder.queries[0].port).not.equal(taken);
    });

    it('ends early on abort with what was found so far', async function () {
      const responder = await startResponder(['{"sn":"S3"}']);
      responders.push(responder);
      const controller = new AbortController();
      const started = Date.now();
      const before = countResources();
      const scan = discover({ target: '127.0.0.1', port: responder.port, localPort: 0, listenMs: 10000, signal: controller.signal });
      setTimeout(() => controller.abort(), 300);
      const devices = await scan;
      // The 10 s listen timer must be cleared, not left to fire.
      await assertReleased(before);
      should(Date.now() - started).be.below(3000);
      should(devices).eql([{ sn: 'S3', ip: '127.0.0.1', address: '127.0.0.1' }]);
    });

    it('resolves at once with nothing when the signal is already aborted', async function () {
      const responder = await startResponder(['{"sn":"S4"}']);
      responders.push(responder);
      const devices = await discover({
        target: '127.0.0.1',
        port: responder.port,
        localPort: 0,
        listenMs: 10000,
        signal: AbortSignal.abort(),
      });
      should(devices).eql([]);
      // Give a query that was wrongly sent time to arrive.
      await new Promise((done) => setTimeout(done, 100));
      should(responder.queries).eql([]);
    });

    it('resolves with the sender address for a non-JSON answer from any port', async function () {
      const responder = await startResponder(['IP=127.0.0.1']);
      responders.push(responder);
      const devices = await discover({ target: '127.0.0.1', port: responder.port, localPort: 0, listenMs: 300 });
      should(devices).eql([{ ip: '127.0.0.1', address: '127.0.0.1', raw: 'IP=127.0.0.1' }]);
    });

    it('rejects invalid options with a ValidationError', async function () {
      await should(discover({ target: '127.0.0.1', port: 70000 })).be.rejectedWith({ code: 'INVALID_VALUE' });
      await should(discover({ target: '127.0.0.1', listenMs: -1 })).be.rejectedWith({ code: 'INVALID_VALUE' });
    });
  });

  describe('discover (default broadcast, isolated network namespace)', function () {
    it('resolves with no device and a warning that the network is unreachable', function () {
      try {
        execFileSync('unshare', ['-n', 'true'], { stdio: 'ignore' });
      } catch {
        this.skip(); // `unshare -n` is not permitted here: cannot isolate a broadcast from the host network.
      }
      const script = path.join(__dirname, 'fixtures', 'discover-in-netns.js');
      const child = spawnSync('unshare', ['-n', 'sh', '-c', 'ip link set lo up; exec node "$0" 1500', script], {
        encoding: 'utf8',
        timeout: 15000,
      });
      should(child.error).be.undefined();
      should(child.status).equal(0, `child failed: ${child.stderr}\n${child.stdout}`);
      const result = JSON.parse(child.stdout.trim()) as { devices: unknown[]; warnings: string[]; elapsedMs: number };
      // Only loopback exists: the one target is 255.255.255.255, which has no route, so the send fails
      // and the scan ends at once instead of waiting out its listen time.
      should(result.devices).eql([]);
      should(result.warnings).eql(['Discovery: sending to 255.255.255.255:8099 failed: ENETUNREACH']);
      should(result.elapsedMs).be.below(1500);
    });
  });
});
