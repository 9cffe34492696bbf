#!/usr/bin/env node
/** `local-battery-simulator`: runs the device simulator until SIGINT or SIGTERM. */
import fs from 'node:fs';
import type { ModelClass } from '../points/catalogue';
import { decimalNumber } from '../numbers';
import {
  DeviceSimulator,
  FAULTS,
  SIMULATOR_AUTH_MODES,
  SIMULATOR_DEFAULTS,
  SIMULATOR_MODELS,
  HOUSE_PRESETS,
  type Fault,
  type HouseScenario,
  type SimulatorAuth,
  type SimulatorOptions,
} from '../simulator';

export const HELP = `Usage: local-battery-simulator [options]

A simulated home battery serving the local HTTP API and UDP discovery.

Options:
  --auth <digest|none>        digest = HTTP + Digest as the specification describes; none = the maker's HTTP mode,
                              no authentication, no password change (default ${SIMULATOR_DEFAULTS.auth})
  --host <address>            listen address (default ${SIMULATOR_DEFAULTS.host})
  --port <n>                  HTTP port, 0 = any free port (default ${SIMULATOR_DEFAULTS.port})
  --udp-port <n|off>          UDP discovery port, 0 = any free port, off = none (default ${SIMULATOR_DEFAULTS.udpPort})
  --username <name>           digest user name (default ${SIMULATOR_DEFAULTS.username})
  --password <text>           start with this changed password (default: the default-password state)
  --default-password <text>   the label password of the default state (default ${SIMULATOR_DEFAULTS.defaultPassword})
  --namespace <name>          data-operation namespace, /rpc/<name>.GetData: Vendor as the specification
                              writes, Indevolt as shipped firmware (default ${SIMULATOR_DEFAULTS.namespace})
  --time-scale <n>            battery model speed-up, 60 = a minute per second (default ${SIMULATOR_DEFAULTS.timeScale})
  --model <2000|1600>         model class: its point set and power range; 1600 = charge up to 1200 W,
                              discharge up to 800 W (default ${SIMULATOR_DEFAULTS.model})
  --serial <text>             serial number (default ${SIMULATOR_DEFAULTS.serialNumber})
  --type <text>               device type that Sys.GetConfig reports (default ${SIMULATOR_DEFAULTS.type})
  --blank-identity            Sys.GetConfig with empty sn and hostname, as in the maker's example
  --mdns                      announce the device over mDNS (_http._tcp, instance IGEN_FW_<serial>), as newer
                              firmware does; multicast reaches the whole LAN
  --firmware <text>           firmware version string
  --advertised-ip <address>   IP address the discovery answer names (default: the host)
  --min-interval <ms>         minimum request interval recorded as violations (default ${SIMULATOR_DEFAULTS.minIntervalMs})
  --require-challenge         answer pre-emptive digests with a 401 challenge and accept only the server nonce
  --fault <name>              start with a fault: ${FAULTS.join(', ')}
  --slow-delay <ms>           delay of the slow fault (default ${SIMULATOR_DEFAULTS.slowDelayMs})
  --latency <ms|min-max>      answer every request after this time, e.g. 1000 or 900-1100 (default 0)
  --reject-early              answer a request under the minimum interval (or during another) with 503, not carried out
  --house <demo|file.json>    the house behind the meter: demo = base load, a fridge, a 2 kW kettle every 5 min,
                              900 W PV with a cloud every 10 min; or a scenario in JSON (default: a smooth load)
  --dead-time <s>             the battery follows a new setpoint after this many seconds (default ${SIMULATOR_DEFAULTS.deadTimeS})
  --lag <s>                   time constant of the battery's first-order lag, s (default ${SIMULATOR_DEFAULTS.lagS})
  --meter-delay <s>           the meter reads the grid power this many seconds late (default ${SIMULATOR_DEFAULTS.meterDelayS})
  --help                      this text
`;

export interface SimulatorCommand {
  options: SimulatorOptions;
  fault?: Fault;
  help: boolean;
}

function integer(flag: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || value < min || value > max)
    throw new Error(`${flag} needs an integer from ${min} to ${max}, got "${text}"`);
  return value;
}

/** A preset's scenario, or one read from a JSON file. */
function house(flag: string, value: string): HouseScenario {
  const preset = Object.hasOwn(HOUSE_PRESETS, value) ? HOUSE_PRESETS[value] : undefined;
  if (preset) return preset;
  try {
    return JSON.parse(fs.readFileSync(value, 'utf8')) as HouseScenario;
  } catch (error) {
    throw new Error(`${flag} needs ${Object.keys(HOUSE_PRESETS).join(', ')} or a JSON scenario file: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** Parses the command line; throws an Error whose message suits the user. */
export function parseSimulatorArgs(argv: readonly string[]): SimulatorCommand {
  const options: SimulatorOptions = {};
  const command: SimulatorCommand = { options, help: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') {
      command.help = true;
      continue;
    }
    if (arg === '--require-challenge') {
      options.requireChallenge = true;
      continue;
    }
    if (arg === '--blank-identity') {
      options.blankIdentity = true;
      continue;
    }
    if (arg === '--mdns') {
      options.mdns = true;
      continue;
    }
    if (arg === '--reject-early') {
      options.rejectEarly = true;
      continue;
    }
    const match = /^--([a-z-]+)(?:=(.*))?$/s.exec(arg);
    if (!match) throw new Error(`Unknown argument "${arg}" (see --help)`);
    const flag = `--${match[1]}`;
    let value = match[2];
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) throw new Error(`${flag} needs a value`);
    }
    switch (flag) {
      case '--auth':
        if (!(SIMULATOR_AUTH_MODES as readonly string[]).includes(value))
          throw new Error(`${flag} needs one of ${SIMULATOR_AUTH_MODES.join(', ')}, got "${value}"`);
        options.auth = value as SimulatorAuth;
        break;
      case '--host':
        options.host = value;
        break;
      case '--port':
        options.port = integer(flag, value, 0, 65535);
        break;
      case '--udp-port':
        options.udpPort = value === 'off' ? null : integer(flag, value, 0, 65535);
        break;
      case '--username':
        options.username = value;
        break;
      case '--password':
        options.password = value;
        break;
      case '--default-password':
        options.defaultPassword = value;
        break;
      case '--namespace':
        if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(value)) throw new Error(`${flag} needs a name of letters, digits and underscores`);
        options.namespace = value;
        break;
      case '--time-scale': {
        const scale = decimalNumber(value);
        if (scale === undefined || scale < 0) throw new Error(`${flag} needs a number >= 0, got "${value}"`);
        options.timeScale = scale;
        break;
      }
      case '--dead-time':
      case '--lag':
      case '--meter-delay': {
        const seconds = decimalNumber(value);
        if (seconds === undefined || seconds < 0 || seconds > 3600) throw new Error(`${flag} needs seconds from 0 to 3600, got "${value}"`);
        options[flag === '--dead-time' ? 'deadTimeS' : flag === '--lag' ? 'lagS' : 'meterDelayS'] = seconds;
        break;
      }
      case '--house':
        options.house = house(flag, value);
        break;
      case '--serial':
        options.serialNumber = value;
        break;
      case '--model':
        if (!(SIMULATOR_MODELS as readonly string[]).includes(value))
          throw new Error(`${flag} needs one of ${SIMULATOR_MODELS.join(', ')}, got "${value}"`);
        options.model = value as ModelClass;
        break;
      case '--type':
        options.type = value;
        break;
      case '--firmware':
        options.firmware = value;
        break;
      case '--advertised-ip':
        options.advertisedIp = value;
        break;
      case '--min-interval':
        options.minIntervalMs = integer(flag, value, 0, 3600000);
        break;
      case '--slow-delay':
        options.slowDelayMs = integer(flag, value, 0, 3600000);
        break;
      case '--latency': {
        const [min, max = min] = value.split('-').map((part) => integer(flag, part, 0, 120000));
        if (max! < min!) throw new Error(`${flag} needs min-max with min <= max, got "${value}"`);
        options.latencyMs = [min!, max!];
        break;
      }
      case '--fault':
        if (!(FAULTS as readonly string[]).includes(value)) throw new Error(`${flag} needs one of ${FAULTS.join(', ')}, got "${value}"`);
        command.fault = value as Fault;
        break;
      default:
        throw new Error(`Unknown option ${flag} (see --help)`);
    }
  }
  return command;
}

/** The start-up line. Never shows a changed password; the default one is the simulated label value. */
export function listeningLine(simulator: DeviceSimulator, options: SimulatorOptions): string {
  const user = options.username ?? SIMULATOR_DEFAULTS.username;
  const credentials = simulator.hasDefaultPassword ? `default password "${simulator.password}"` : 'password set';
  const access = options.auth === 'none' ? 'HTTP mode, no authentication' : `user ${user}, ${credentials}`;
  const udp = simulator.udpPort === undefined ? 'UDP discovery off' : `UDP discovery on ${simulator.udpPort}`;
  return `Battery simulator listening on ${simulator.url} (${access}) – ${udp}`;
}

/** Starts a simulator from command-line arguments; resolves with it once listening (undefined after --help). */
export async function runSimulatorCli(
  argv: readonly string[] = process.argv.slice(2),
  print: (line: string) => void = (line) => console.log(line),
): Promise<DeviceSimulator | undefined> {
  const command = parseSimulatorArgs(argv);
  if (command.help) {
    print(HELP);
    return undefined;
  }
  const simulator = new DeviceSimulator(command.options);
  if (command.fault) simulator.setFault(command.fault);
  await simulator.start();
  print(listeningLine(simulator, command.options));
  return simulator;
}

if (require.main === module) {
  runSimulatorCli().then(
    (simulator) => {
      if (!simulator) return;
      const shutdown = () => {
        process.off('SIGINT', shutdown);
        process.off('SIGTERM', shutdown);
        simulator.stop().then(
          () => console.log('Battery simulator stopped'),
          (error: Error) => {
            console.error(error.message);
            process.exitCode = 1;
          },
        );
      };
      process.on('SIGINT', shutdown);
      process.on('SIGTERM', shutdown);
    },
    (error: Error) => {
      console.error(`local-battery-simulator: ${error.message}`);
      process.exitCode = 2;
    },
  );
}
