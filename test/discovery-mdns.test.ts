/**
 * Discovery over mDNS and UDP together. The live scans run in a child process inside a private network namespace
 * whose only LAN is a veth pair (lan0/lan1): multicast loops back to local listeners there and nothing leaves.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import should from 'should';
import { discoverDevices, mergeSources, parseMethod, type FoundDevice } from '../src/discovery/discovery';
import { onlyLoopbackUdp } from './node-support';
import { startSimulator } from './support';

const SERIAL = 'SIMMDNS000000001';
const FIRMWARE = 'V1.3.09_R003.002_MDNS_00000001';

/** The namespace's stand-in LAN, then the fixture; nothing is run when `unshare -n` is not permitted. */
const SETUP = [
  'ip link set lo up',
  'ip link add lan0 type veth peer name lan1',
  'ip addr add 10.77.0.1/24 dev lan0',
  'ip link set lan0 up',
  'ip link set lan1 up',
  'ip route add 224.0.0.0/4 dev lan0',
  'exec node "$0" "$@"',
].join(' && ');

interface NetnsResult {
  lan: string;
  devices: FoundDevice[];
  /** How many devices each scan found. */
  found: number[];
  warnings: string[];
  udpQueries: number;
  udpHandlesLeft: number;
}

/** `repeat` scans one after the other; `library` 'renamed': bonjour-service with its private socket field renamed. */
function scanInNamespace(
  this: Mocha.Context,
  method: string,
  announce: 'mdns' | 'off',
  repeat = 1,
  library: 'as-is' | 'renamed' = 'as-is',
): NetnsResult {
  try {
    execFileSync('unshare', ['-n', 'true'], { stdio: 'ignore' });
  } catch {
    this.skip(); // `unshare -n` is not permitted here: cannot keep multicast off the host network.
  }
  const script = path.join(__dirname, 'fixtures', 'discover-mdns-in-netns.js');
  const child = spawnSync('unshare', ['-n', 'sh', '-c', SETUP, script, method, announce, '1500', String(repeat), library], {
    encoding: 'utf8',
    timeout: 20000,
  });
  should(child.error).be.undefined();
  should(child.status).equal(0, `child failed: ${child.stderr}\n${child.stdout}`);
  return JSON.parse(child.stdout.trim()) as NetnsResult;
}

describe('discovery over mDNS and UDP', function () {
  describe('mergeSources', function () {
    const udp = [
      { sn: 'A1', fw: 'F1', ip: '10.0.0.5', address: '10.0.0.5', opendata_ver: 'V1.0.1' },
      { ip: '10.0.0.6', address: '10.0.0.6', raw: 'x' },
    ];
    const mdnsRecord = (name: string, ip: string) => ({ name, host: 'h.local', port: 8080, addresses: [ip], txt: {} });

    it('makes one entry per address, with what each source told and which sources saw it', function () {
      const mdns: FoundDevice[] = [
        { ip: '10.0.0.5', port: 8080, name: 'IGEN_FW_A', sn: 'OTHER', sources: ['mdns'], mdns: mdnsRecord('IGEN_FW_A', '10.0.0.5') },
        { ip: '10.0.0.6', port: 80, name: 'IGEN_FW_B', sn: 'B2', fw: 'F2', sources: ['mdns'], mdns: mdnsRecord('IGEN_FW_B', '10.0.0.6') },
        { ip: '10.0.0.7', port: 8080, name: 'IGEN_FW_C', sources: ['mdns'], mdns: mdnsRecord('IGEN_FW_C', '10.0.0.7') },
      ];
      const merged = mergeSources(udp, mdns);
      should(merged.map((d) => [d.ip, d.sources, d.port, d.name, d.sn, d.fw])).eql([
        // The UDP answer's serial wins; mDNS adds port and name.
        ['10.0.0.5', ['udp', 'mdns'], 8080, 'IGEN_FW_A', 'A1', 'F1'],
        // A UDP answer without serial takes it from mDNS.
        ['10.0.0.6', ['udp', 'mdns'], 80, 'IGEN_FW_B', 'B2', 'F2'],
        ['10.0.0.7', ['mdns'], 8080, 'IGEN_FW_C', undefined, undefined],
      ]);
      should(merged[0]).have.properties({ opendata_ver: 'V1.0.1', address: '10.0.0.5' });
      should(merged[0].mdns!.name).equal('IGEN_FW_A');
      // The inputs are not changed.
      should(udp[0]).not.have.property('sources');
      should(mdns[0].sources).eql(['mdns']);
    });
  });

  describe('parseMethod', function () {
    it('takes udp, mdns and both, empty as both, and refuses anything else', function () {
      should([parseMethod('udp'), parseMethod('mdns'), parseMethod('both'), parseMethod(''), parseMethod(undefined)]).eql([
        'udp',
        'mdns',
        'both',
        'both',
        'both',
      ]);
      should(() => parseMethod('dns')).throw({ code: 'INVALID_VALUE' });
      should(() => parseMethod(1)).throw({ code: 'INVALID_VALUE' });
    });
  });

  describe('discoverDevices on loopback', function () {
    onlyLoopbackUdp();

    it('asks over UDP only when given a target (mDNS searches the whole network), and says so for method mdns', async function () {
      const simulator = await startSimulator({ udpPort: 0, serialNumber: SERIAL });
      try {
        const warnings: string[] = [];
        const devices = await discoverDevices({
          method: 'mdns',
          target: '127.0.0.1',
          port: simulator.udpPort,
          localPort: 0,
          listenMs: 300,
          onWarning: (m) => warnings.push(m),
        });
        should(devices.map((d) => [d.ip, d.sn, d.sources])).eql([['127.0.0.1', SERIAL, ['udp']]]);
        should(warnings).have.length(1);
        should(warnings[0]).containEql('UDP only');
      } finally {
        await simulator.stop();
      }
    });

    it('refuses invalid options before anything is sent', async function () {
      await should(discoverDevices({ method: 'both', port: 70000 })).be.rejectedWith({ code: 'INVALID_VALUE' });
      await should(discoverDevices({ method: 'both', listenMs: -1 })).be.rejectedWith({ code: 'INVALID_VALUE' });
      await should(discoverDevices({ method: 'any' as never })).be.rejectedWith({ code: 'INVALID_VALUE' });
    });
  });

  describe('discoverDevices in an isolated network namespace with a veth LAN', function () {
    this.timeout(30000);

    it('both (default): one entry for a device that answers UDP and announces itself over mDNS', function () {
      const result = scanInNamespace.call(this, 'both', 'mdns');
      should(result.devices).have.length(1); // the printer's _http._tcp service is left out
      should(result.devices[0]).have.properties({ ip: result.lan, sn: SERIAL, fw: FIRMWARE, port: 8080, name: `IGEN_FW_${SERIAL}` });
      should(result.devices[0].sources).eql(['udp', 'mdns']);
      should(result.devices[0].mdns).have.properties({ name: `IGEN_FW_${SERIAL}`, port: 8080, addresses: [result.lan] });
      should(result.udpQueries).be.above(0);
      should(result.udpHandlesLeft).equal(0, 'the scan left a UDP socket open');
    });

    it('mdns: finds the device by its announcement alone, without a UDP query', function () {
      const result = scanInNamespace.call(this, 'mdns', 'mdns');
      should(result.devices.map((d) => [d.ip, d.sources, d.port, d.sn])).eql([[result.lan, ['mdns'], 8080, SERIAL]]);
      should(result.udpQueries).equal(0);
    });

    it('udp: asks over UDP only; mdns: a device that does not announce itself is not found', function () {
      const udp = scanInNamespace.call(this, 'udp', 'mdns');
      should(udp.devices.map((d) => [d.ip, d.sources, d.port])).eql([[udp.lan, ['udp'], undefined]]);
      const silent = scanInNamespace.call(this, 'mdns', 'off');
      should(silent.devices).eql([]);
    });

    it('repeated scans each find the device and leave no socket open', function () {
      const result = scanInNamespace.call(this, 'mdns', 'mdns', 4);
      should(result.found).eql([1, 1, 1, 1]);
      should(result.udpHandlesLeft).equal(0, 'the scans left a UDP socket open');
    });

    it('a bonjour-service whose private socket field is renamed: the scan resolves with a warning and closes its socket', function () {
      const result = scanInNamespace.call(this, 'mdns', 'mdns', 3, 'renamed');
      should(result.found).eql([0, 0, 0]);
      should(result.warnings.filter((w) => /not available/.test(w))).have.length(3);
      should(result.udpHandlesLeft).equal(0, 'the scans left the port-5353 socket open');
    });
  });
});
