/** The generated houses and plants of the unseen bench (issue 36): deterministic, split once, of the promised shapes. */
import 'should';
import {
  CONDITIONS,
  HELD_OUT_SEEDS,
  TUNING_SEEDS,
  generateCase,
  generateHouse,
  type GeneratedHouse,
} from '../src/simulator/house-generator';
import { House, MeterFeed, type HouseEvent } from '../src/simulator';

const WINDOW_S = 60;
// Tests use the tuning seeds only: the held-out seeds are for the bench that judges.
const SEEDS = TUNING_SEEDS.slice(0, 60);
const houses = SEEDS.map((seed) => generateHouse(seed, WINDOW_S, 2400));
const quiet = (house: GeneratedHouse): House => new House({ ...house.scenario, noiseW: 0 });
/** The events of that name starting inside the window, with their house. */
const starts = (name: string): { house: GeneratedHouse; event: HouseEvent }[] =>
  houses.flatMap((house) => house.scenario.events!.filter((e) => e.name === name && e.atS > 0).map((event) => ({ house, event })));
/** The moments the house changes in (from, to). */
const changesIn = (house: GeneratedHouse, from: number, to: number): number[] =>
  quiet(house)
    .changes(WINDOW_S * 2)
    .filter((t) => t > from && t < to);
/** True when nothing else in the house changes within 0.2 s of `t`. */
const alone = (house: GeneratedHouse, t: number): boolean => changesIn(house, t - 0.2, t + 0.2).length === 1;

describe('house generator (unseen houses)', function () {
  it('gives the same house for the same seed, another for another seed', () => {
    for (const seed of SEEDS.slice(0, 10)) {
      const [a, b] = [new House(generateHouse(seed, WINDOW_S).scenario), new House(generateHouse(seed, WINDOW_S).scenario)];
      const other = new House(generateHouse(seed + 1, WINDOW_S).scenario);
      const times = Array.from({ length: 120 }, (_, i) => i / 2);
      times.map((t) => [a.load(t), a.pv(t)]).should.eql(times.map((t) => [b.load(t), b.pv(t)]));
      times.map((t) => a.load(t)).should.not.eql(times.map((t) => other.load(t)));
    }
  });

  it('splits the seeds once: tuning and held-out are disjoint, none twice', () => {
    const tuning = new Set(TUNING_SEEDS);
    tuning.size.should.equal(TUNING_SEEDS.length);
    new Set(HELD_OUT_SEEDS).size.should.equal(HELD_OUT_SEEDS.length);
    HELD_OUT_SEEDS.filter((seed) => tuning.has(seed)).should.eql([]);
  });

  it('switches a kettle on as one step of 2-3 kW', () => {
    const kettles = starts('kettle').filter(({ house, event }) => alone(house, event.atS));
    kettles.length.should.be.above(3);
    for (const { house, event } of kettles) {
      const load = quiet(house);
      // Over 2 ms: a heat pump ramping meanwhile adds under 1 W.
      const step = load.load(event.atS + 0.001) - load.load(event.atS - 0.001);
      step.should.be.within(2000, 3000);
      step.should.be.approximately(event.loadW!, 1);
    }
  });

  it('cycles an oven or a hob on and off under its thermostat, 1-3 kW', () => {
    const cycling = [...starts('oven'), ...starts('hob')].filter(({ event }) => event.atS + event.everyS! < WINDOW_S - 0.5);
    cycling.length.should.be.above(3);
    for (const { event } of cycling) {
      const own = new House({ baseLoadW: 0, events: [event] });
      const load = Array.from({ length: WINDOW_S * 10 }, (_, i) => own.load(i / 10));
      load.filter((w, i) => i > 0 && w > 0 && load[i - 1] === 0).length.should.be.above(1);
      Math.max(...load).should.be.within(1000, 3000);
    }
  });

  it('heats a washing machine or dishwasher at ~2 kW for 10-20 minutes over its motor', () => {
    const heating = [...starts('washing machine heating'), ...starts('dishwasher heating')].filter(({ house, event }) =>
      alone(house, event.atS),
    );
    heating.length.should.be.above(3);
    for (const { house, event } of heating) {
      const load = quiet(house);
      (load.load(event.atS + 0.05) - load.load(event.atS - 0.05)).should.be.within(1800, 2200);
      event.durationS!.should.be.within(600, 1200);
      house.scenario.events!.some((e) => e.name!.endsWith('motor') && e.name!.startsWith(event.name!.split(' ')[0])).should.be.true();
    }
  });

  it("ramps a heat pump's compressor up over seconds, 0.5-2 kW", () => {
    // Nothing else changes while it ramps: its start and the ramp's end are the only changes.
    const pumps = starts('heat pump').filter(
      ({ house, event }) => changesIn(house, event.atS - 0.2, event.atS + event.loadRampS! + 0.2).length === 2,
    );
    pumps.length.should.be.above(2);
    for (const { house, event } of pumps) {
      const load = quiet(house);
      const before = load.load(event.atS - 0.05);
      const half = load.load(event.atS + event.loadRampS! / 2) - before;
      const full = load.load(event.atS + event.loadRampS!) - before;
      full.should.be.within(500, 2000);
      half.should.be.approximately(full / 2, 1);
      event.loadRampS!.should.be.within(5, 40);
    }
  });

  it('passes clouds of 20-95 % over the PV, 5-60 s long, their edges 0.5-15 s', () => {
    const clouds = starts('cloud').filter(({ house, event }) =>
      house.scenario
        .events!.filter((e) => e.cloud && e !== event)
        .every((e) => e.atS > event.atS + event.durationS! || e.atS + e.durationS! < event.atS),
    );
    clouds.length.should.be.above(10);
    for (const { house, event } of clouds) {
      const pv = new House(house.scenario);
      const share = (t: number) => pv.pv(t) / house.scenario.pvW!;
      (1 - share(event.atS + event.durationS! / 2)).should.be.within(0.2, 0.95);
      event.durationS!.should.be.within(5, 60);
      // The edge: the PV falls until rampS after the cloud came, and no longer.
      const ramp = event.rampS!;
      ramp.should.be.within(0.5, 15);
      share(event.atS + ramp / 2).should.be.above(share(event.atS + ramp));
      share(event.atS + ramp).should.be.approximately(share(event.atS + ramp + 0.5 * (event.durationS! / 2 - ramp)), 1e-9);
    }
  });

  it('keeps a house within the reach asked, and adds noise to the base load', () => {
    for (const house of houses) {
      const load = quiet(house);
      for (let t = 0; t <= WINDOW_S; t += 0.5) Math.abs(load.load(t) - load.pv(t)).should.not.be.above(2400);
      const noisy = new House(house.scenario);
      const noise = Array.from({ length: 20 }, (_, i) => noisy.load(i + 0.5) - load.load(i + 0.5));
      Math.max(...noise.map(Math.abs)).should.not.be.above(house.scenario.noiseW!);
      new Set(noise).size.should.be.above(1);
    }
  });

  it('draws batteries and meters within the field ranges, per condition', () => {
    for (const condition of Object.keys(CONDITIONS))
      for (const seed of SEEDS.slice(0, 20)) {
        const { plant } = generateCase(condition, seed, WINDOW_S);
        plant.deadTimeS.should.be.within(0.5, 2);
        plant.lagS.should.be.within(0.5, 5);
        if (!plant.feed) plant.meterRefreshS!.should.equal(3);
        else if (plant.feed.gapsS) plant.feed.gapsS[1].should.be.within(4, 8);
        else {
          plant.feed.everyS!.should.be.within(1, 3);
          (plant.feed.lateS ?? 0).should.be.within(0, 2);
          plant.meterIntervalS.should.not.be.below(plant.feed.everyS!);
        }
        plant.meterTimeoutS.should.not.be.below(2 * plant.meterIntervalS);
      }
  });

  it("puts ±noiseW on an outside meter's readings", () => {
    const feed = new MeterFeed({ everyS: 1, seed: 5, noiseW: 50 });
    for (let t = 0; t < 100; t++) feed.step(t, 400, 0);
    const errors = feed.take(100).map((r) => r.grid - r.trueGrid);
    errors.length.should.equal(100);
    Math.max(...errors.map(Math.abs)).should.be.within(40, 50.5);
    (errors.reduce((sum, e) => sum + e, 0) / errors.length).should.be.within(-15, 15);
  });
});
