/**
 * What the device configuration node does for the flow nodes of its device, without Node-RED: one session per user
 * on the configuration's client, the connection state passed on to every user, and a close that lets each user's
 * last work (a hand-back on closing) settle before the client goes.
 */
import type { ClientSession, ConnectionState, DeviceClient } from '../device/client';

export class DeviceUsers<User> {
  /** Each user's session, closed when the user closes or the configuration does. */
  private readonly sessions = new Map<User, ClientSession>();
  /** Users' last work on closing: the client stays until it has settled. */
  private readonly farewells = new Set<Promise<void>>();

  constructor(
    private client: DeviceClient | undefined,
    private readonly show: (user: User, state: ConnectionState) => void,
  ) {
    client?.on('state', (state: ConnectionState) => {
      for (const user of this.sessions.keys()) show(user, state);
    });
  }

  /**
   * A session for `user`, replacing its earlier one, or undefined without a client. A state already known to be bad
   * is shown to the user at once.
   */
  open(user: User): ClientSession | undefined {
    const client = this.client;
    if (!client) return undefined;
    this.sessions.get(user)?.close();
    const session = client.session();
    this.sessions.set(user, session);
    if (client.state !== 'unknown' && client.state !== 'ok') this.show(user, client.state);
    return session;
  }

  /** Closes the session of `user`; with `after`, once that work has settled, and close() waits for it. */
  leave(user: User, after?: Promise<unknown>): void {
    const session = this.sessions.get(user);
    this.sessions.delete(user);
    if (!after) {
      session?.close();
      return;
    }
    const farewell: Promise<void> = after
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        session?.close();
        this.farewells.delete(farewell);
      });
    this.farewells.add(farewell);
  }

  /** Drops every user's waiting work at once, then closes the client after the users' farewells; never rejects. */
  close(): Promise<void> {
    for (const session of this.sessions.values()) session.close();
    this.sessions.clear();
    return Promise.all(this.farewells).then(() => {
      this.client?.close();
      this.client = undefined;
    });
  }
}
