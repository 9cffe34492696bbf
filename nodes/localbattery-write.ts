/**
 * Write point: one SetData request per message. The value (a constant or taken from msg, context, env or
 * JSONata) is checked against the catalogue before anything is sent; nothing invalid reaches the device. What a
 * write decides is src/flow/write.ts.
 */
import type { Node, NodeAPI, NodeDef, NodeMessageInFlow } from 'node-red';
import type { ClientSession } from '../src/device/client';
import { PointWriter, describeWritten } from '../src/flow/write';
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

/** The value to write: the node's constant, or what its TypedInput takes from msg, context, env or JSONata. */
function valueFor(RED: NodeAPI, node: Node, def: WriteDef, msg: WriteMessage): Promise<unknown> {
  // 'enum' is the editor's drop-down: the stored value is the enum code itself.
  if (def.valueType === 'enum') return Promise.resolve(def.value);
  return new Promise((resolve, reject) => {
    RED.util.evaluateNodeProperty(def.value, def.valueType || 'msg', node, msg, (error, result) =>
      error ? reject(error) : resolve(result),
    );
  });
}

export = function (RED: NodeAPI) {
  function WriteNode(this: Node, def: WriteDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    keepErrorCodes(RED, node);
    const missing = RED._('localbattery-write.errors.noDevice');
    const device = deviceOf(RED, node, def.device, missing);

    const writer = new PointWriter(def, RED._('localbattery-write.errors.pointRequired'));
    if (writer.configError) {
      node.status({ fill: 'red', shape: 'ring', text: RED._('localbattery-write.status.invalidPoint') });
      node.error(writer.configError.message);
    }

    async function handle(msg: WriteMessage, client: ClientSession): Promise<WriteMessage | undefined> {
      const { point, fromMsg } = writer.pointFor(msg);
      const writing = () => {
        if (life.closed) return false;
        node.status({ fill: 'blue', shape: 'ring', text: RED._('localbattery-write.status.writing') });
        return true;
      };
      const done = await writer.write(
        client,
        point,
        await valueFor(RED, node, def, msg),
        writing,
        RED._('localbattery-write.errors.realTimeOnly'),
      );
      if (!done || life.closed) return undefined;
      const { result, values } = done;
      if (result.status === 'superseded') {
        node.status({ fill: 'yellow', shape: 'ring', text: RED._('localbattery-write.status.superseded') });
        return undefined;
      }
      const shown = describeWritten(point, values);
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
