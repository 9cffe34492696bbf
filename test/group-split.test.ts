/** The split of a group's setpoint over several batteries (src/control/group-split.ts): each rule, then in a shared house. */
import should from 'should';
import {
  SPLIT_DEFAULTS,
  heading,
  splitGroup,
  type GroupSplit,
  type GroupUnit,
  type SplitMemory,
  type SplitOptions,
} from '../src/control/group-split';
import { DeviceSimulator, SharedHouse } from '../src/simulator';
import { REAL_TIME } from '../src/points/catalogue';
import { setpoint } from './setpoint';

/** The 2400 class (5.12 kWh) and the 1600 class (1.64 kWh, charge 1200 W, discharge 800 W). */
const CLASSES = {
  big: { maxChargeW: 2400, maxDischargeW: 2400, capacityWh: 5120 },
  small: { maxChargeW: 1200, maxDischargeW: 800, capacityWh: 1640 },
};
const unit = (id: keyof typeof CLASSES, soc: number, extra: Partial<GroupUnit>): GroupUnit => ({
  id,
  ...CLASSES[id],
  soc,
  chargeSoc: 100,
  dischargeSoc: 10,
  setpointW: 0,
  ...extra,
});
const big = (soc: number, extra: Partial<GroupUnit> = {}) => unit('big', soc, extra);
const small = (soc: number, extra: Partial<GroupUnit> = {}) => unit('small', soc, extra);

/** Calls the split over and over with each unit's setpoint in force being the last split's (a loop of decisions). */
function loop(units: GroupUnit[], options: Partial<SplitOptions> = {}) {
  let memory: SplitMemory | undefined;
  let nowMs = 0;
  return (totalW: number, stepMs = 1000): GroupSplit => {
    nowMs += stepMs;
    const split = splitGroup(totalW, units, nowMs, memory, options);
    memory = split.memory;
    split.setpoints.forEach((s, i) => (units[i].setpointW = s));
    return split;
  };
}

const activeCount = (split: GroupSplit) => split.setpoints.filter((s) => s !== 0).length;

describe('group split', function () {
  it('never commands one unit to charge while another discharges, stays within limits and accounts for every watt', () => {
    for (const [a, b] of [
      [80, 40],
      [40, 80],
      [95, 5],
      [100, 10],
    ] as const)
      for (let total = -6000; total <= 6000; total += 137) {
        const units = [big(a), small(b), { ...small(60), id: 'third' }];
        const split = splitGroup(total, units, 0);
        const signs = new Set(split.setpoints.filter((s) => s !== 0).map(Math.sign));
        signs.size.should.be.belowOrEqual(1);
        if (signs.size === 1) [...signs][0].should.equal(Math.sign(total));
        split.setpoints.forEach((s, i) => s.should.be.within(-units[i].maxChargeW, units[i].maxDischargeW));
        (split.commandedW + split.unmetW).should.equal(total);
        split.commandedW.should.equal(split.setpoints.reduce((sum, s) => sum + s, 0));
      }
  });

  it('stages: one unit at low power, the next joins above joinShare of the active ones and leaves below leaveShare', () => {
    const units = [big(80), small(79)];
    const next = loop(units);
    activeCount(next(300)).should.equal(1);
    units[0].setpointW.should.equal(300); // the fullest
    activeCount(next(1900)).should.equal(1); // 1900 ≤ 0.8 × 2400
    activeCount(next(1930)).should.equal(2);
    activeCount(next(1500)).should.equal(2); // the big one alone would run at 62 % > leaveShare
    activeCount(next(1440)).should.equal(1); // ≤ 0.6 × 2400
    // The small one discharged a moment ago: no one may charge until it has settled (5 s by default).
    next(-300).setpoints.should.eql([0, 0]);
    next(300, 5000).setpoints.should.eql([300, 0]);
    next(-300).setpoints.should.eql([-300, 0]); // the one that moved reverses itself at once
  });

  it('does not flutter about a threshold: a total wandering ±150 W about the join point moves one unit in once', () => {
    const wander = (options: Partial<SplitOptions>) => {
      const next = loop([big(80), small(79)], options);
      let changes = 0;
      let before = 0;
      for (let i = 0; i < 200; i++) {
        const count = activeCount(next(1920 + 150 * Math.sin(i / 3)));
        if (count !== before) changes++;
        before = count;
      }
      return changes;
    };
    wander({}).should.equal(2); // 0 → 1 at the start, 1 → 2 once
    // Without the gap between join and leave the same total flutters: the test can see it.
    wander({ leaveShare: 0.79 }).should.be.above(20);
  });

  it('balances: discharge runs the fullest (SOC above its floor), charge the emptiest, whatever the size', () => {
    splitGroup(500, [big(40), small(80)], 0).setpoints.should.eql([0, 500]);
    splitGroup(500, [big(80), small(40)], 0).setpoints.should.eql([500, 0]);
    splitGroup(-500, [big(40), small(80)], 0).setpoints.should.eql([-500, 0]);
    splitGroup(-500, [big(60, { chargeSoc: 70 }), small(40, { chargeSoc: 100 })], 0).setpoints.should.eql([0, -500]);
    // Fullest by points above the own discharge SOC.
    splitGroup(500, [big(50, { dischargeSoc: 45 }), small(30, { dischargeSoc: 10 })], 0).setpoints.should.eql([0, 500]);
  });

  it('keeps the active unit until an idle one is rotateMarginPct points fuller, so near-equal units do not swap', () => {
    splitGroup(500, [big(60, { setpointW: 400 }), small(64)], 0).setpoints.should.eql([500, 0]);
    splitGroup(500, [big(60, { setpointW: 400 }), small(66)], 0).setpoints.should.eql([0, 500]);
    // The same in a loop, the running unit draining 0.5 points a decision: it hands over only past the margin.
    const units = [big(62), small(60)];
    const next = loop(units);
    const runs: number[] = [];
    let leader = '';
    for (let i = 0; i < 90; i++) {
      for (const u of units) if (u.setpointW > 0) u.soc -= 0.5;
      const now = next(400).setpoints[0] > 0 ? 'big' : 'small';
      if (now === leader) runs[runs.length - 1] += 1;
      else runs.push(1);
      leader = now;
      Math.abs(units[0].soc - units[1].soc).should.be.belowOrEqual(SPLIT_DEFAULTS.rotateMarginPct + 2 + 0.5);
    }
    runs.length.should.be.above(3); // it does hand over, both ways
    for (const run of runs.slice(1, -1)) run.should.be.aboveOrEqual((2 * SPLIT_DEFAULTS.rotateMarginPct) / 0.5);
  });

  it('shares among the active units in proportion to the energy above the discharge SOC (charge: the room left)', () => {
    // big: 50 % of 5120 Wh above its floor = 2560 Wh; small: 30 % of 1640 Wh = 492 Wh.
    const discharge = splitGroup(2200, [big(60, { setpointW: 1000 }), small(40, { setpointW: 500 })], 0, undefined, { rotateMarginPct: 0 });
    discharge.setpoints.should.eql([Math.round((2200 * 2560) / 3052), 2200 - Math.round((2200 * 2560) / 3052)]);
    // charge: big 40 % of 5120 = 2048 Wh of room, small 60 % of 1640 = 984 Wh.
    const charge = splitGroup(-3000, [big(60), small(40)], 0);
    charge.setpoints[1].should.be.approximately((-3000 * 984) / 3032, 1);
    charge.commandedW.should.equal(-3000);
  });

  it('never exceeds a unit’s limits: the rest goes to the others, what none can carry is unmet', () => {
    // In proportion the small one would take 1312 / 3872 of 2500 W = 847 W: capped at its 800 W.
    const capped = splitGroup(2500, [big(60, { setpointW: 1 }), small(90, { setpointW: 1 })], 0);
    capped.setpoints.should.eql([1700, 800]);
    const beyond = splitGroup(5000, [big(60), small(90)], 0);
    [beyond.setpoints, beyond.unmetW].should.eql([[2400, 800], 1800]);
    const charge = splitGroup(-5000, [big(60), small(10)], 0);
    [charge.setpoints, charge.unmetW].should.eql([[-2400, -1200], -1400]);
    const owner = splitGroup(1000, [big(60, { maxDischargeW: 600 }), small(20)], 0);
    owner.setpoints.should.eql([600, 400]);
  });

  it('gives a left-out unit 0 and its share to the others; a unit at its SOC limit rests', () => {
    const out = splitGroup(1500, [big(80, { leftOut: true, setpointW: 1000 }), small(40)], 0);
    [out.setpoints, out.reasons].should.eql([
      [0, 800],
      ['left out', 'active'],
    ]);
    out.unmetW.should.equal(700);
    // A left-out unit is not steered: still charging, it blocks no one from discharging.
    splitGroup(500, [big(80, { leftOut: true, setpointW: -800, deliveredW: -800 }), small(40)], 0).setpoints.should.eql([0, 500]);
    const empty = splitGroup(600, [big(10), small(40)], 0);
    [empty.setpoints, empty.reasons].should.eql([
      [0, 600],
      ['soc', 'active'],
    ]);
    splitGroup(-600, [big(100), small(100)], 0).reasons.should.eql(['soc', 'soc']);
  });

  it('stands by below the minimum power', () => {
    const split = splitGroup(-40, [big(50, { setpointW: -300 }), small(50)], 0);
    [split.setpoints, split.reasons, split.unmetW].should.eql([[0, 0], ['standby', 'standby'], -40]);
  });

  it('reverses two moving units through standby: the new way only once both have settled or read idle', () => {
    const units = [big(60, { settleMs: 4000 }), small(60, { settleMs: 2000 })];
    const next = loop(units);
    next(2500)
      .setpoints.every((s) => s > 0)
      .should.be.true();
    // The discharge was in force until this decision's standby: the settle times count from here.
    for (let i = 0; i < 2; i++) {
      const first = next(-2500);
      [first.setpoints, first.reasons].should.eql([
        [0, 0],
        ['reversal', 'reversal'],
      ]);
    }
    // 2 s on the small one has settled: the big one, the only one that may still discharge, reverses itself; the
    // small one waits for it.
    const second = next(-2500);
    [second.setpoints, second.reasons].should.eql([
      [-2400, 0],
      ['active', 'reversal'],
    ]);
    next(-2500).setpoints.should.eql([-2400, 0]);
    next(-2500)
      .setpoints.every((s) => s < 0)
      .should.be.true(); // 4 s after the big one's discharge
    // A reading that still shows the old way holds the reversal beyond the settle time.
    const held = splitGroup(-1000, [big(60, { deliveredW: 300 }), small(60)], 10000, { units: { big: { dischargeAt: 0 } } });
    held.setpoints.should.eql([-1000, 0]); // big may reverse itself; small waits for it
    held.reasons.should.eql(['active', 'reversal']);
  });

  it('with the power read, a unit that stopped frees the others after its response time, not its settle time', () => {
    const memory = { units: { big: { dischargeAt: 0 } } };
    const units = (read: boolean) => [
      big(80, { settleMs: 10000, responseMs: 2000, ...(read ? { deliveredW: 10 } : {}) }),
      small(40, read ? { deliveredW: 0 } : {}),
    ];
    // 1.5 s after the big one's last discharge a reading may not show it yet: it alone may charge.
    splitGroup(-500, units(true), 1500, memory).setpoints.should.eql([-500, 0]);
    // 3 s after, the reading shows it stopped: the emptiest (small) charges.
    splitGroup(-500, units(true), 3000, memory).setpoints.should.eql([0, -500]);
    // Not read: the settle time holds.
    splitGroup(-500, units(false), 3000, memory).setpoints.should.eql([-500, 0]);
    splitGroup(-500, units(false), 10000, memory).setpoints.should.eql([0, -500]);
  });

  it('a unit reversing itself frees the others as its reads’ trend crosses zero, not a read later', () => {
    // The small unit charged and reverses itself (+800); read −500 a second ago and −131 now, 2.5 s after.
    const memory = { units: { small: { chargeAt: 0 } } };
    const reads = { before: { watts: -500, at: 1500 }, last: { watts: -131, at: 2500 } };
    const headingW = heading(reads.before, reads.last, 800, 2500);
    // Half a second on (the shortest dead time), on the line through the two reads: past zero, short of the setpoint.
    headingW.should.be.approximately(-131 + 369 * 0.5, 1);
    heading(reads.before, reads.last, 800, 5000).should.equal(800);
    // No trend towards the setpoint, or reads too far apart: the last read.
    heading({ watts: 0, at: 1500 }, reads.last, 800, 2500).should.equal(-131);
    heading({ watts: -500, at: -2000 }, reads.last, 800, 2500).should.equal(-131);
    const units = (extra: Partial<GroupUnit>) => [big(80), small(40, { setpointW: 800, deliveredW: -131, responseMs: 2000, ...extra })];
    // Read still charging, no trend: the big unit waits.
    splitGroup(1500, units({}), 2500, memory).setpoints.should.eql([0, 800]);
    // Heading past zero when a command could act: the big one, the fullest, starts now.
    const freed = splitGroup(1500, units({ headingW }), 2500, memory);
    freed.setpoints[0].should.be.above(0);
    freed.setpoints.every((s) => s >= 0).should.be.true();
  });

  it('refuses bad settings and units with a message that names the field', () => {
    (() => splitGroup(100, [big(50)], 0, undefined, { leaveShare: 0.9 })).should.throw(/leaveShare must be in \(0, joinShare\)/);
    (() => splitGroup(100, [big(50)], 0, undefined, { joinShare: 1.5 })).should.throw(/joinShare/);
    (() => splitGroup(100, [big(50), big(60)], 0)).should.throw(/unit ids must differ: big twice/);
    (() => splitGroup(100, [big(150)], 0)).should.throw(/unit big: soc must be 0 to 100/);
    (() => splitGroup(100, [big(50, { maxChargeW: -1 })], 0)).should.throw(/unit big: maxChargeW must be a number >= 0/);
    (() => splitGroup(Number.NaN, [big(50)], 0)).should.throw(/totalW/);
  });
});

describe('group split in a shared house', function () {
  /** Two units with different dead times and lags; `decide` gives each unit's setpoint every second for 120 s. */
  function run(decide: (totalW: number, units: GroupUnit[], nowMs: number) => number[]) {
    const house = new SharedHouse({ timeScale: 0, house: { baseLoadW: 0 }, selfUseW: 0 });
    const sims = [
      new DeviceSimulator({ udpPort: null, workingMode: REAL_TIME.mode, sharedHouse: house, deadTimeS: 0.5, lagS: 0.5, initialSoc: 60 }),
      new DeviceSimulator({
        udpPort: null,
        workingMode: REAL_TIME.mode,
        sharedHouse: house,
        deadTimeS: 1.5,
        lagS: 3,
        initialSoc: 60,
        serialNumber: 'S2',
      }),
    ];
    const settle = [500 + 3 * 500, 1500 + 3 * 3000];
    let inForce = [0, 0];
    for (let t = 0; t < 120; t++) {
      const totalW = t % 30 < 15 ? 2200 : -2200; // a reversal every 15 s
      const units = sims.map((sim, i) =>
        big(sim.exactSoc, { id: `u${i}`, setpointW: inForce[i], deliveredW: sim.batteryPower, settleMs: settle[i] }),
      );
      inForce = decide(totalW, units, t * 1000);
      sims.forEach((sim, i) => setpoint(sim, inForce[i]));
      house.run(1);
    }
    return house;
  }

  it('passes no energy from one unit into the other through reversals, where a plain split does', () => {
    let memory: SplitMemory | undefined;
    const sequenced = run((total, units, now) => {
      const split = splitGroup(total, units, now, memory);
      memory = split.memory;
      return split.setpoints;
    });
    // The same totals split in proportion at once, each reversal straight through.
    const plain = run((total) => [Math.round(total / 2), Math.round(total / 2)]);
    const groupWh = (h: SharedHouse) => h.chargedWh + h.dischargedWh;
    plain.movedBetweenUnitsWh.should.be.above(0.5);
    sequenced.movedBetweenUnitsWh.should.be.below(0.001 * groupWh(sequenced));
    should(groupWh(sequenced)).be.above(0.5 * groupWh(plain)); // it still moved energy, not stood by
  });
});
