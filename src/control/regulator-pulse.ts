/**
 * The overdrive (a pulse), as pure decisions on a snapshot (regulator-bounds.ts): whether a move starts with one and
 * how far, and each follow-up until it ends on its value. No state, no I/O: the pulse in force is the sent room's
 * (src/control/regulator-sent.ts), which records what these return.
 *
 * A lag of 1.5 s needs 5.5 s to bring a 2 kW step within 50 W. Once the readings have shown the lag, a large move
 * starts with a setpoint beyond its value, sized so that the battery reaches the value one request later, when the
 * value itself follows at once. Each consistent model gives its own pulse; the one that goes least far is sent, so no
 * plant the readings allow overshoots. A pulse goes past its value by at most the move itself, each follow-up at most
 * as far as the one before, and never below the grid-charging floor.
 */
import { response } from './plant-family';
import { pulseSetpoint } from './pulse';
import { limit, type Snapshot } from './regulator-bounds';
import type { Decision, DecisionReason } from './regulator-types';

/** A move smaller than this (W) or this many dead bands is a plain step, not worth a pulse. */
const MIN_PULSE_W = 150;
const PULSE_DEAD_BANDS = 4;

/** An overdrive under way towards `final`, `direction` +1 (up) or -1; at most `bound` W past it and never below `floor`. */
export type Pulse = { final: number; direction: number; bound: number; floor: number; failed?: boolean };

/** The smallest move (W) worth a pulse. */
export function pulseMinW(deadBand: number): number {
  return Math.max(MIN_PULSE_W, PULSE_DEAD_BANDS * deadBand);
}

/**
 * The setpoint to hold from `startAt` for `slotMs` so that the battery reaches `final` then, under every plant the
 * readings allow: each model's own answer, and of them the one that moves least beyond `final`. So no such plant
 * overshoots; the others get there later, as they would without the pulse. `reached`: under some plant the battery is
 * at `final` already when the setpoint would act. `power`: the battery then, under the plant that decided.
 */
function pulseStep(s: Snapshot, final: number, direction: number, startAt: number, slotMs: number) {
  const { history, base, models } = s.plant;
  const last = history.at(-1);
  const answerMs = last ? last.ackAt - last.startAt : 0;
  let best: { value: number; power: number } | undefined;
  let reached = false;
  for (const model of models) {
    const actsAt = startAt + model.delayMs + (model.from === 'ackAt' ? answerMs : 0);
    const power = response(model, history, base, actsAt);
    if ((final - power) * direction <= 0) reached = true;
    const value = pulseSetpoint(power, final, slotMs, model.lagMs);
    if (!best || (value - best.value) * direction < 0) best = { value, power };
  }
  return { ...(best ?? { value: final, power: final }), reached };
}

/** A pulse's value within its bounds: at most `bound` W past its final value, and never below the grid-charging floor. */
function bounded(value: number, pulse: Pulse): number {
  const within = (value - pulse.final) * pulse.direction > pulse.bound ? pulse.final + pulse.direction * pulse.bound : value;
  return Math.max(within, pulse.floor);
}

/**
 * A move to `next` of a battery that lags: a setpoint beyond it, so that the battery gets there by the time the
 * following setpoint can act (one slot later), and the pulse that starts with it; undefined for a small move or where
 * a pulse would gain little. The pulse goes past `next` by at most the move itself (the battery's distance from
 * `next`): at most twice the step.
 */
export function overdrive(s: Snapshot, next: number, floor: number): { value: number; pulse: Pulse } | undefined {
  const { now, deadBand } = s;
  // Just after a unit left, the plant pulses each unit by its own lag (see the facade's unitLeft()).
  if (now < s.pulsesUntil) return undefined;
  const [low, high] = s.batteryAt(now);
  const direction = Math.sign(next - (low + high) / 2);
  const distance = Math.min(Math.abs(next - low), Math.abs(next - high));
  if (distance < pulseMinW(deadBand)) return undefined;
  const step = pulseStep(s, next, direction, now, s.slotMs);
  const pulse = { final: next, direction, bound: distance, floor };
  const value = limit(bounded(step.value, pulse), s.settings, s.soc).value;
  if (step.reached || (value - next) * direction <= deadBand) return undefined;
  // Each follow-up goes at most as far past the value as the setpoint before it: the pulse only shrinks (a zig-zag
  // of follow-ups, as the models' answers differ from slot to slot, would be reversals).
  pulse.bound = (value - next) * direction;
  return { value, pulse };
}

/** A pulse's next setpoint: `ends` on its value (the pulse is over), else `bound` is how far past it this one goes. */
export type FollowUp = { value: number; reason: DecisionReason; ends: boolean; bound: number; power: number };

/**
 * While `pulse` is under way and nothing is in flight: the next setpoint, to be sent at once; undefined when none is
 * due (held at a limit: the clock looks again), 'no history' when the pulse has nothing to run on and ends.
 */
export function decideFollowUp(s: Snapshot, pulse: Readonly<Pulse>): FollowUp | 'no history' | undefined {
  const last = s.plant.history.at(-1);
  if (!last) return 'no history';
  const slot = s.slotMs;
  const step = pulseStep(s, pulse.final, pulse.direction, Math.max(s.now, last.startAt + slot), slot);
  let { value, reason = 'overdrive' } = limit(bounded(step.value, pulse), s.settings, s.soc);
  // Held at a limit: nothing to send now; tick() looks again as time passes.
  if (value === s.acknowledged && !pulse.failed && !step.reached) return undefined;
  const bound = (value - pulse.final) * pulse.direction;
  // Close enough, or some plant the readings allow is there already: the pulse ends on its value.
  if (pulse.failed || step.reached || bound <= s.deadBand) {
    ({ value, reason = 'load' } = limit(pulse.final, s.settings, s.soc));
    return { value, reason, ends: true, bound, power: step.power };
  }
  return { value, reason, ends: false, bound, power: step.power };
}

/** The decision that sends `next`, with the setpoint stood behind and the dead band in force once it is recorded. */
export function followUpDecision(next: FollowUp, steady: number | undefined, soc: number | undefined, deadBand: number): Decision {
  return {
    action: 'set',
    setpoint: next.value,
    steady,
    grid: undefined,
    battery: Math.round(next.power),
    soc,
    reason: next.reason,
    deadBand: Math.round(deadBand),
  };
}
