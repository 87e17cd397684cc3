"""Buckets have owners and canned ACLs (S3 fidelity): the access key that
created a bucket owns it, another key creating the name gets 409
BucketAlreadyExists and may not touch it, admin keys may use every bucket;
public-read buckets are listed and public-read objects read without a
signature; an unsigned request to a bucket that does not exist is 404."""
import pytest
import requests

from conftest import Cluster
from test_s3 import client, err

KEYS = {"alice": "alice-secret", "bob": "bob-secret", "ops": "ops-secret"}


@pytest.fixture(scope="module")
def oc():
    c = Cluster(targets=2, mountpaths=1,
                extra="--s3_api_keys %s --admin_keys ops" %
                      ",".join("%s:%s" % kv for kv in KEYS.items())).start()
    yield c
    assert not c.cleanup()


def who(c, key):
    return client(c, key=key, secret=KEYS[key])


def denied(call, **kw):
    with pytest.raises(Exception) as e:
        call(**kw)
    return err(e)


def test_owner_other_key_and_admin(oc):
    a, b, ops = who(oc, "alice"), who(oc, "bob"), who(oc, "ops")
    a.create_bucket(Bucket="alices")
    b.create_bucket(Bucket="bobs")
    a.create_bucket(Bucket="alices")             # again, one's own: 200 (us-east-1)
    assert denied(b.create_bucket, Bucket="alices") == ("BucketAlreadyExists", 409)
    a.put_object(Bucket="alices", Key="k", Body=b"alice's")
    for call, kw in ((b.get_object, {"Key": "k"}), (b.head_object, {"Key": "k"}),
                     (b.put_object, {"Key": "k", "Body": b"bob's"}),
                     (b.delete_object, {"Key": "k"}), (b.list_objects_v2, {}),
                     (b.get_bucket_acl, {}), (b.put_bucket_acl, {"ACL": "public-read"}),
                     (b.get_bucket_tagging, {}), (b.delete_bucket, {}),
                     (b.create_multipart_upload, {"Key": "m"})):
        code = denied(call, Bucket="alices", **kw)
        assert code[1] == 403, (call, code)
    assert denied(b.copy_object, Bucket="bobs", Key="c",
                  CopySource={"Bucket": "alices", "Key": "k"})[1] == 403
    assert a.get_object(Bucket="alices", Key="k")["Body"].read() == b"alice's"
    names = lambda cl: sorted(x["Name"] for x in cl.list_buckets()["Buckets"])  # noqa: E731
    assert "alices" in names(a) and "bobs" not in names(a)
    assert "bobs" in names(b) and "alices" not in names(b)
    assert {"alices", "bobs"} <= set(names(ops))
    # an admin key may do anything to anyone's bucket
    ops.put_object(Bucket="alices", Key="ops", Body=b"x")
    assert ops.get_object(Bucket="alices", Key="k")["Body"].read() == b"alice's"
    acl = a.get_bucket_acl(Bucket="alices")
    assert acl["Owner"]["ID"] == "alice"
    # the owner S3 names elsewhere: the account asking, the bucket's owner
    assert a.list_buckets()["Owner"]["ID"] == "alice"
    assert {o["Owner"]["ID"] for o in
            ops.list_objects_v2(Bucket="alices", FetchOwner=True)["Contents"]} == {"alice"}
    u = a.create_multipart_upload(Bucket="alices", Key="up")["UploadId"]
    up = a.list_multipart_uploads(Bucket="alices")["Uploads"][0]
    assert up["Owner"]["ID"] == up["Initiator"]["ID"] == "alice"
    a.abort_multipart_upload(Bucket="alices", Key="up", UploadId=u)
    assert [g["Permission"] for g in acl["Grants"]] == ["FULL_CONTROL"]


def test_canned_acls_and_unsigned_reads(oc):
    a, b = who(oc, "alice"), who(oc, "bob")
    a.create_bucket(Bucket="pub")
    a.put_object(Bucket="pub", Key="open", Body=b"for all", ACL="public-read")
    a.put_object(Bucket="pub", Key="closed", Body=b"mine")
    url = oc.url + "/s3/pub/"
    assert requests.get(url + "open").content == b"for all"
    assert requests.head(url + "open").status_code == 200
    r = requests.get(url + "closed")
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text
    assert b.get_object(Bucket="pub", Key="open")["Body"].read() == b"for all"
    assert denied(b.get_object, Bucket="pub", Key="closed")[1] == 403
    grants = a.get_object_acl(Bucket="pub", Key="open")["Grants"]
    assert any(g["Permission"] == "READ" and g["Grantee"].get("URI", "").endswith("/AllUsers")
               for g in grants)
    # a private bucket is not listed unsigned; public-read makes it so
    r = requests.get(url + "?list-type=2")
    assert r.status_code == 403
    a.put_bucket_acl(Bucket="pub", ACL="public-read")
    r = requests.get(url + "?list-type=2")
    assert r.status_code == 200 and "<Key>closed</Key>" in r.text and "<Key>open</Key>" in r.text
    assert requests.get(url + "closed").status_code == 403    # objects keep their own ACL
    assert requests.put(url + "new", data=b"x").status_code == 403
    assert denied(b.put_object, Bucket="pub", Key="new", Body=b"x")[1] == 403
    assert any(g["Permission"] == "READ" for g in a.get_bucket_acl(Bucket="pub")["Grants"])
    # back to private, for the object and the bucket
    a.put_object_acl(Bucket="pub", Key="open", ACL="private")
    assert requests.get(url + "open").status_code == 403
    a.put_bucket_acl(Bucket="pub", ACL="private")
    assert requests.get(url + "?list-type=2").status_code == 403
    # an unsigned request to no bucket: 404, not 403
    r = requests.get(oc.url + "/s3/no-such-bucket/k")
    assert r.status_code == 404 and "<Code>NoSuchBucket</Code>" in r.text
    assert requests.get(oc.url + "/s3/no-such-bucket").status_code == 404
    # ACLs Shoal does not serve: 501, on a bucket and an object
    assert denied(a.create_bucket, Bucket="rwbucket", ACL="public-read-write") == \
        ("NotImplemented", 501)
    assert denied(a.put_object, Bucket="pub", Key="rw", Body=b"x",
                  ACL="authenticated-read") == ("NotImplemented", 501)
    assert denied(b.put_object_acl, Bucket="pub", Key="open", ACL="public-read")[1] == 403
    # a public-read bucket made at creation
    a.create_bucket(Bucket="pub2", ACL="public-read")
    assert requests.get(oc.url + "/s3/pub2?list-type=2").status_code == 200


def sign_as(key, method, url, headers=None):
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method=method, url=url, data=b"", headers=dict(headers or {}))
    S3SigV4Auth(Credentials(key, KEYS[key]), "s3", "us-east-1").add_auth(req)
    return dict(req.headers)


def test_a_targets_root_checks_the_owner_too(oc):
    """Straight to a target's S3 root (where redirect-mode clients go), a
    key is held to the same owners: bob may not read alice's object there."""
    a = who(oc, "alice")
    a.create_bucket(Bucket="direct")
    a.put_object(Bucket="direct", Key="k", Body=b"alice's")
    seen = set()
    for t in oc.target_names():
        url = "%s/direct/k" % oc.node_url(t)
        rb = requests.get(url, headers=sign_as("bob", "GET", url), allow_redirects=False)
        ra = requests.get(url, headers=sign_as("alice", "GET", url), allow_redirects=False)
        seen.add((ra.status_code, rb.status_code))
        # refused at the owner; another target sends the read on to the owner
        assert rb.status_code in (403, 307), rb.text
        assert rb.status_code == 307 or "<Code>AccessDenied</Code>" in rb.text, rb.text
        assert ra.status_code in (200, 307), ra.text
        assert (ra.status_code == 200) == (rb.status_code == 403), (ra.text, rb.text)
    assert (200, 403) in seen                # the owner's target served alice


def test_no_way_around_the_owner(oc):
    """A copy's source is judged as the copy reads it (however its name is
    encoded), a public-read source may be copied by anyone; unsigned
    requests get no response-* overrides and create no bucket; nobody but
    an admin key opens a bucket with no owner to the world, or sets owners
    through the native API; the bucket-owner ACLs are private."""
    a, b = who(oc, "alice"), who(oc, "bob")
    a.create_bucket(Bucket="vault")
    a.put_object(Bucket="vault", Key="secret", Body=b"alice only")
    a.put_object(Bucket="vault", Key="shared", Body=b"for all", ACL="public-read")
    b.create_bucket(Bucket="bobs2")
    url = oc.url + "/s3/bobs2/loot"
    for src in ("vault%2Fsecret", "%2Fvault/secret", "/vault/secret",
                "".join("%%%02X" % ord(ch) for ch in "vault") + "/secret"):
        h = {"x-amz-copy-source": src}
        r = requests.put(url, headers=sign_as("bob", "PUT", url, h))
        assert r.status_code in (403, 400), (src, r.text)
        assert "alice only" not in r.text
    assert denied(b.get_object, Bucket="bobs2", Key="loot")[1] == 404
    b.copy_object(Bucket="bobs2", Key="copied", CopySource={"Bucket": "vault", "Key": "shared"})
    assert b.get_object(Bucket="bobs2", Key="copied")["Body"].read() == b"for all"
    # unsigned: no header overrides, no bucket creation
    r = requests.get(oc.url + "/s3/vault/shared?response-content-type=text/html")
    assert r.status_code == 400 and "<Code>InvalidRequest</Code>" in r.text
    assert requests.get(oc.url + "/s3/vault/shared").content == b"for all"
    r = requests.put(oc.url + "/s3/newbucket-unsigned")
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text
    # a header value never ends its line (signed, the owner's own request)
    g = a.get_object(Bucket="vault", Key="shared", ResponseContentDisposition="a\r\nX-Injected: 1")
    h = g["ResponseMetadata"]["HTTPHeaders"]
    assert "x-injected" not in h and h["content-disposition"] == "a  X-Injected: 1", h
    # a bucket made through the native API is its creator's, as through S3:
    # another key neither writes it nor opens it to the world; an owner is
    # set by an admin key only
    nat = requests.Session()
    from conftest import SigV4
    nat.auth = SigV4("bob", KEYS["bob"])
    assert nat.put(oc.url + "/v1/buckets/common").status_code == 201
    assert nat.get(oc.url + "/v1/buckets/common").json()["props"]["owner"] == "bob"
    b.put_object(Bucket="common", Key="k", Body=b"x")
    assert denied(a.put_object, Bucket="common", Key="k", Body=b"y")[1] == 403
    assert denied(a.put_bucket_acl, Bucket="common", ACL="public-read")[1] == 403
    b.put_bucket_acl(Bucket="common", ACL="private")
    who(oc, "ops").put_bucket_acl(Bucket="common", ACL="private")
    r = nat.patch(oc.url + "/v1/buckets/vault", json={"owner": "bob"})
    assert r.status_code == 403
    assert denied(b.list_objects_v2, Bucket="vault")[1] == 403
    a.put_object(Bucket="vault", Key="bofc", Body=b"x", ACL="bucket-owner-full-control")
    assert requests.get(oc.url + "/s3/vault/bofc").status_code == 403
