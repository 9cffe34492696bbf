/** The core: everything here works without Node-RED. */
export * from './catalogue';
export * from './home-assistant';
export * from './errors';
export * from './numbers';
export * from './client';
export * from './scheduler';
export { DeviceState, type KnownMode, type Setpoint } from './device-state';
export * from './digest';
export * from './password-crypto';
export * from './discovery';
export * from './simulator';
export * from './control';
export * from './poller';
export * from './regulator';
