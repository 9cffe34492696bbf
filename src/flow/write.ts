/**
 * What the write node does, without Node-RED: which point a message writes (the setting, or msg.point), the value
 * checked against the catalogue before anything is sent, and a refusal that names the point and value.
 */
import { modelsTakingText, resolveWritePoint, validateWrite, type WritePoint } from '../points/catalogue';
import { RefusedError, ValidationError } from '../errors';
import type { ClientSession, WriteResult } from '../device/client';
import { describeInputs } from '../editor/inputs';

const isBlank = (value: unknown) => value === undefined || value === null || value === '';

/** The write point: the node's setting, or msg.point where the message names one. */
const writeInputs = describeInputs({
  point: { setting: 'point', msg: 'point', absent: isBlank, parse: resolveWritePoint },
});

export class PointWriter {
  readonly configError: Error | undefined;
  private readonly deployed: ReturnType<typeof writeInputs.deploy>;

  /** `pointRequired`: the text for a message without a point where the node names none. */
  constructor(
    def: { point?: unknown },
    private readonly pointRequired: string,
  ) {
    this.deployed = writeInputs.deploy(def);
    this.configError = this.deployed.error;
  }

  /** The point `msg` writes, and whether the message named it. */
  pointFor(msg: { point?: unknown }): { point: WritePoint; fromMsg: boolean } {
    const { point } = writeInputs.forMessage(msg, this.deployed);
    if (!point) throw new ValidationError('msg.point', msg.point, this.pointRequired);
    return { point, fromMsg: !isBlank(msg.point) };
  }

  /**
   * Checks `value` for `point` with the device's limits, then writes it unless `writing` (called just before) says
   * no; a refusal names the point and value, with `realTimeHint` for a point that needs real-time control, or the
   * model classes that take the point where not every class does.
   */
  async write(
    session: ClientSession,
    point: WritePoint,
    value: unknown,
    writing: () => boolean,
    realTimeHint: string,
  ): Promise<{ result: WriteResult; values: number[] } | undefined> {
    const values = validateWrite(point, value, session.limits);
    if (!writing()) return undefined;
    try {
      return { result: await session.write(point, values), values };
    } catch (error) {
      if (!(error instanceof RefusedError)) throw error;
      // The client's text names the address only: say which point and value the device refused.
      throw new RefusedError(
        `the write of ${point.name} (address ${point.address}) = ${JSON.stringify(values.length > 1 ? values : values[0])}`,
        point.realTimeOnly ? realTimeHint : (modelsTakingText(point) ?? ''),
        point.address,
        values,
      );
    }
  }
}

/** A written value as the status shows it: its enum label, or the number with its unit; a list as JSON. */
export function describeWritten(point: WritePoint, values: number[]): string {
  if (values.length > 1) return JSON.stringify(values);
  const label = point.enum?.find((o) => o.value === values[0])?.label;
  return label ?? `${values[0]}${point.unit ? ' ' + point.unit : ''}`;
}
