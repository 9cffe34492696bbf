/**
 * Write point: one SetData request per message. The value (a constant or taken from msg, context, env or
 * JSONata) is checked against the catalogue before anything is sent; nothing invalid reaches the device.
 */
import type { Node, NodeAPI, NodeDef, NodeMessageInFlow } from 'node-red';
import { resolveWritePoint, validateWrite, type WritePoint } from '../src/points/catalogue';
import { RefusedError, ValidationError } from '../src/errors';
import type { ClientSession } from '../src/device/client';
import { describeInputs } from '../src/editor/inputs';
import { deviceOf, serveDevice, timeOfDay, keepErrorCodes } from './shared';

interface WriteDef extends NodeDef {
  device: string;
  /** Write point name; empty: msg.point names it. */
  point: string;
  value: string;
  /** A TypedInput type, or 'enum' for a value picked from the point's enum drop-down. */
  valueType: string;
}

interface WriteMessage extends NodeMessageInFlow {
  point?: unknown;
  address?: number;
  value?: number | number[];
}

const isBlank = (value: unknown) => value === undefined || value === null || value === '';

/** The write point: the node's setting, or msg.point where the message names one. */
const writeInputs = describeInputs({
  point: { setting: 'point', msg: 'point', absent: isBlank, parse: resolveWritePoint },
});

export = function (RED: NodeAPI) {
  function WriteNode(this: Node, def: WriteDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    keepErrorCodes(RED, node);
    const missing = RED._('localbattery-write.errors.noDevice');
    const device = deviceOf(RED, node, def.device, missing);

    const deployed = writeInputs.deploy(def);
    if (deployed.error) {
      node.status({ fill: 'red', shape: 'ring', text: RED._('localbattery-write.status.invalidPoint') });
      node.error(deployed.error.message);
    }

    function pointFor(msg: WriteMessage): { point: WritePoint; fromMsg: boolean } {
      const { point } = writeInputs.forMessage(msg, deployed);
      if (!point) throw new ValidationError('msg.point', msg.point, RED._('localbattery-write.errors.pointRequired'));
      return { point, fromMsg: !isBlank(msg.point) };
    }

    function valueFor(msg: WriteMessage): Promise<unknown> {
      // 'enum' is the editor's drop-down: the stored value is the enum code itself.
      if (def.valueType === 'enum') return Promise.resolve(def.value);
      return new Promise((resolve, reject) => {
        RED.util.evaluateNodeProperty(def.value, def.valueType || 'msg', node, msg, (error, result) =>
          error ? reject(error) : resolve(result),
        );
      });
    }

    function describe(point: WritePoint, values: number[]): string {
      if (values.length > 1) return JSON.stringify(values);
      const label = point.enum?.find((o) => o.value === values[0])?.label;
      return label ?? `${values[0]}${point.unit ? ' ' + point.unit : ''}`;
    }

    async function handle(msg: WriteMessage, client: ClientSession): Promise<WriteMessage | undefined> {
      const { point, fromMsg } = pointFor(msg);
      const values = validateWrite(point, await valueFor(msg), client.limits);
      if (life.closed) return undefined;
      node.status({ fill: 'blue', shape: 'ring', text: RED._('localbattery-write.status.writing') });
      let result;
      try {
        result = await client.write(point, values);
      } catch (error) {
        if (!(error instanceof RefusedError)) throw error;
        // The client's text names the address only: say which point and value the device refused.
        const hint = point.realTimeOnly ? RED._('localbattery-write.errors.realTimeOnly') : '';
        throw new RefusedError(
          `the write of ${point.name} (address ${point.address}) = ${JSON.stringify(values.length > 1 ? values : values[0])}`,
          hint,
          point.address,
          values,
        );
      }
      if (life.closed) return undefined;
      if (result.status === 'superseded') {
        node.status({ fill: 'yellow', shape: 'ring', text: RED._('localbattery-write.status.superseded') });
        return undefined;
      }
      const shown = describe(point, values);
      const time = timeOfDay();
      node.status({
        fill: 'green',
        shape: 'dot',
        text: fromMsg
          ? RED._('localbattery-write.status.writtenPoint', { point: point.name, value: shown, time })
          : RED._('localbattery-write.status.written', { value: shown, time }),
      });
      msg.payload = { result: true };
      msg.point = point.name;
      msg.address = point.address;
      msg.value = values.length > 1 ? values : values[0];
      return msg;
    }

    const life = serveDevice(node, device, missing, handle);
  }

  RED.nodes.registerType('localbattery-write', WriteNode);
};
