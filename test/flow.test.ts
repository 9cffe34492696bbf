/** The flow nodes' core objects (src/flow/) without Node-RED: what a read sends, and where a new password comes from. */
import should from 'should';
import { ReadSettings } from '../src/flow/read';
import { PasswordSource } from '../src/flow/password';
import type { PollOutcome } from '../src/device/poller';

const outcome = (sending: PollOutcome['sending'], missing: string[] = []): PollOutcome => ({
  readings: sending ?? [],
  sending,
  changed: sending?.length ?? 0,
  missing,
  newlyMissing: [],
});

describe('flow cores (src/flow)', () => {
  describe('ReadSettings', () => {
    it('splits a read into one message per point, each with its own list of missing points and no unit where none is known', () => {
      const settings = new ReadSettings({ points: ['batterySoc', 60000], output: 'split', topicPrefix: 'battery/' });
      const messages = settings.messages(
        outcome(
          [
            { key: 'batterySoc', address: 6002, value: 55 },
            { key: '60000', address: 60000, value: 7 },
          ],
          ['gridPower'],
        ),
      );
      messages.should.eql([
        { topic: 'battery/batterySoc', payload: 55, address: 6002, unit: '%', missing: ['gridPower'] },
        { topic: 'battery/60000', payload: 7, address: 60000, unit: undefined, missing: ['gridPower'] },
      ]);
      should(messages[0].missing).not.equal(messages[1].missing);
    });

    it('sends one object with units and metadata, and nothing when only on change finds nothing new', () => {
      const settings = new ReadSettings({ points: ['batterySoc'], output: 'object', onlyChange: true });
      const [fields] = settings.messages(outcome([{ key: 'batterySoc', address: 6002, value: 55 }]));
      should(fields.payload).eql({ batterySoc: 55 });
      should(fields.units).eql({ batterySoc: '%' });
      should(fields.metadata).have.property('batterySoc').with.properties({ address: 6002, unit: '%' });
      settings.messages(outcome(undefined)).should.eql([]);
    });

    it('lets msg.points stand in for bad points, but not for a bad dead band', () => {
      const badPoints = new ReadSettings({ points: ['noSuchPoint'] });
      should(badPoints.configError).be.an.Error();
      should(badPoints.messageError).be.undefined();
      badPoints.addressesFor({ points: ['batterySoc'] }).should.eql([6002]);
      const badBand = new ReadSettings({ points: ['batterySoc'], onlyChange: true, deadband: 'noSuchPoint=3' });
      should(badBand.messageError).be.an.Error();
      (() => badBand.addressesFor({ points: ['batterySoc'] })).should.throw(badBand.messageError!);
    });
  });

  describe('PasswordSource', () => {
    it('takes the new password out of msg.payload before it is checked, and names the payload in the error', () => {
      const source = new PasswordSource({ source: 'payload' });
      const msg: { payload?: unknown } = { payload: 42 };
      const candidate = source.take(msg, 'credential-secret');
      msg.should.not.have.property('payload');
      (() => source.check(candidate)).should.throw(/new password \(msg\.payload\)/);
    });

    it("uses the node's credential with the field source, and strips msg.payload for an unknown source", () => {
      should(new PasswordSource({ source: 'field' }).take({ payload: 'x' }, 'credential-secret')).equal('credential-secret');
      const unknown = new PasswordSource({ source: 'elsewhere' });
      should(unknown.configError).be.an.Error();
      const msg: { payload?: unknown } = { payload: 'secret-in-payload' };
      unknown.take(msg, undefined);
      msg.should.not.have.property('payload');
      (() => unknown.check('secret-in-payload')).should.throw(unknown.configError!);
    });
  });
});
