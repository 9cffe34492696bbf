#!/usr/bin/env node
// Benchmarks of the client and scheduler against the simulator on 127.0.0.1. Prints figures; run with
// `npm run bench` (after a build). Ratios are what matter: they do not depend on the machine's speed.
const { DeviceClient, DeviceSimulator, READ_POINTS } = require('../dist/src');

const PASSWORD = 'bench-pass';

async function withDevice(options, run) {
  const simulator = new DeviceSimulator({ port: 0, udpPort: null, password: PASSWORD });
  await simulator.start();
  const client = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD, ...options });
  try {
    return await run(client, simulator);
  } finally {
    client.close();
    await simulator.stop();
  }
}

function supportedNumeric(simulator) {
  return READ_POINTS.filter((p) => p.type !== 'string' && !simulator.isUnsupported(p.address)).map((p) => p.address);
}

async function burst(callers, readsPerCaller) {
  return withDevice({ maxQueue: callers * readsPerCaller }, async (client, simulator) => {
    const addresses = supportedNumeric(simulator);
    const cpu = process.cpuUsage();
    const started = performance.now();
    const reads = [];
    for (let c = 0; c < callers; c++) {
      const mine = addresses.slice((c * 7) % addresses.length, ((c * 7) % addresses.length) + 5);
      for (let r = 0; r < readsPerCaller; r++) reads.push(client.read(mine));
    }
    const results = await Promise.all(reads);
    const used = process.cpuUsage(cpu);
    const wrong = results.filter((result) => result.values.size === 0).length;
    return {
      reads: reads.length,
      requests: simulator.stats.requests,
      readsPerRequest: (reads.length / simulator.stats.requests).toFixed(0),
      wallMs: Math.round(performance.now() - started),
      cpuMicrosPerRead: ((used.user + used.system) / reads.length).toFixed(1),
      violations: simulator.stats.violations.length,
      emptyResults: wrong,
    };
  });
}

async function queueMemory(maxQueue) {
  return withDevice({ maxQueue, timeoutMs: 1000 }, async (client, simulator) => {
    simulator.setFault('timeout');
    global.gc?.();
    const before = process.memoryUsage().heapUsed;
    const settled = [];
    let rejectedAtOnce = 0;
    for (let i = 0; i < maxQueue * 3; i++) {
      settled.push(
        client.read([6002, 6000, 11016]).catch((error) => {
          if (error.code === 'QUEUE_FULL') rejectedAtOnce++;
        }),
      );
    }
    await new Promise((resolve) => setImmediate(resolve));
    const heldBytes = process.memoryUsage().heapUsed - before;
    const queued = client.queueSize;
    client.close();
    await Promise.all(settled);
    return { offered: maxQueue * 3, queued, rejectedQueueFull: rejectedAtOnce, heapGrowthKiB: Math.round(heldBytes / 1024) };
  });
}

async function lastWriteWins(writes) {
  return withDevice({}, async (client, simulator) => {
    const outcomes = [];
    for (let i = 0; i < writes; i++) outcomes.push(client.write('feedInPowerLimitSetting', 100 + i));
    const statuses = await Promise.all(outcomes);
    return {
      writesOffered: writes,
      setDataRequests: simulator.stats.byOperation['Vendor.SetData'] ?? 0,
      superseded: statuses.filter((o) => o.status === 'superseded').length,
      finalValue: simulator.value(11010),
    };
  });
}

async function main() {
  console.log('Read merging (concurrent reads, one device, 1 s minimum interval):');
  for (const [callers, each] of [
    [20, 10],
    [100, 10],
    [200, 50],
  ])
    console.table(await burst(callers, each));
  console.log('Bounded queue under a device that never answers:');
  console.table(await queueMemory(1000));
  console.log('Last write wins (a control loop writing faster than the device takes it):');
  console.table(await lastWriteWins(200));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
