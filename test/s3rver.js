// Runs s3rver (a real third-party S3 server) for Shoal's tests, with an
// exact log of every request it receives ("METHOD /path?query" per line),
// so tests can count backend requests from the backend's side.
//
//   node s3rver.js PORT DATA_DIR REQUEST_LOG BUCKET...
//
// It listens on 127.0.0.1, or on S3RVER_ADDRESS when set (a benchmark's
// network namespace). With S3RVER_KEY=ACCESS:SECRET it accepts requests
// signed with that key instead of s3rver's own S3RVER:S3RVER (two
// instances with different keys stand for two accounts).
'use strict';
const fs = require('fs');
const S3rver = require('s3rver');
const AWSAccount = require('s3rver/lib/models/account');

if (process.env.S3RVER_KEY) {
  const [id, secret] = process.env.S3RVER_KEY.split(':');
  AWSAccount.DUMMY_ACCOUNT.revokeAccessKey('S3RVER');
  AWSAccount.DUMMY_ACCOUNT.createKeyPair(id, secret);
}

const [port, dir, reqlog, ...buckets] = process.argv.slice(2);
const address = process.env.S3RVER_ADDRESS || '127.0.0.1';
const app = new S3rver({
  port: Number(port),
  address,
  directory: dir,
  silent: true,
  configureBuckets: buckets.map((name) => ({ name, configs: [] })),
});
const callback = app.callback.bind(app);
app.callback = () => {
  const handle = callback();
  return (req, res) => {
    fs.appendFileSync(reqlog, `${req.method} ${req.url}\n`);
    return handle(req, res);
  };
};
app.run().then(() => console.log(`s3rver listening on ${address}:${port}`));
