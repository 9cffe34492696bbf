/**
 * Device info node: on input, Sys.GetConfig; `msg.payload` = the device object, plus the clock, the
 * runtime and the MAC address in handier forms (date, utcOffset, localTime, uptime, macAddress), and `serial`:
 * an identifier that is never empty where the device has one anywhere (`sn`, else point 0, else the MAC). What it
 * makes of the answer is src/flow/info.ts.
 */
import type { Node, NodeAPI, NodeDef } from 'node-red';
import { addSerial, describeInfo } from '../src/flow/info';
import { deviceOf, serveDevice, keepErrorCodes } from './shared';

interface InfoDef extends NodeDef {
  device: string;
}

function register(RED: NodeAPI) {
  function InfoNode(this: Node, config: InfoDef) {
    RED.nodes.createNode(this, config);
    const node = this;
    keepErrorCodes(RED, node);
    const missing = RED._('localbattery-info.errors.noDevice');
    const device = deviceOf(RED, node, config.device, missing);
    const life = serveDevice(node, device, missing, async (msg, client) => {
      node.status({ fill: 'blue', shape: 'ring', text: RED._('localbattery-info.status.requesting') });
      const info = await client.getDeviceInfo();
      if (life.closed) return undefined;
      const text = [info.type, info.fw].filter((part) => typeof part === 'string' && part !== '').join(' · ');
      node.status({ fill: 'green', shape: 'dot', text: text || RED._('localbattery-info.status.ok') });
      const payload = describeInfo(info);
      await addSerial(payload, client);
      if (life.closed) return undefined;
      msg.payload = payload;
      return msg;
    });
  }

  RED.nodes.registerType('localbattery-info', InfoNode);
}

// describeInfo rides along for unit tests of the odd shapes the simulator never sends.
export = Object.assign(register, { describeInfo });
