// Azure's own client (@azure/storage-blob) for Shoal's tests: reads and
// writes an Azurite account directly, as a user's tools would.
//
//   node azblob.mjs ENDPOINT ACCOUNT KEY OP CONTAINER [NAME [FILE]]
//
// OP: mk (create the container), put (NAME from FILE), get
// (NAME to stdout), ls (one "NAME SIZE" line per blob), rm (NAME),
// sas (an account SAS token, NAME its permissions, e.g. "rl", to stdout),
// public (create the container readable without a key), putdir (every
// file of directory NAME, as blobs named by their file names).
import fs from 'fs';
import {
  AccountSASPermissions, AccountSASResourceTypes, AccountSASServices, BlobServiceClient,
  StorageSharedKeyCredential, generateAccountSASQueryParameters,
} from '@azure/storage-blob';

const [ep, account, key, op, container, name, file] = process.argv.slice(2);
const cred = new StorageSharedKeyCredential(account, key);
const svc = new BlobServiceClient(ep, cred);
const c = svc.getContainerClient(container);
if (op === 'mk') {
  await c.createIfNotExists();
} else if (op === 'put') {
  const data = fs.readFileSync(file);
  await c.getBlockBlobClient(name).upload(data, data.length);
} else if (op === 'get') {
  process.stdout.write(await c.getBlobClient(name).downloadToBuffer());
} else if (op === 'ls') {
  for await (const b of c.listBlobsFlat()) console.log(`${b.name} ${b.properties.contentLength}`);
} else if (op === 'rm') {
  await c.getBlobClient(name).delete();
} else if (op === 'public') {
  await c.createIfNotExists({ access: 'blob' });
} else if (op === 'putdir') {
  const files = fs.readdirSync(name);
  for (let i = 0; i < files.length; i += 8) {
    await Promise.all(files.slice(i, i + 8).map((f) => {
      const data = fs.readFileSync(`${name}/${f}`);
      return c.getBlockBlobClient(f).upload(data, data.length);
    }));
  }
} else if (op === 'sas') {
  process.stdout.write(generateAccountSASQueryParameters({
    expiresOn: new Date(Date.now() + 3600 * 1000),
    permissions: AccountSASPermissions.parse(name),
    resourceTypes: AccountSASResourceTypes.parse('sco').toString(),
    services: AccountSASServices.parse('b').toString(),
  }, cred).toString());
} else {
  throw new Error(`unknown op ${op}`);
}
