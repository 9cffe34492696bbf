/**
 * The pulse rule, one place for the regulator and the group plant: a battery that follows its setpoint with a
 * first-order lag reaches a new value sooner when it is first sent past it for one slot (from one request to the
 * next), so that it arrives when the next request sets the value itself. No I/O, no state; time in ms.
 */

/**
 * The setpoint to hold for `slotMs` so that a battery at `power` (W, as it will be when the setpoint acts) under a lag
 * of `lagMs` reaches `final` at the slot's end: the lag keeps exp(-slot/lag) of the distance, so the distance is
 * enlarged by 1 / (1 - that). The caller bounds it (limits, how far past `final`).
 */
export function pulseSetpoint(power: number, final: number, slotMs: number, lagMs: number): number {
  return power + (final - power) / (1 - Math.exp(-slotMs / lagMs));
}

/**
 * The regulator's slot before it has seen one: added to the device's request interval for the gap from one setpoint's
 * request to the next one's (ms).
 */
export const UNSEEN_SLOT_MARGIN_MS = 200;

/**
 * A group's hand-over pulse lasts the slowest unit's interval and this (ms): about the queue's own margin (10 ms and
 * the spread of its connects). The share follows by this timer, so the pulse lasts as long as it was sized for; with
 * 200 ms the unit left after a switch-off reached its share 0.2 s after the reading that could show it.
 */
export const HAND_OVER_SLOT_MARGIN_MS = 50;
