/**
 * One validator for the editor and the runtime: the table of test/verdicts.ts through the runtime's functions and
 * through each node's editor script in a stand-in editor (the same table runs in Chromium in test/editor.test.ts).
 */
import should from 'should';
import { loadEditorScript, text, until } from './node-support';
import * as rules from '../src/editor/editor-rules';
import { DEVICES, VERDICTS, describeRow, runtimeVerdict, type Verdict } from './verdicts';

/** The verdict of the rules module itself (as the editors call it), run in Node. */
function rulesVerdict(row: Verdict): boolean {
  const device = typeof row.node?.device === 'string' ? DEVICES[row.node.device] : undefined;
  const limits = rules.limitsOf(device);
  switch (row.type) {
    case 'localbattery-control':
      return !rules.controlProblems({ [row.field]: row.value }, limits)[row.field];
    case 'localbattery-device':
      return !rules.deviceProblems({ [row.field]: row.value })[row.field];
    case 'localbattery-write': {
      const value = row.node?.valueType === 'json' ? JSON.parse(row.value as string) : row.value;
      return rules.writeProblem(row.node?.point, value, limits) === null;
    }
    case 'localbattery-read':
      if (row.field === 'points') return rules.pointsProblem(row.value) === null;
      if (row.field === 'interval') return rules.numberProblem('pollInterval', row.value) === null;
      return rules.deadBandProblem(row.value) === null;
    case 'localbattery-discover':
      return rules.targetProblem(row.value) === null;
    case 'localbattery-zero-feed-in':
      return !rules.zeroFeedInProblems({ [row.field]: row.value }, limits)[row.field];
    default:
      return rules.passwordProblem(row.value) === null;
  }
}

describe('one validator for the editor and the runtime', function () {
  it('the runtime gives each input of the table its verdict', function () {
    for (const row of VERDICTS) should(runtimeVerdict(row)).equal(row.valid, describeRow(row));
  });

  it('the rules module the editors run gives the same verdicts', function () {
    for (const row of VERDICTS) should(rulesVerdict(row)).equal(row.valid, describeRow(row));
    // ${NAME} is left to the runtime; a limit from the environment is not taken for 2400 W.
    should(rules.numberProblem('port', '${PORT}')).be.null();
    should(rules.numberProblem('port', '0x50')).match(/port/);
    should(rules.limitsOf({ chargeLimit: '${LIMIT}', dischargeLimit: '900' })).eql({ chargeLimit: 10800, dischargeLimit: 900 });
    should(rules.limitsOf({ powerLimit: '${LIMIT}', dischargeLimit: '900' })).eql({ chargeLimit: 10800, dischargeLimit: 900 });
    should(rules.allowedText('feedInPowerLimitSetting', { chargeLimit: 1200, dischargeLimit: 800 })).equal('an integer from 50 to 800 W');
    should(rules.pointsProblem(['batterySoc', 6000])).be.null();
    should(rules.pointsProblem(['noSuchPoint'])).match(/points/);
  });

  it('the editors, running the served rules, give the same verdicts', async function () {
    const types = [...new Set(VERDICTS.map((row) => row.type))];
    for (const type of types) {
      const editor = loadEditorScript(type, {
        nodes: { node: (id: string) => DEVICES[id] ?? null },
        utils: { validateTypedProperty: () => true },
        _: text,
      });
      const rows = VERDICTS.filter((r) => r.type === type);
      const verdict = (row: (typeof rows)[number]) => {
        const spec = row.credential ? editor.definition.credentials[row.field] : editor.definition.defaults[row.field];
        return spec.validate.call({ ...row.node }, row.value, {});
      };
      // The first validation asks for the catalogue and the rules; until they are there nothing is refused (no
      // verdict of the editor's own), and the nodes are validated again when they arrive.
      for (const row of rows) should(verdict(row)).equal(true, `${describeRow(row)} before the rules`);
      editor.finishLoad();
      await until(() => editor.revalidated > 0, 2000, `the rules for ${type}`);
      for (const row of rows) {
        const answer = verdict(row);
        should(answer === true).equal(row.valid, `${describeRow(row)}: ${String(answer)}`);
      }
    }
  });
});
