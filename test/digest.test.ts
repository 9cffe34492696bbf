/** HTTP Digest (MD5, qop=auth) as the device checks it, against a digest computed here by hand. */
import { createHash } from 'node:crypto';
import should from 'should';
import { buildAuthorization, digestResponse, parseDigestHeader, randomNonce } from '../src/digest';

const md5 = (text: string) => createHash('md5').update(text, 'utf8').digest('hex');

// The vendor's worked example (field notes): username opend, nonce 123456, nc 00000001, cnonce 2, qop auth.
const EXAMPLE = {
  username: 'opend',
  password: 'qazwsxed',
  method: 'POST',
  uri: '/rpc/User.SetConfig?config=%7B%22Password%22%3A%22TrKQZ1QC1MQ%3D%22%7D',
  realm: 'zwvQTjeg5rvLdBvLzqtymg==',
  nonce: '123456',
  nc: '00000001',
  cnonce: '2',
};

function expectedResponse(p: typeof EXAMPLE): string {
  // RFC 7616 section 3.4.1 with algorithm MD5 and qop auth.
  const ha1 = md5(`${p.username}:${p.realm}:${p.password}`);
  const ha2 = md5(`${p.method}:${p.uri}`);
  return md5(`${ha1}:${p.nonce}:${p.nc}:${p.cnonce}:auth:${ha2}`);
}

describe('digest', function () {
  it('gives the known answer of RFC 2617 section 3.5 (independent of the formula written here)', function () {
    const rfc = {
      username: 'Mufasa', password: 'Circle Of Life', method: 'GET', uri: '/dir/index.html', realm: 'testrealm@host.com',
      nonce: 'dcd98b7102dd2f0e8b11d0f600bfb0c093', nc: '00000001', cnonce: '0a4f113b',
    };
    should(digestResponse(rfc)).equal('6629fae49393a05397450978507c4ef1');
  });

  it('computes the RFC MD5 qop=auth response for the field-notes example', function () {
    const expected = expectedResponse(EXAMPLE);
    should(digestResponse(EXAMPLE)).equal(expected);
    const fields = parseDigestHeader(buildAuthorization({ ...EXAMPLE, opaque: '' }))!;
    should(fields).eql({
      username: 'opend',
      realm: EXAMPLE.realm,
      nonce: '123456',
      uri: EXAMPLE.uri,
      algorithm: 'MD5',
      response: expected,
      qop: 'auth',
      nc: '00000001',
      cnonce: '2',
      opaque: '',
    });
  });

  it('writes the header in the standard form: quoted strings, bare algorithm, qop and nc', function () {
    const header = buildAuthorization(EXAMPLE);
    should(header).equal(
      `Digest username="opend", realm="${EXAMPLE.realm}", nonce="123456", uri="${EXAMPLE.uri}", algorithm=MD5, ` +
      `response="${expectedResponse(EXAMPLE)}", qop=auth, nc=00000001, cnonce="2"`,
    );
  });

  it('changes the response with any input', function () {
    const base = digestResponse(EXAMPLE);
    for (const key of ['username', 'password', 'method', 'uri', 'realm', 'nonce', 'nc', 'cnonce'] as const) {
      should(digestResponse({ ...EXAMPLE, [key]: EXAMPLE[key] + 'x' })).not.equal(base, key);
    }
  });

  it('fills in a random cnonce and nc 00000001 when not given', function () {
    const { cnonce, nc, ...rest } = EXAMPLE;
    void cnonce;
    void nc;
    const fields = parseDigestHeader(buildAuthorization(rest))!;
    should(fields.nc).equal('00000001');
    should(fields.cnonce).match(/^[0-9a-f]{16}$/);
    should(fields.response).equal(expectedResponse({ ...EXAMPLE, cnonce: fields.cnonce }));
    should(randomNonce()).match(/^[0-9a-f]{16}$/).and.not.equal(randomNonce());
  });

  it('escapes quotes and backslashes in quoted fields, and parses them back', function () {
    const tricky = { ...EXAMPLE, username: 'a"b\\c', realm: 'say "hi"' };
    const header = buildAuthorization(tricky);
    should(header).containEql('username="a\\"b\\\\c"').and.containEql('realm="say \\"hi\\""');
    const fields = parseDigestHeader(header)!;
    should(fields.username).equal('a"b\\c');
    should(fields.realm).equal('say "hi"');
    // The digest is over the values themselves, not their escaped form.
    should(fields.response).equal(expectedResponse(tricky));
  });

  it('parses a WWW-Authenticate challenge with bare and quoted values', function () {
    const challenge = 'Digest realm="device \\"one\\"", nonce="abc,def", algorithm=MD5, qop=auth, stale=FALSE, opaque=""';
    should(parseDigestHeader(challenge)).eql({
      realm: 'device "one"', nonce: 'abc,def', algorithm: 'MD5', qop: 'auth', stale: 'FALSE', opaque: '',
    });
    should(parseDigestHeader('digest Realm="r",QOP="auth,auth-int",Nonce=n1')).eql({ realm: 'r', qop: 'auth,auth-int', nonce: 'n1' });
  });

  it('gives undefined for missing or non-Digest headers', function () {
    should(parseDigestHeader(undefined)).be.undefined();
    should(parseDigestHeader('')).be.undefined();
    should(parseDigestHeader('Basic b3BlbmQ6eA==')).be.undefined();
  });
});
