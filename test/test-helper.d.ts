declare module 'node-red-node-test-helper' {
  import type { Node } from 'node-red';

  interface TestNode extends Node {
    [key: string]: any;
  }

  interface TestHelper {
    init(nodeRedRuntime: string, userSettings?: Record<string, unknown>): void;
    load(nodes: unknown, flow: unknown[], credentials?: Record<string, unknown>, callback?: () => void): Promise<void>;
    unload(): Promise<void>;
    getNode(id: string): TestNode;
    clearFlows(): Promise<void>;
    request(): any;
    startServer(callback?: () => void): Promise<void>;
    stopServer(callback?: () => void): Promise<void>;
    settings(userSettings: Record<string, unknown>): void;
    url(): string;
    log(): any;
    _RED: any;
  }

  const helper: TestHelper;
  export = helper;
}
