/** Error texts: a bad value is named by a short preview, however large it is. */
import should from 'should';
import { resolveWritePoint, validateWriteValue } from '../src/points/catalogue';
import { CONTROL_DEFAULTS, parseControl } from '../src/control/control';
import { ValidationError } from '../src/errors';

const MEGABYTE = 'x'.repeat(1024 * 1024);

describe('errors', function () {
  it('names a short value in full', function () {
    should(new ValidationError('power', 'lots', 'a number').message).equal('Invalid power: got "lots", allowed is a number');
    should(new ValidationError('power', undefined, 'a number').message).equal('Invalid power: got nothing, allowed is a number');
    should(new ValidationError('power', { a: 1 }, 'a number').message).equal('Invalid power: got {"a":1}, allowed is a number');
  });

  it('cuts a 1 MB string to a preview that says how long it was, and keeps the value itself on the error', function () {
    const error = new ValidationError('power', MEGABYTE, 'a number');
    should(error.message.length).be.below(200);
    should(error.message).startWith(`Invalid power: got "${MEGABYTE.slice(0, 20)}`);
    should(error.message).containEql(`(${MEGABYTE.length} characters)`);
    should(error.message).endWith('allowed is a number');
    should(error.value).equal(MEGABYTE);
  });

  it('cuts large arrays and objects, and names a value that has no JSON form', function () {
    const list = new ValidationError(
      'points',
      Array.from({ length: 100000 }, (_, i) => i),
      'a list',
    );
    should(list.message.length).be.below(200);
    should(list.message).startWith('Invalid points: got [0,1,2,');
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    should(new ValidationError('payload', circular, 'an object').message).equal(
      'Invalid payload: got [object Object], allowed is an object',
    );
  });

  it('keeps the message short where a write or control payload is a 1 MB string', function () {
    for (const run of [
      () => validateWriteValue(resolveWritePoint('feedInPowerLimitSetting'), MEGABYTE),
      () => parseControl(MEGABYTE, CONTROL_DEFAULTS),
      () => parseControl({ power: MEGABYTE }, CONTROL_DEFAULTS),
    ]) {
      let message = '';
      try {
        run();
      } catch (error) {
        message = (error as Error).message;
      }
      should(message).startWith('Invalid ');
      should(message.length).be.below(400);
    }
  });
});
