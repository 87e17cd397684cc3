// The AWS SDK for JavaScript v3 against Shoal's S3 API: a current SDK,
// unchanged (its default checksums: CRC32 in a header, or trailing an
// aws-chunked body). Usage: node sdkjs.mjs ENDPOINT KEY SECRET BUCKET.
// Prints one JSON object of what it saw; exits 1 on the first surprise.
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import {
  S3Client, PutObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command,
  DeleteObjectCommand, CopyObjectCommand,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";

const [endpoint, key, secret, bucket] = process.argv.slice(2);
const s3 = new S3Client({
  endpoint, region: "us-east-1", forcePathStyle: true,
  credentials: { accessKeyId: key, secretAccessKey: secret },
});
const out = {};
const md5 = (b) => createHash("md5").update(b).digest("hex");
function fail(msg) {
  console.log(JSON.stringify(out));
  console.error("sdkjs: " + msg);
  process.exit(1);
}
// bytes i * 31 + 7: the same on the test's side
const pattern = (n) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + 7) & 255));

async function readBack(k, want) {
  const r = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: k, ChecksumMode: "ENABLED" }));
  const body = Buffer.from(await r.Body.transformToByteArray());   // the SDK checks FULL_OBJECT values
  if (md5(body) !== md5(want)) fail(k + ": read back other bytes");
  return r;
}

try {
  const small = Buffer.from("hello world");
  let r = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "small", Body: small }));
  out.small_put = r.ChecksumCRC32;
  out.small_get = (await readBack("small", small)).ChecksumCRC32;

  const streamed = pattern(300000);   // a stream: aws-chunked with a trailing CRC32
  r = await s3.send(new PutObjectCommand({
    Bucket: bucket, Key: "streamed", Body: Readable.from([streamed]), ContentLength: streamed.length,
  }));
  out.streamed_put = r.ChecksumCRC32;
  out.streamed_get = (await readBack("streamed", streamed)).ChecksumCRC32;

  r = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "sha", Body: small, ChecksumAlgorithm: "SHA256" }));
  out.sha_put = r.ChecksumSHA256;
  r = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "sha", ChecksumMode: "ENABLED" }));
  out.sha_head = [r.ChecksumSHA256, r.ChecksumType];

  const big = pattern(12 * 1024 * 1024 + 5);   // three parts, from a buffer and from a stream
  for (const [k, body] of [["mpu", big], ["mpu-stream", Readable.from([big])]]) {
    r = await new Upload({ client: s3, params: { Bucket: bucket, Key: k, Body: body }, partSize: 5 * 1024 * 1024 }).done();
    out[k] = [r.ETag, r.ChecksumCRC32];
    r = await readBack(k, big);
    out[k + "_get"] = [r.ChecksumCRC32, r.ChecksumType, r.ContentLength];
  }

  try {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "bad", Body: small, ChecksumCRC32: "AAAAAA==" }));
    fail("a wrong CRC32 was taken");
  } catch (e) {
    out.bad = [e.name, e.$metadata?.httpStatusCode];
  }
  try {
    await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "bad" }));
    fail("an object whose checksum failed is there");
  } catch (e) {
    out.bad_head = e.$metadata?.httpStatusCode;
  }

  await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: "copy", CopySource: bucket + "/small" }));
  out.copy_get = (await readBack("copy", small)).ChecksumCRC32;
  const l = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
  out.listed = (l.Contents || []).map((o) => o.Key).sort();
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "copy" }));
  console.log(JSON.stringify(out));
} catch (e) {
  fail("unexpected " + e.name + " (" + e.$metadata?.httpStatusCode + "): " + e.message);
}
