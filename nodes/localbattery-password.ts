/**
 * Set password node: on input, changes the device password (User.SetConfig) from the config node's
 * password to a new one taken from this node's credential or, if so configured, from msg.payload.
 * The shared client uses the new password at once; the config node still holds the old one, so the node
 * tells the user to update it. The new password never appears in a msg, log, status or error.
 */
import type { Node, NodeAPI, NodeDef, NodeMessageInFlow } from 'node-red';
import { ValidationError } from '../src/errors';
import { checkPassword, MAX_PASSWORD_BYTES } from '../src/device/password-crypto';
import { describeInputs, oneOf } from '../src/editor/inputs';
import { deviceOf, serveDevice, keepErrorCodes } from './shared';

interface PasswordDef extends NodeDef {
  device: string;
  /** 'field': the node's credential; 'payload': msg.payload. */
  source?: string;
}

interface PasswordCredentials {
  password?: string;
}

/** Where the new password comes from: the node's credential or msg.payload. */
const passwordInputs = describeInputs({
  source: { setting: 'source', fallback: 'field', parse: oneOf(['field', 'payload'] as const) },
});

export = function (RED: NodeAPI) {
  function PasswordNode(this: Node<PasswordCredentials>, config: PasswordDef) {
    RED.nodes.createNode(this, config);
    const node = this;
    keepErrorCodes(RED, node);
    const deployed = passwordInputs.deploy(config);
    if (deployed.error) {
      node.status({ fill: 'red', shape: 'ring', text: RED._('localbattery-password.status.invalid') });
      node.error(deployed.error.message);
    }
    // An unknown source strips msg.payload too: it may hold a password.
    const fromPayload = deployed.values.source !== 'field';
    const missing = RED._('localbattery-password.errors.noDevice');
    const device = deviceOf(RED, node, config.device, missing);
    // The new password leaves the message before anything can fail: a Catch node gets a copy of the msg.
    const take = (msg: NodeMessageInFlow): unknown => {
      const candidate: unknown = fromPayload ? msg.payload : node.credentials?.password;
      if (fromPayload) delete msg.payload;
      return candidate;
    };
    const life = serveDevice(
      node,
      device,
      missing,
      async (msg, client, candidate) => {
        if (deployed.error) throw deployed.error;
        const field = fromPayload ? 'new password (msg.payload)' : 'new password';
        if (candidate !== undefined && typeof candidate !== 'string') {
          throw new ValidationError(field, `(${typeof candidate})`, `a text of 1 to ${MAX_PASSWORD_BYTES} bytes`);
        }
        // Checked here as well as in the client, so the message names where the password came from.
        checkPassword(candidate, field);
        node.status({ fill: 'blue', shape: 'ring', text: RED._('localbattery-password.status.changing') });
        await client.changePassword(candidate);
        if (life.closed) return undefined;
        node.status({ fill: 'yellow', shape: 'dot', text: RED._('localbattery-password.status.changed') });
        node.warn(RED._('localbattery-password.warn.updateConfig', { device: device!.name || device!.id }));
        msg.payload = { result: true };
        return msg;
      },
      take,
    );
  }

  RED.nodes.registerType<Node<PasswordCredentials>, PasswordDef, unknown, PasswordCredentials>('localbattery-password', PasswordNode, {
    credentials: { password: { type: 'password' } },
  });
};
