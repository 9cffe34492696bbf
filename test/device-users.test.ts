/** The device configuration's users (src/flow/device-users.ts) on a real client against the simulator, without Node-RED. */
import should from 'should';
import { DeviceClient, type ConnectionState } from '../src/device/client';
import { DeviceUsers } from '../src/flow/device-users';
import { DeviceSimulator } from '../src/simulator';

const PASSWORD = 'users-secret-1';

describe('DeviceUsers', function () {
  let simulator: DeviceSimulator;
  let client: DeviceClient;
  let shown: [string, ConnectionState][];
  let users: DeviceUsers<string>;

  function start(password: string) {
    client = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password, namespace: 'Vendor', timeoutMs: 3000 });
    shown = [];
    users = new DeviceUsers<string>(client, (user, state) => shown.push([user, state]));
  }

  beforeEach(async () => {
    simulator = new DeviceSimulator({ port: 0, udpPort: null, password: PASSWORD });
    await simulator.start();
  });
  afterEach(async () => {
    await users?.close();
    await simulator.stop();
  });

  it('passes the connection state to every user, and a bad state known already to a user opening later', async () => {
    start('wrong-password');
    const a = users.open('a')!;
    users.open('b');
    await a.read([6000]).should.be.rejectedWith({ code: 'UNAUTHORIZED' });
    shown.should.eql([
      ['a', 'default-password'],
      ['b', 'default-password'],
    ]);
    users.leave('b');
    users.open('c');
    shown.slice(2).should.eql([['c', 'default-password']]);
  });

  it("closes the client only after a leaving user's last work has settled, and drops the others' waiting work", async () => {
    start(PASSWORD);
    const leaving = users.open('leaving')!;
    const staying = users.open('staying')!;
    const last = leaving.read([6000]);
    const waiting = staying.read([6001]);
    users.leave('leaving', last);
    const closed = users.close();
    await waiting.should.be.rejectedWith({ code: 'CLOSED' });
    (await last).values.has(6000).should.be.true();
    await closed;
    await client.session().read([6000]).should.be.rejectedWith({ code: 'CLOSED' });
  });

  it('gives no session without a client', () => {
    users = new DeviceUsers<string>(undefined, () => should.fail(undefined, undefined, 'no state without a client'));
    should(users.open('a')).be.undefined();
  });
});
