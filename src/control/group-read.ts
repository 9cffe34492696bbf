/**
 * What a group's units say together (issue 25): one reading of them all, whether they hold their commands, their power
 * now by their own models, and which are in the split. Each unit takes its own part (SteeredUnit.took(), failed());
 * the sums count the units steered only: a unit out is not steered, its power counts as load, as the meter sees it.
 */
import type { PlantReading, ReadOptions } from './device-plant';
import type { SteeredUnit } from './group-unit';

/** Every unit's battery power and SOC (the meter from the first unit's); the sum of the units that are steered. */
export async function readUnits(
  units: readonly SteeredUnit[],
  withMeter: boolean,
  options: ReadOptions,
  now: () => number,
): Promise<PlantReading> {
  let started = false;
  // When each unit's request left: its power was taken then, not when the answer came (a read may wait its turn).
  const left = units.map(() => undefined as number | undefined);
  const results = await Promise.all(
    units.map((u, i) =>
      u
        .read(withMeter && i === 0, {
          signal: options.signal,
          onStart: () => {
            left[i] = now();
            if (!started) options.onStart?.();
            started = true;
          },
        })
        .then(
          (reading) => ({ reading }),
          (error: unknown) => ({ error }),
        ),
    ),
  );
  // Withdrawn while it waited (a write needed the slots): no unit failed.
  if (options.signal?.aborted) throw options.signal.reason;
  const at = now();
  let battery: number | undefined = 0;
  let socWh = 0;
  let capacityWh = 0;
  results.forEach((result, i) => {
    const u = units[i]!;
    if ('error' in result) u.failed(result.error);
    else u.took(result.reading, left[i] ?? at);
    if (u.isOut(at)) return;
    // A steered unit not read: the group's power is not known.
    if (battery !== undefined)
      battery = 'error' in result || result.reading.battery === undefined ? undefined : battery + result.reading.battery;
    if (u.soc !== undefined) {
      socWh += u.soc * u.capacityWh;
      capacityWh += u.capacityWh;
    }
  });
  if (results.every((r) => 'error' in r)) throw (results[0] as { error: unknown }).error;
  const steered = units.filter((u) => !u.isOut(at));
  const floors = steered.map((u) => u.dischargeSoc).filter((floor) => floor !== undefined);
  const leashes = steered.map((u) => u.leashWh);
  const first = results[0]!;
  return {
    battery,
    soc: capacityWh > 0 ? socWh / capacityWh : undefined,
    meter: 'reading' in first ? first.reading.meter : undefined,
    // The regulator discharges while any unit may (each stops at its own floor by the split).
    dischargeSoc: floors.length > 0 ? Math.min(...floors) : undefined,
    leashWh: leashes.every((wh) => wh !== undefined) ? leashes.reduce((sum, wh) => sum + wh, 0) : undefined,
  };
}

/** Whether every unit steered still holds its command (see BatteryPlant); false where one dropped it. */
export async function holdCommands(units: readonly SteeredUnit[], now: number): Promise<boolean | undefined> {
  const holds = await Promise.all(
    units.filter((u) => !u.isOut(now)).map((u) => (u.plant.holdsCommand?.() ?? Promise.resolve(undefined)).catch(() => undefined)),
  );
  return holds.includes(false) ? false : holds.every((held) => held === true) ? true : undefined;
}

/** The units steered's power at `at` (ms), each by its own model; undefined while one has not been read lately. */
export function estimateUnits(units: readonly SteeredUnit[], at: number): number | undefined {
  let sum = 0;
  for (const u of units) {
    if (u.isOut(at)) continue;
    const power = u.model.estimate(at);
    if (power === undefined) return undefined;
    sum += power;
  }
  return sum;
}

/** The units in the split now (not out), by id. */
export function steeredIds(units: readonly SteeredUnit[], now: number): string {
  return units
    .filter((u) => !u.isOut(now))
    .map((u) => u.id)
    .join(' ');
}

/** Every unit's grid charging; a unit that refuses it is reported, the others go on. False where a unit has none. */
export async function gridChargingUnits(
  units: readonly SteeredUnit[],
  on: boolean,
  failure?: (id: string, error: unknown) => void,
): Promise<boolean> {
  const results = await Promise.allSettled(units.map((u) => u.plant.gridCharging(on)));
  results.forEach((r, i) => {
    if (r.status === 'rejected') failure?.(units[i]!.id, r.reason);
  });
  return results.every((r) => r.status === 'rejected' || r.value);
}

/**
 * Another writer's changes to the units after `since`: when the newest came, whether one handed a unit back, and
 * whether every change was the unit's own setpoint (`own`); each unit acknowledges the setpoint it has now.
 */
export function unitsWrote(
  units: readonly SteeredUnit[],
  since: number,
): { at: number; handedBack: true } | { at: number; handedBack: false; own: boolean } | undefined {
  const changes = units.map((u) => u.plant.othersWrote(since));
  const at = Math.max(...changes.map((c) => c?.at ?? -Infinity));
  if (at === -Infinity) return undefined;
  if (changes.some((c) => c?.handedBack)) return { at, handedBack: true };
  const own = changes.every((c, i) => c?.watts === undefined || c.watts === units[i]!.setpointW);
  changes.forEach((c, i) => {
    if (c?.watts !== undefined) units[i]!.acknowledged(c.watts, c.at, c.at);
  });
  return { at, handedBack: false, own };
}
