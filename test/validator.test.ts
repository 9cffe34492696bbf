/**
 * One validator for the editor and the runtime: the table of test/verdicts.ts through the runtime's functions and
 * through each node's editor script in a stand-in editor (the same table runs in Chromium in test/editor.test.ts).
 */
import should from 'should';
import { loadEditorScript, text, until } from './node-support';
import { DEVICES, VERDICTS, describeRow, runtimeVerdict } from './verdicts';

describe('one validator for the editor and the runtime', function () {
  it('the runtime gives each input of the table its verdict', function () {
    for (const row of VERDICTS) should(runtimeVerdict(row)).equal(row.valid, describeRow(row));
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
      // The first validation asks for the catalogue and the rules.
      rows.forEach(verdict);
      editor.finishLoad();
      await until(() => editor.revalidated > 0, 2000, `the rules for ${type}`);
      for (const row of rows) {
        const answer = verdict(row);
        should(answer === true).equal(row.valid, `${describeRow(row)}: ${String(answer)}`);
      }
    }
  });
});
