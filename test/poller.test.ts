/** The Node-RED-free read polling (src/device/poller.ts) on a clock of its own: schedule, back-off, outages, change rules. */
import should from 'should';
import { pointByName } from '../src/points/catalogue';
import type { ReadResult } from '../src/device/client';
import { DeviceError, ValidationError } from '../src/errors';
import { parseDeadBand } from '../src/editor/inputs';
import { ChangeFilter, Poller, type ChangeSettings, type PollerSettings, type PollOutcome } from '../src/device/poller';
import { VirtualClock, settle } from './virtual-clock';

const SOC = pointByName('batterySoc')!.address;
const POWER = pointByName('batteryPower')!.address;
const keyOf = (address: number) => String(address);

const result = (values: Record<number, number | string>, missing: number[] = []): ReadResult => ({
  values: new Map(Object.entries(values).map(([address, value]) => [Number(address), value])),
  missing,
});

/** A device whose answers the test sets; it notes when each read was asked for. */
class FakeDevice {
  asked: number[] = [];
  values: Record<number, number | string> = { [SOC]: 50, [POWER]: 0 };
  fault: DeviceError | undefined;
  /** While set, reads wait for it (the request is under way). */
  hold: Promise<void> | undefined;
  constructor(private readonly clock: VirtualClock) {}

  read = async (_addresses: number[], onStart: () => void): Promise<ReadResult> => {
    this.asked.push(this.clock.now);
    onStart();
    if (this.hold) await this.hold;
    if (this.fault) throw this.fault;
    return result(this.values);
  };

  gaps(): number[] {
    return this.asked.slice(1).map((at, i) => at - this.asked[i]);
  }
}

function poller(clock: VirtualClock, device: FakeDevice, settings: Partial<PollerSettings> = {}) {
  const events = { polled: [] as PollOutcome[], failed: [] as Error[], back: [] as [number, string][] };
  const run = new Poller(
    device.read,
    {
      addresses: [SOC, POWER],
      intervalMs: 1000,
      keyOf,
      onlyChange: false,
      deadBand: parseDeadBand(''),
      heartbeatMs: 0,
      perPoint: false,
      ...settings,
    },
    {
      polled: (outcome) => events.polled.push(outcome),
      failed: (error) => events.failed.push(error),
      back: (ms, code) => events.back.push([ms, code]),
    },
    clock.asClock(),
  );
  return { run, events };
}

const unreachable = () => new DeviceError('UNREACHABLE', 'device unreachable');

describe('read polling (src/device/poller.ts)', function () {
  let clock: VirtualClock;
  let device: FakeDevice;
  beforeEach(function () {
    clock = new VirtualClock(1_000_000);
    device = new FakeDevice(clock);
  });

  it('polls first on the next 100 ms boundary, then on the grid of its interval', async function () {
    const { run, events } = poller(clock, device);
    run.start();
    await clock.advance(5000);
    should(device.asked[0]).equal(1_000_100);
    should(device.asked.slice(1).every((at) => at % 1000 === 0)).be.true();
    should(device.gaps().slice(1)).eql([1000, 1000, 1000, 1000]);
    should(events.polled).have.length(device.asked.length);
    run.stop();
    should(clock.pending).equal(0);
  });

  it('does not poll without an interval, and reads on demand', async function () {
    const { run, events } = poller(clock, device, { intervalMs: 0 });
    run.start();
    await clock.advance(10000);
    should(device.asked).eql([]);
    const outcome = await run.read([SOC]);
    should(outcome.sending).eql([{ key: String(SOC), address: SOC, value: 50 }]);
    should(events.polled).eql([]);
  });

  it('skips a tick while a poll still waits for its request, and queues one behind a poll under way', async function () {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    /** How each read was asked: the first request goes out at once, the others wait until the test starts them. */
    const reads: (() => void)[] = [];
    device.read = (_addresses, onStart) => {
      reads.push(onStart);
      if (reads.length > 1) return new Promise<ReadResult>(() => undefined);
      onStart();
      return held.then(() => result(device.values));
    };
    const { run, events } = poller(clock, device);
    run.start();
    // Ticks at 0.1, 1, 2 and 3 s: the first poll is under way, the second waits behind it, the others find it waiting.
    await clock.advance(3100);
    should(reads).have.length(2);
    release();
    await clock.advance(0);
    should(events.polled).have.length(1);
    // Its request goes out: the next tick polls again.
    reads[1]();
    await clock.advance(1000);
    should(reads).have.length(3);
    run.stop();
  });

  it('backs off while polls fail (1, 2, 4, 8 s up to the maximum), reports the outage once and its end once', async function () {
    const { run, events } = poller(clock, device, { backoffMaxMs: 8000 });
    device.fault = unreachable();
    run.start();
    await clock.advance(40000);
    // The first wait ends on the interval's grid, 1.9 s after the first poll (at 0.1 s).
    should(device.gaps().slice(0, 5)).eql([1900, 4000, 8000, 8000, 8000]);
    should(events.failed.map((e) => (e as DeviceError).code)).eql(['UNREACHABLE']);
    // Another cause is reported too, once.
    device.fault = new DeviceError('TIMEOUT', 'no answer');
    await clock.advance(16000);
    should(events.failed.map((e) => (e as DeviceError).code)).eql(['UNREACHABLE', 'TIMEOUT']);
    should(events.back).eql([]);

    device.fault = undefined;
    const recovering = device.asked.length;
    await clock.advance(8000);
    should(events.back).have.length(1);
    // From the first failure to the answer, with the last cause.
    should(events.back[0]).eql([device.asked[recovering] - device.asked[0], 'TIMEOUT']);
    const resumed = device.asked.length;
    await clock.advance(3000);
    should(device.asked.length - resumed).equal(3);
    should(device.gaps().slice(-2)).eql([1000, 1000]);
    should(events.back).have.length(1);
    run.stop();
  });

  it('ends an outage with a read on demand, and polls at the interval again', async function () {
    const { run, events } = poller(clock, device);
    device.fault = unreachable();
    run.start();
    await clock.advance(4000);
    device.fault = undefined;
    await run.read([SOC]);
    should(events.back.map(([, code]) => code)).eql(['UNREACHABLE']);
    const before = device.asked.length;
    await clock.advance(4000);
    should(device.asked.length - before).be.within(3, 4);
    run.stop();
  });

  it('keeps polling when an event handler throws, warns of it, and lets no rejection escape', async function () {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      const warnings: string[] = [];
      const run = new Poller(
        device.read,
        { addresses: [SOC], intervalMs: 1000, keyOf, onlyChange: false, deadBand: parseDeadBand(''), heartbeatMs: 0, perPoint: false },
        {
          polled: () => {
            throw new Error('send failed');
          },
          failed: () => undefined,
          back: () => undefined,
          warn: (error) => warnings.push(error.message),
        },
        clock.asClock(),
      );
      run.start();
      await clock.advance(3000);
      // At 0.1, 1, 2 and 3 s, as without the throw.
      should(device.asked).have.length(4);
      run.stop();
      await settle();
      should(rejections).eql([]);
      // Each throw is told, not swallowed.
      should(warnings).eql(['send failed', 'send failed', 'send failed', 'send failed']);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });

  it('reports nothing after stop, also for a poll under way', async function () {
    let release!: () => void;
    device.hold = new Promise((resolve) => (release = resolve));
    const { run, events } = poller(clock, device);
    run.start();
    await clock.advance(200);
    should(device.asked).have.length(1);
    run.stop();
    release();
    await clock.advance(5000);
    should(events.polled).eql([]);
    should(device.asked).have.length(1);
    should(clock.pending).equal(0);
  });
});

describe('what a read sends (ChangeFilter)', function () {
  const filter = (settings: Partial<ChangeSettings>) =>
    new ChangeFilter({ keyOf, onlyChange: true, deadBand: parseDeadBand(''), heartbeatMs: 0, perPoint: false, ...settings });
  const keys = (outcome: PollOutcome) => outcome.sending?.map((r) => r.key);

  it('without only on change sends every value every time', function () {
    const all = filter({ onlyChange: false });
    should(keys(all.take(result({ [SOC]: 1 }), [SOC], 0))).eql([String(SOC)]);
    should(keys(all.take(result({ [SOC]: 1 }), [SOC], 1))).eql([String(SOC)]);
  });

  it('all together: sends every value when one changed beyond its band, nothing otherwise', function () {
    const change = filter({ deadBand: parseDeadBand(`50, ${SOC}=2`, keyOf) });
    should(keys(change.take(result({ [SOC]: 10, [POWER]: 800 }), [SOC, POWER], 0))).eql([String(SOC), String(POWER)]);
    const quiet = change.take(result({ [SOC]: 12, [POWER]: 850 }), [SOC, POWER], 1);
    should(quiet.sending).be.undefined();
    should(quiet.changed).equal(0);
    should(keys(change.take(result({ [SOC]: 12, [POWER]: 851 }), [SOC, POWER], 2))).eql([String(SOC), String(POWER)]);
    // Compared with the value sent last, not read last: 12 then 13 then 15 moved 3.
    should(change.take(result({ [SOC]: 13, [POWER]: 851 }), [SOC, POWER], 3).sending).be.undefined();
    should(change.take(result({ [SOC]: 15, [POWER]: 851 }), [SOC, POWER], 4).changed).equal(1);
    // Text counts as changed on any difference.
    const text = filter({ deadBand: parseDeadBand('100') });
    text.take(result({ [SOC]: 'a' }), [SOC], 0);
    should(text.take(result({ [SOC]: 'b' }), [SOC], 1).changed).equal(1);
  });

  it('all together: the heartbeat sends the values again after its time without a send', function () {
    const beat = filter({ heartbeatMs: 3000 });
    const at = (time: number) => beat.take(result({ [SOC]: 1 }), [SOC], time).sending !== undefined;
    should([0, 1000, 2999, 3000, 5000, 6000].map(at)).eql([true, false, false, true, false, true]);
  });

  it('one message per point: each point has its own heartbeat, so a point that changes every read starves no other', function () {
    const split = filter({ heartbeatMs: 3000, perPoint: true });
    const sent: string[][] = [];
    for (let time = 0; time <= 7000; time += 1000) {
      sent.push(keys(split.take(result({ [POWER]: time, [SOC]: 50 }), [POWER, SOC], time)) ?? []);
    }
    should(sent.map((list) => list.includes(String(POWER)))).eql(Array(8).fill(true));
    should(sent.map((list) => list.includes(String(SOC)))).eql([true, false, false, true, false, false, true, false]);
  });

  it('warns about a missing point once', function () {
    const missing = filter({});
    should(missing.take(result({}, [SOC]), [SOC], 0)).have.properties({ missing: [String(SOC)], newlyMissing: [String(SOC)] });
    should(missing.take(result({}, [SOC, POWER]), [SOC, POWER], 1)).have.properties({
      missing: [String(SOC), String(POWER)],
      newlyMissing: [String(POWER)],
    });
  });

  it('parses a dead band: a number for every point and point=number entries; rejects anything else', function () {
    const band = parseDeadBand('20, batterySoc=1, 6000=25');
    should(band.all).equal(20);
    should([...band.byPoint]).eql([
      [String(SOC), 1],
      ['6000', 25],
    ]);
    should(parseDeadBand('batterySoc=1', (address) => (address === SOC ? 'batterySoc' : '?')).byPoint.get('batterySoc')).equal(1);
    for (const bad of ['-1', 'batterySoc=', 'batterySoc=x', '20 W', 'a=b=c', '70000=1', 'noSuchPoint=1', 'batterySoc=1=2']) {
      should(() => parseDeadBand(bad)).throw(ValidationError, { field: 'dead band' });
    }
  });
});
