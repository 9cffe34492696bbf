/** The core: everything here works without Node-RED. */
export * from './points/catalogue';
export * from './points/home-assistant';
export * from './errors';
export * from './numbers';
export * from './device/client';
export * from './device/scheduler';
export { DeviceState, type KnownMode, type Setpoint } from './device/device-state';
export * from './simulator/digest';
export * from './device/password-crypto';
export * from './discovery/discovery';
export * from './simulator';
export * from './control/control';
export * from './device/poller';
export * from './control/regulator';
