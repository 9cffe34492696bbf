/** Password-change encryption (AES-128-GCM) against the field-notes known-answer vector. */
import should from 'should';
import { ValidationError } from '../src/errors';
import { MAX_PASSWORD_BYTES, checkPassword, decryptPassword, encryptPassword, randomIvString } from '../src/device/password-crypto';

function rejects(fn: () => unknown, secret: string): ValidationError {
  try {
    fn();
  } catch (error) {
    should(error).be.instanceOf(ValidationError);
    const e = error as ValidationError;
    should(e.code).equal('INVALID_VALUE');
    // Neither the message nor the error's fields may carry the password.
    if (secret !== '') {
      should(e.message).not.containEql(secret);
      should(JSON.stringify({ ...e, message: e.message })).not.containEql(secret);
    }
    return e;
  }
  throw new Error('expected a ValidationError');
}

describe('password-crypto', function () {
  it('matches the known-answer vector of the field notes', function () {
    should(encryptPassword('qazwsxed', 'qwertyui', '123456')).eql({
      ciphertext: 'TrKQZ1QC1MQ=',
      tag: 'zwvQTjeg5rvLdBvLzqtymg==',
      nonce: '123456',
    });
  });

  it('decrypts what it encrypts, also for multi-byte UTF-8 and 16-byte passwords', function () {
    for (const [current, next] of [
      ['qazwsxed', 'qwertyui'],
      ['sixteen-bytes-ok', 'x'],
      ['pässwörd', '€€€€€'],
      ['a', 'sixteen-bytes-ok'],
    ]) {
      const encrypted = encryptPassword(current, next);
      should(decryptPassword(current, encrypted)).equal(next);
    }
    should(decryptPassword('qazwsxed', { ciphertext: 'TrKQZ1QC1MQ=', tag: 'zwvQTjeg5rvLdBvLzqtymg==', nonce: '123456' })).equal('qwertyui');
  });

  it('gives undefined for a wrong key, wrong IV or a changed tag', function () {
    const encrypted = encryptPassword('qazwsxed', 'qwertyui', '123456');
    should(decryptPassword('qazwsxee', encrypted)).be.undefined();
    should(decryptPassword('qazwsxed', { ...encrypted, nonce: '123457' })).be.undefined();
    should(decryptPassword('qazwsxed', { ...encrypted, tag: 'AAAAAAAAAAAAAAAAAAAAAA==' })).be.undefined();
  });

  it('rejects empty passwords', function () {
    rejects(() => encryptPassword('', 'qwertyui'), '');
    rejects(() => encryptPassword('qazwsxed', ''), '');
    rejects(() => checkPassword(undefined, 'password'), '');
  });

  it('rejects passwords over 16 bytes without showing them', function () {
    const seventeen = 'abcdefghijklmnopq';
    should(Buffer.byteLength(seventeen)).equal(MAX_PASSWORD_BYTES + 1);
    should(rejects(() => encryptPassword('qazwsxed', seventeen), seventeen).message)
      .containEql('17 bytes')
      .and.containEql('new password');
    rejects(() => encryptPassword(seventeen, 'qwertyui'), seventeen);
    // Nine characters, eighteen bytes: the limit is on bytes, not characters.
    const umlauts = 'äöüäöüäöü';
    should(umlauts.length).be.below(16);
    should(rejects(() => encryptPassword('qazwsxed', umlauts), umlauts).message).containEql('18 bytes');
  });

  it('accepts exactly 16 bytes', function () {
    should(() => checkPassword('0123456789abcdef', 'password')).not.throw();
    should(() => checkPassword('ääääääää', 'password')).not.throw();
  });

  it('makes random IV strings of 12 digits', function () {
    const ivs = Array.from({ length: 20 }, () => randomIvString());
    for (const iv of ivs) should(iv).match(/^\d{12}$/);
    should(new Set(ivs).size).be.above(1);
    rejects(() => encryptPassword('qazwsxed', 'qwertyui', '1234567890123'), 'qwertyui');
  });
});
