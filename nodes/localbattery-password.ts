/**
 * Set password node: on input, changes the device password (User.SetConfig) from the config node's
 * password to a new one taken from this node's credential or, if so configured, from msg.payload.
 * The shared client uses the new password at once; the config node still holds the old one, so the node
 * tells the user to update it. The new password never appears in a msg, log, status or error. Where it comes from
 * and its check are src/flow/password.ts.
 */
import type { Node, NodeAPI, NodeDef, NodeMessageInFlow } from 'node-red';
import { PasswordSource } from '../src/flow/password';
import { deviceOf, serveDevice, keepErrorCodes } from './shared';

interface PasswordDef extends NodeDef {
  device: string;
  /** 'field': the node's credential; 'payload': msg.payload. */
  source?: string;
}

interface PasswordCredentials {
  password?: string;
}

export = function (RED: NodeAPI) {
  function PasswordNode(this: Node<PasswordCredentials>, config: PasswordDef) {
    RED.nodes.createNode(this, config);
    const node = this;
    keepErrorCodes(RED, node);
    const source = new PasswordSource(config);
    if (source.configError) {
      node.status({ fill: 'red', shape: 'ring', text: RED._('localbattery-password.status.invalid') });
      node.error(source.configError.message);
    }
    const missing = RED._('localbattery-password.errors.noDevice');
    const device = deviceOf(RED, node, config.device, missing);
    const life = serveDevice(
      node,
      device,
      missing,
      async (msg, client, candidate) => {
        const password = source.check(candidate);
        node.status({ fill: 'blue', shape: 'ring', text: RED._('localbattery-password.status.changing') });
        await client.changePassword(password);
        if (life.closed) return undefined;
        node.status({ fill: 'yellow', shape: 'dot', text: RED._('localbattery-password.status.changed') });
        node.warn(RED._('localbattery-password.warn.updateConfig', { device: device!.name || device!.id }));
        msg.payload = { result: true };
        return msg;
      },
      // The new password leaves the message before anything can fail: a Catch node gets a copy of the msg.
      (msg: NodeMessageInFlow) => source.take(msg, node.credentials?.password),
    );
  }

  RED.nodes.registerType<Node<PasswordCredentials>, PasswordDef, unknown, PasswordCredentials>('localbattery-password', PasswordNode, {
    credentials: { password: { type: 'password' } },
  });
};
