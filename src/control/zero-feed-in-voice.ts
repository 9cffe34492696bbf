/**
 * What the zero feed-in controller (src/control/zero-feed-in.ts) tells its host, the node, in one place.
 *
 * Holds: the warnings said so far. Written by: every room of the controller as it finds something to say. Read by:
 * nobody else. Invariants: each kind of warning reaches the host at most once per controller; decisions and failures
 * stop at the close (the node's status and messages are its own then).
 */
import type { Decision } from './regulator';
import type { MeterFault } from './meter-check';
import type { ZeroFeedInHost } from './zero-feed-in-config';

/** The warnings said once each (see ZeroFeedInHost.warning). */
export type ControllerWarning = Parameters<NonNullable<ZeroFeedInHost['warning']>>[0];

export class ControllerVoice {
  private readonly said = new Set<ControllerWarning | 'implausibleBattery'>();

  constructor(
    private readonly host: ZeroFeedInHost,
    private readonly closed: () => boolean,
  ) {}

  decision(decision: Decision): void {
    if (!this.closed()) this.host.decision(decision);
  }

  failure(error: unknown): void {
    if (!this.closed()) this.host.failure(error);
  }

  /** Something worth a new status. */
  changed(): void {
    this.host.changed();
  }

  warnOnce(kind: ControllerWarning, values: Record<string, number>): void {
    this.once(kind, () => this.host.warning?.(kind, values));
  }

  implausibleBattery(power: number): void {
    this.once('implausibleBattery', () => this.host.implausibleBattery(power));
  }

  meterFault(fault: MeterFault): void {
    this.host.meterFault(fault);
  }

  private once(kind: ControllerWarning | 'implausibleBattery', say: () => void): void {
    if (this.said.has(kind)) return;
    this.said.add(kind);
    say();
  }
}
