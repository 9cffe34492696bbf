/**
 * HTTP Digest (MD5, qop=auth) headers from digest-fetch (src/device/auth.ts), checked against digests computed here by
 * hand, against RFC 2617's known values, and by the simulator's own server-side check (src/simulator/digest.ts).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import should from 'should';
import { answerChallenge, digestAuthorization, isHeaderSafe } from '../src/device/auth';
import { digestResponse, parseDigestHeader } from '../src/simulator/digest';

const md5 = (text: string) => createHash('md5').update(text, 'utf8').digest('hex');

// The vendor's worked example (field notes): username opend, nonce 123456, qop auth, empty opaque.
const EXAMPLE = {
  username: 'opend',
  password: 'qazwsxed',
  method: 'POST' as const,
  target: '/rpc/User.SetConfig?config=%7B%22Password%22%3A%22TrKQZ1QC1MQ%3D%22%7D',
};
const SEED = { realm: 'zwvQTjeg5rvLdBvLzqtymg==', nonce: '123456', opaque: '' };

describe('digest (digest-fetch)', function () {
  it('gives the known answer of RFC 2617 section 3.5 for HA1 and HA2', async function () {
    const request = { username: 'Mufasa', password: 'Circle Of Life', method: 'GET' as const, target: '/dir/index.html' };
    const header = await answerChallenge(
      request,
      'Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41"',
    );
    const fields = parseDigestHeader(header)!;
    // HA1 and HA2 of the RFC's example, as the RFC prints them; the cnonce is digest-fetch's random one.
    const ha1 = '939e7578ed9e3c518a452acee763bce9';
    const ha2 = '39aff3a2bab6126f332b942af96d3366';
    should(md5('Mufasa:testrealm@host.com:Circle Of Life')).equal(ha1);
    should(fields.response).equal(md5(`${ha1}:dcd98b7102dd2f0e8b11d0f600bfb0c093:${fields.nc}:${fields.cnonce}:auth:${ha2}`));
    should(fields).containDeep({
      username: 'Mufasa',
      realm: 'testrealm@host.com',
      uri: '/dir/index.html',
      qop: 'auth',
      nc: '00000001',
      opaque: '5ccc069c403ebaf9f0171e9517f40e41',
    });
    // With the RFC's own cnonce, the simulator's check gives the RFC's response.
    should(
      digestResponse({
        ...request,
        uri: request.target,
        realm: 'testrealm@host.com',
        nonce: 'dcd98b7102dd2f0e8b11d0f600bfb0c093',
        nc: '00000001',
        cnonce: '0a4f113b',
      }),
    ).equal('6629fae49393a05397450978507c4ef1');
  });

  it("seeds the header with the client's own realm and nonce, in the field-notes form", async function () {
    const fields = parseDigestHeader(await digestAuthorization(EXAMPLE, SEED))!;
    should(fields).containDeep({
      username: 'opend',
      realm: SEED.realm,
      nonce: '123456',
      uri: EXAMPLE.target,
      algorithm: 'MD5',
      qop: 'auth',
      nc: '00000001',
      opaque: '',
    });
    const ha1 = md5(`opend:${SEED.realm}:qazwsxed`);
    const ha2 = md5(`POST:${EXAMPLE.target}`);
    should(fields.response).equal(md5(`${ha1}:123456:00000001:${fields.cnonce}:auth:${ha2}`));
    // The simulator, checking as the device does, accepts it.
    should(
      digestResponse({ ...EXAMPLE, uri: EXAMPLE.target, realm: SEED.realm, nonce: SEED.nonce, nc: fields.nc, cnonce: fields.cnonce }),
    ).equal(fields.response);
  });

  it('changes the response with every input and picks a fresh cnonce each time', async function () {
    const base = parseDigestHeader(await digestAuthorization(EXAMPLE, SEED))!;
    const again = parseDigestHeader(await digestAuthorization(EXAMPLE, SEED))!;
    should(again.cnonce).not.equal(base.cnonce);
    for (const change of [{ password: 'x' }, { username: 'other' }, { target: '/rpc/Sys.GetConfig' }, { method: 'GET' as const }]) {
      const fields = parseDigestHeader(await digestAuthorization({ ...EXAMPLE, ...change }, SEED))!;
      const request = { ...EXAMPLE, ...change };
      const expected = digestResponse({
        ...request,
        uri: request.target,
        realm: SEED.realm,
        nonce: SEED.nonce,
        nc: fields.nc,
        cnonce: fields.cnonce,
      });
      should(fields.response).equal(expected);
      should(
        md5(`${md5(`opend:${SEED.realm}:qazwsxed`)}:123456:${fields.nc}:${fields.cnonce}:auth:${md5(`POST:${EXAMPLE.target}`)}`),
      ).not.equal(fields.response, JSON.stringify(change));
    }
  });

  it('loads digest-fetch (an ES module) with a real dynamic import, which every Node version of `engines` supports', function () {
    // Compiled to require(), the load would fail on Node versions without require(esm) (20 before 20.19).
    const compiled = readFileSync(require.resolve('../src/device/auth'), 'utf8');
    should(compiled).match(/\bimport\('digest-fetch'\)/);
    should(compiled).not.match(/require\(['"]digest-fetch['"]\)/);
  });

  it('refuses a challenge that is not a digest, and marks header-breaking text unsafe', async function () {
    await should(answerChallenge(EXAMPLE, '')).be.rejectedWith(/not a digest challenge/);
    should(isHeaderSafe('opend')).be.true();
    for (const bad of ['a"b', 'a\\b', 'a\nb']) should(isHeaderSafe(bad)).be.false();
  });

  it("parses a WWW-Authenticate challenge with bare and quoted values (the simulator's side)", function () {
    const challenge = 'Digest realm="device \\"one\\"", nonce="abc,def", algorithm=MD5, qop=auth, stale=FALSE, opaque=""';
    should(parseDigestHeader(challenge)).eql({
      realm: 'device "one"',
      nonce: 'abc,def',
      algorithm: 'MD5',
      qop: 'auth',
      stale: 'FALSE',
      opaque: '',
    });
    should(parseDigestHeader('digest Realm="r",QOP="auth,auth-int",Nonce=n1')).eql({ realm: 'r', qop: 'auth,auth-int', nonce: 'n1' });
    should(parseDigestHeader(undefined)).be.undefined();
    should(parseDigestHeader('Basic b3BlbmQ6eA==')).be.undefined();
  });
});
