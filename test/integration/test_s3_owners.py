"""Buckets have owners and canned ACLs (S3 fidelity): the access key that
created a bucket owns it, another key creating the name gets 409
BucketAlreadyExists and may not touch it, admin keys may use every bucket;
public-read buckets are listed and public-read objects read without a
signature; an unsigned request to a bucket that does not exist is 404."""
import pytest
import requests

from conftest import Cluster
from test_s3 import client, err

KEYS = {"alice": "alice-secret", "bob": "bob-secret", "ops": "ops-secret",
        "carol": "carol-secret"}
ALICE_ID = "a1ice0000000000000000000000000000000000000000000000000000000000a"


def default_id(key):
    """A key without a users entry: its ID is a SHA-256 of it."""
    import hashlib
    return hashlib.sha256(b"shoal user\n" + key.encode()).hexdigest()


@pytest.fixture(scope="module")
def oc():
    c = Cluster(targets=2, mountpaths=1,
                extra="--s3_api_keys %s --admin_keys ops --users %s:%s:Alice,carol::Carol:"
                      "carol@example.org" %
                      (",".join("%s:%s" % kv for kv in KEYS.items()), "alice", ALICE_ID)).start()
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
    assert acl["Owner"] == {"ID": ALICE_ID, "DisplayName": "Alice"}, acl
    # the owner S3 names elsewhere: the account asking, the bucket's owner
    assert a.list_buckets()["Owner"]["ID"] == ALICE_ID
    assert b.list_buckets()["Owner"] == {"ID": default_id("bob"), "DisplayName": "bob"}
    # (an admin key's writes are the bucket owner's)
    assert {o["Owner"]["ID"] for o in
            ops.list_objects_v2(Bucket="alices", FetchOwner=True)["Contents"]} == {ALICE_ID}
    assert a.get_object_acl(Bucket="alices", Key="ops")["Owner"]["ID"] == ALICE_ID
    u = a.create_multipart_upload(Bucket="alices", Key="up")["UploadId"]
    up = a.list_multipart_uploads(Bucket="alices")["Uploads"][0]
    assert up["Owner"]["ID"] == up["Initiator"]["ID"] == ALICE_ID
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
    # public-read-write: anyone writes; authenticated-read: any signed key reads
    a.create_bucket(Bucket="rwbucket", ACL="public-read-write")
    assert requests.put(oc.url + "/s3/rwbucket/anon", data=b"anon's").status_code == 200
    assert a.get_object(Bucket="rwbucket", Key="anon")["Body"].read() == b"anon's"
    assert requests.delete(oc.url + "/s3/rwbucket/anon").status_code == 204
    assert denied(b.put_bucket_acl, Bucket="rwbucket", ACL="private")[1] == 403
    assert denied(b.delete_bucket, Bucket="rwbucket")[1] == 403     # the owner's alone
    a.put_object(Bucket="pub", Key="rw", Body=b"x", ACL="authenticated-read")
    assert b.get_object(Bucket="pub", Key="rw")["Body"].read() == b"x"
    assert requests.get(url + "rw").status_code == 403
    assert denied(b.put_object_acl, Bucket="pub", Key="open", ACL="public-read")[1] == 403
    # a canned ACL S3 does not define; aws-exec-read grants EC2 alone
    assert denied(a.put_object, Bucket="pub", Key="n", Body=b"x", ACL="everyone") == \
        ("InvalidArgument", 400)
    a.put_object_acl(Bucket="pub", Key="rw", ACL="aws-exec-read")
    assert denied(b.get_object, Bucket="pub", Key="rw")[1] == 403
    assert requests.get(url + "rw").status_code == 403
    # a public-read bucket made at creation
    a.create_bucket(Bucket="pub2", ACL="public-read")
    assert requests.get(oc.url + "/s3/pub2?list-type=2").status_code == 200


def sign_as(key, method, url, headers=None, body=b""):
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
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


def node_signed(c, method, base, path_query):
    """path_query on base, signed as a proxy signs what it routes."""
    import hmac
    import os
    import time
    secret = open(os.path.join(c.data, "cluster.secret")).read().strip().encode()
    pq = "%s%sshoal_exp=%d" % (path_query, "&" if "?" in path_query else "?",
                               int(time.time()) + 60)
    sig = hmac.new(secret, ("%s\n%s" % (method, pq)).encode(), "sha256").hexdigest()
    return "%s%s&shoal_sig=%s" % (base, pq, sig)


def test_a_named_caller_too_long_is_nobody(oc):
    """A caller a proxy names for an object's ACL that a target cannot read
    whole is no key: it reads what anonymous may, not what the proxy
    decided."""
    a = who(oc, "alice")
    a.create_bucket(Bucket="named")
    a.put_object(Bucket="named", Key="k", Body=b"alice's")
    seen = []
    for t in oc.target_names():              # a routed request is not redirected: the
        got = tuple(requests.get(node_signed(  # owner's target answers, the other has none
            oc, "GET", oc.node_url(t), "/v1/objects/named/k?shoal_who=" + caller)).status_code
            for caller in ("alice", "a" * 300, ""))
        seen.append(got)
    assert sorted(seen) == [(200, 403, 403), (404, 403, 403)], seen


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


def grant_of(g):
    e = g["Grantee"]
    return (e.get("ID") or e.get("URI", "").rsplit("/", 1)[-1], g["Permission"])


def test_grants(oc):
    """Explicit grants by canonical ID, by email and to the groups, through
    grant headers and AccessControlPolicy bodies, on a bucket and an
    object: each permission gives what S3 gives (READ lists a bucket or
    reads an object, WRITE writes a bucket's objects, READ_ACP and
    WRITE_ACP read and change the ACL), on the S3 API, the native API and a
    target's own S3 root; unknown grantees are refused."""
    a, b, c = who(oc, "alice"), who(oc, "bob"), who(oc, "carol")
    bob, carol = default_id("bob"), default_id("carol")
    a.create_bucket(Bucket="granted")
    a.put_object(Bucket="granted", Key="k", Body=b"alice's k")
    assert denied(b.list_objects_v2, Bucket="granted")[1] == 403
    # bucket: bob may list it and read its ACL; carol (by email) may write
    a.put_bucket_acl(Bucket="granted", GrantRead="id=%s" % bob, GrantReadACP="id=%s" % bob,
                     GrantWrite='emailAddress="carol@example.org"',
                     GrantFullControl="id=%s" % ALICE_ID)
    got = a.get_bucket_acl(Bucket="granted")
    assert sorted(grant_of(g) for g in got["Grants"]) == sorted(
        [(bob, "READ"), (bob, "READ_ACP"), (carol, "WRITE"), (ALICE_ID, "FULL_CONTROL")]), got
    names = {g["Grantee"].get("DisplayName") for g in got["Grants"]}
    assert {"bob", "Carol", "Alice"} <= names, got
    assert [o["Key"] for o in b.list_objects_v2(Bucket="granted")["Contents"]] == ["k"]
    assert b.get_bucket_acl(Bucket="granted")["Owner"]["ID"] == ALICE_ID
    assert denied(b.put_object, Bucket="granted", Key="b", Body=b"x")[1] == 403
    assert denied(b.put_bucket_acl, Bucket="granted", ACL="public-read")[1] == 403
    assert denied(b.get_object, Bucket="granted", Key="k")[1] == 403   # objects: their own ACL
    c.put_object(Bucket="granted", Key="from-carol", Body=b"carol's")
    assert denied(c.list_objects_v2, Bucket="granted")[1] == 403
    assert denied(c.get_bucket_acl, Bucket="granted")[1] == 403
    c.delete_object(Bucket="granted", Key="from-carol")
    assert denied(c.put_bucket_tagging, Bucket="granted",
                  Tagging={"TagSet": [{"Key": "a", "Value": "b"}]})[1] == 403
    # object: bob may read it; carol may read its ACL and change it
    body = ('<AccessControlPolicy><Owner><ID>%s</ID></Owner><AccessControlList>'
            '<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
            'xsi:type="CanonicalUser"><ID>%s</ID></Grantee><Permission>FULL_CONTROL</Permission>'
            '</Grant><Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
            'xsi:type="CanonicalUser"><ID>%s</ID></Grantee><Permission>READ</Permission></Grant>'
            '<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
            'xsi:type="AmazonCustomerByEmail"><EmailAddress>carol@example.org</EmailAddress>'
            '</Grantee><Permission>READ_ACP</Permission></Grant><Grant><Grantee '
            'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser">'
            '<ID>%s</ID></Grantee><Permission>WRITE_ACP</Permission></Grant>'
            '</AccessControlList></AccessControlPolicy>') % (ALICE_ID, ALICE_ID, bob, carol)
    url = oc.url + "/s3/granted/k?acl"
    r = requests.put(url, data=body, headers=sign_as("alice", "PUT", url, body=body.encode()))
    assert r.status_code == 200, r.text
    assert b.get_object(Bucket="granted", Key="k")["Body"].read() == b"alice's k"
    assert requests.get(oc.url + "/s3/granted/k").status_code == 403
    assert denied(b.get_object_acl, Bucket="granted", Key="k")[1] == 403
    got = c.get_object_acl(Bucket="granted", Key="k")
    assert (bob, "READ") in [grant_of(g) for g in got["Grants"]], got
    assert denied(c.get_object, Bucket="granted", Key="k")[1] == 403
    # the native API reads by the same grants, through the proxy and at a target
    nat = requests.Session()
    from conftest import SigV4
    nat.auth = SigV4("bob", KEYS["bob"])
    assert nat.get(oc.url + "/v1/objects/granted/k").content == b"alice's k"
    nat.auth = SigV4("carol", KEYS["carol"])
    assert nat.get(oc.url + "/v1/objects/granted/k").status_code == 403
    for t in oc.target_names():
        u = "%s/granted/k" % oc.node_url(t)
        r = requests.get(u, headers=sign_as("bob", "GET", u), allow_redirects=False)
        assert r.status_code in (200, 307), r.text
        assert r.status_code == 307 or r.content == b"alice's k"
    # carol's WRITE_ACP: she opens it to everyone, then takes bob's away
    c.put_object_acl(Bucket="granted", Key="k", GrantRead="uri=http://acs.amazonaws.com/"
                     "groups/global/AllUsers", GrantWriteACP="id=%s" % carol)
    assert requests.get(oc.url + "/s3/granted/k").content == b"alice's k"
    assert b.get_object(Bucket="granted", Key="k")["Body"].read() == b"alice's k"
    c.put_object_acl(Bucket="granted", Key="k", ACL="private")
    assert requests.get(oc.url + "/s3/granted/k").status_code == 403
    assert denied(b.get_object, Bucket="granted", Key="k")[1] == 403
    assert denied(c.put_object_acl, Bucket="granted", Key="k", ACL="public-read")[1] == 403
    assert a.get_object_acl(Bucket="granted", Key="k")["Grants"] == [
        {"Grantee": {"ID": ALICE_ID, "DisplayName": "Alice", "Type": "CanonicalUser"},
         "Permission": "FULL_CONTROL"}]
    # AuthenticatedUsers: any signed key, never an unsigned request
    a.put_object(Bucket="granted", Key="signed", Body=b"s",
                 GrantRead="uri=http://acs.amazonaws.com/groups/global/AuthenticatedUsers")
    assert b.get_object(Bucket="granted", Key="signed")["Body"].read() == b"s"
    assert requests.get(oc.url + "/s3/granted/signed").status_code == 403
    # grantees that are nobody
    assert denied(a.put_object_acl, Bucket="granted", Key="k", GrantRead="id=nobody") == \
        ("InvalidArgument", 400)
    assert denied(a.put_bucket_acl, Bucket="granted",
                  GrantRead='emailAddress="nobody@example.org"') == \
        ("UnresolvableGrantByEmailAddress", 400)
    assert denied(a.put_object_acl, Bucket="granted", Key="k", ACL="private",
                  GrantRead="id=%s" % bob) == ("InvalidRequest", 400)
    # the native bucket property carries the same grants, checked
    nat.auth = SigV4("alice", KEYS["alice"])
    acl = nat.get(oc.url + "/v1/buckets/granted").json()["props"]["acl"]
    assert {"perm": "WRITE", "key": "carol"} in acl, acl
    r = nat.patch(oc.url + "/v1/buckets/granted", json={"acl": [{"perm": "ALL", "key": "x"}]})
    assert r.status_code == 400, r.text


def test_public_access_block(oc):
    """PutPublicAccessBlock, read back and removed; BlockPublicAcls refuses
    public ACLs (403) on objects and the bucket, IgnorePublicAcls makes the
    public ones there count for nothing, on every door; malformed bodies
    and native values 400."""
    a, b = who(oc, "alice"), who(oc, "bob")
    a.create_bucket(Bucket="pabb")
    a.put_object(Bucket="pabb", Key="open", Body=b"open", ACL="public-read")
    url = oc.url + "/s3/pabb/open"
    assert denied(a.get_public_access_block, Bucket="pabb") == \
        ("NoSuchPublicAccessBlockConfiguration", 404)
    a.put_public_access_block(Bucket="pabb", PublicAccessBlockConfiguration={
        "BlockPublicAcls": True})
    got = a.get_public_access_block(Bucket="pabb")["PublicAccessBlockConfiguration"]
    assert got == {"BlockPublicAcls": True, "IgnorePublicAcls": False,
                   "BlockPublicPolicy": False, "RestrictPublicBuckets": False}, got
    assert denied(a.put_object, Bucket="pabb", Key="p", Body=b"x", ACL="public-read") == \
        ("AccessDenied", 403)
    assert denied(a.put_object_acl, Bucket="pabb", Key="open",
                  GrantRead="uri=http://acs.amazonaws.com/groups/global/"
                            "AuthenticatedUsers")[1] == 403
    assert denied(a.put_bucket_acl, Bucket="pabb", ACL="public-read")[1] == 403
    a.put_object(Bucket="pabb", Key="p", Body=b"x", ACL="private")
    a.put_object_acl(Bucket="pabb", Key="p", GrantRead="id=%s" % default_id("bob"))
    assert b.get_object(Bucket="pabb", Key="p")["Body"].read() == b"x"
    assert requests.get(url).content == b"open"       # what was public stays so
    assert denied(b.put_public_access_block, Bucket="pabb", PublicAccessBlockConfiguration={
        "BlockPublicAcls": False})[1] == 403            # the owner's alone
    # IgnorePublicAcls: AllUsers and AuthenticatedUsers grants count for nothing
    a.put_public_access_block(Bucket="pabb", PublicAccessBlockConfiguration={
        "IgnorePublicAcls": True})
    assert requests.get(url).status_code == 403
    assert denied(b.get_object, Bucket="pabb", Key="open")[1] == 403
    assert b.get_object(Bucket="pabb", Key="p")["Body"].read() == b"x"   # bob's own grant
    for t in oc.target_names():
        r = requests.get("%s/pabb/open" % oc.node_url(t), allow_redirects=False)
        assert r.status_code in (403, 307), r.text
    a.delete_public_access_block(Bucket="pabb")
    assert requests.get(url).content == b"open"
    assert denied(a.get_public_access_block, Bucket="pabb")[1] == 404
    u = oc.url + "/s3/pabb?publicAccessBlock"
    for body in (b"<PublicAccessBlockConfiguration><BlockPublicAcls>maybe</BlockPublicAcls>"
                 b"</PublicAccessBlockConfiguration>", b"<Other/>", b"<PublicAccess"):
        r = requests.put(u, data=body, headers=sign_as("alice", "PUT", u, body=body))
        assert r.status_code == 400 and "<Code>MalformedXML</Code>" in r.text, r.text
    from conftest import SigV4
    nat = requests.Session()
    nat.auth = SigV4("alice", KEYS["alice"])
    r = nat.patch(oc.url + "/v1/buckets/pabb",
                  json={"public_access_block": {"block_public_acls": "yes"}})
    assert r.status_code == 400, r.text
    r = nat.patch(oc.url + "/v1/buckets/pabb",
                  json={"public_access_block": {"ignore_public_acls": True}})
    assert r.status_code in (200, 204), r.text
    assert requests.get(url).status_code == 403


def test_ownership_controls(oc):
    """OwnershipControls read back, changed and removed; BucketOwnerEnforced
    (at creation or later) turns ACLs off: setting any but the owner's
    private one is 400 AccessControlListNotSupported, ACLs already there
    grant nothing, and a bucket whose ACL grants others cannot take it."""
    a, b = who(oc, "alice"), who(oc, "bob")
    a.create_bucket(Bucket="ownb")
    assert denied(a.get_bucket_ownership_controls, Bucket="ownb") == \
        ("OwnershipControlsNotFoundError", 404)
    a.put_bucket_ownership_controls(Bucket="ownb", OwnershipControls={
        "Rules": [{"ObjectOwnership": "ObjectWriter"}]})
    assert a.get_bucket_ownership_controls(Bucket="ownb")["OwnershipControls"] == \
        {"Rules": [{"ObjectOwnership": "ObjectWriter"}]}
    a.put_object(Bucket="ownb", Key="open", Body=b"open", ACL="public-read")
    assert requests.get(oc.url + "/s3/ownb/open").content == b"open"
    # enforced: the public object is no longer public, no ACL may be set
    a.put_bucket_ownership_controls(Bucket="ownb", OwnershipControls={
        "Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
    assert requests.get(oc.url + "/s3/ownb/open").status_code == 403
    assert denied(b.get_object, Bucket="ownb", Key="open")[1] == 403
    assert denied(a.put_object, Bucket="ownb", Key="k", Body=b"x", ACL="public-read") == \
        ("AccessControlListNotSupported", 400)
    assert denied(a.put_object_acl, Bucket="ownb", Key="open",
                  GrantRead="id=%s" % default_id("bob")) == \
        ("AccessControlListNotSupported", 400)
    assert denied(a.put_bucket_acl, Bucket="ownb", ACL="authenticated-read") == \
        ("AccessControlListNotSupported", 400)
    a.put_object(Bucket="ownb", Key="k", Body=b"x", ACL="bucket-owner-full-control")
    a.put_object_acl(Bucket="ownb", Key="open", ACL="private")
    a.put_bucket_acl(Bucket="ownb", ACL="private")
    a.delete_bucket_ownership_controls(Bucket="ownb")
    assert denied(a.get_bucket_ownership_controls, Bucket="ownb")[1] == 404
    # at creation; with an ACL that grants others
    a.create_bucket(Bucket="ownb2", ObjectOwnership="BucketOwnerEnforced")
    assert a.get_bucket_ownership_controls(Bucket="ownb2")["OwnershipControls"]["Rules"] == \
        [{"ObjectOwnership": "BucketOwnerEnforced"}]
    assert denied(a.create_bucket, Bucket="ownb3", ACL="public-read",
                  ObjectOwnership="BucketOwnerEnforced") == \
        ("InvalidBucketAclWithObjectOwnership", 400)
    assert denied(a.create_bucket, Bucket="ownb3", ObjectOwnership="Whoever") == \
        ("InvalidArgument", 400)
    a.create_bucket(Bucket="ownb3", ACL="public-read", ObjectOwnership="BucketOwnerPreferred")
    assert denied(a.put_bucket_ownership_controls, Bucket="ownb3", OwnershipControls={
        "Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}) == \
        ("InvalidBucketAclWithObjectOwnership", 400)
    u = oc.url + "/s3/ownb3?ownershipControls"
    for body in (b"<OwnershipControls/>",
                 b"<OwnershipControls><Rule><ObjectOwnership>Me</ObjectOwnership></Rule>"
                 b"</OwnershipControls>",
                 b"<OwnershipControls><Rule><ObjectOwnership>ObjectWriter</ObjectOwnership>"
                 b"</Rule><Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule>"
                 b"</OwnershipControls>"):
        r = requests.put(u, data=body, headers=sign_as("alice", "PUT", u, body=body))
        assert r.status_code == 400 and "<Code>MalformedXML</Code>" in r.text, r.text
    assert a.get_bucket_ownership_controls(Bucket="ownb3")["OwnershipControls"]["Rules"] == \
        [{"ObjectOwnership": "BucketOwnerPreferred"}]


def test_object_writers(oc):
    """A key with WRITE on another's bucket owns what it writes (S3's
    ObjectWriter, also without OwnershipControls): it reads it and its
    ACL, others only by grant; BucketOwnerPreferred gives the bucket's
    owner what comes with bucket-owner-full-control; BucketOwnerEnforced,
    everything. A target's root believes no writer a client names."""
    a, b, c = who(oc, "alice"), who(oc, "bob"), who(oc, "carol")
    bob = default_id("bob")
    a.create_bucket(Bucket="writers")
    a.put_bucket_acl(Bucket="writers", GrantWrite="id=%s" % bob,
                     GrantFullControl="id=%s" % ALICE_ID)
    owner = lambda k: a.get_object_acl(Bucket="writers", Key=k)["Owner"]["ID"]  # noqa: E731
    b.put_object(Bucket="writers", Key="bobs", Body=b"bob's")
    assert b.get_object(Bucket="writers", Key="bobs")["Body"].read() == b"bob's"
    assert b.get_object_acl(Bucket="writers", Key="bobs")["Owner"]["ID"] == bob
    assert owner("bobs") == bob
    assert denied(c.get_object, Bucket="writers", Key="bobs")[1] == 403
    b.put_object_acl(Bucket="writers", Key="bobs", GrantRead="id=%s" % default_id("carol"))
    assert c.get_object(Bucket="writers", Key="bobs")["Body"].read() == b"bob's"
    b.put_object(Bucket="writers", Key="shared", Body=b"x", ACL="bucket-owner-full-control")
    grants = sorted((g["Grantee"]["ID"], g["Permission"])
                    for g in a.get_object_acl(Bucket="writers", Key="shared")["Grants"])
    assert grants == sorted([(bob, "FULL_CONTROL"), (ALICE_ID, "FULL_CONTROL")]), grants
    b.copy_object(Bucket="writers", Key="copied", CopySource={"Bucket": "writers",
                                                              "Key": "bobs"})
    assert owner("copied") == bob
    # BucketOwnerPreferred: bucket-owner-full-control hands it over
    a.put_bucket_ownership_controls(Bucket="writers", OwnershipControls={
        "Rules": [{"ObjectOwnership": "BucketOwnerPreferred"}]})
    b.put_object(Bucket="writers", Key="handed", Body=b"h", ACL="bucket-owner-full-control")
    assert owner("handed") == ALICE_ID
    assert denied(b.get_object, Bucket="writers", Key="handed")[1] == 403
    b.put_object(Bucket="writers", Key="kept", Body=b"k")
    assert owner("kept") == bob
    # listings name each object's owner, writers' included
    want = {"bobs": bob, "shared": bob, "copied": bob, "handed": ALICE_ID, "kept": bob}
    v1 = a.list_objects(Bucket="writers")["Contents"]
    assert {o["Key"]: o["Owner"]["ID"] for o in v1} == want
    assert {o["Key"]: o["Owner"]["DisplayName"] for o in v1}["bobs"] == "bob"
    v2 = a.list_objects_v2(Bucket="writers", FetchOwner=True)["Contents"]
    assert {o["Key"]: o["Owner"]["ID"] for o in v2} == want
    vs = a.list_object_versions(Bucket="writers")["Versions"]
    assert {o["Key"]: o["Owner"]["ID"] for o in vs} == want
    # straight to a target's root: the signer writes, whatever the query says
    a.put_bucket_ownership_controls(Bucket="writers", OwnershipControls={
        "Rules": [{"ObjectOwnership": "ObjectWriter"}]})
    for t in oc.target_names():
        u = "%s/writers/direct?shoal_writer=carol" % oc.node_url(t)
        r = requests.put(u, data=b"d", headers=sign_as("bob", "PUT", u, body=b"d"),
                         allow_redirects=False)
        assert r.status_code in (200, 307), r.text
        if r.status_code == 200:
            assert owner("direct") == bob
    # BucketOwnerEnforced: the bucket's owner's, whoever writes
    a.put_bucket_acl(Bucket="writers", ACL="private")
    a.put_bucket_ownership_controls(Bucket="writers", OwnershipControls={
        "Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
    assert denied(b.put_object, Bucket="writers", Key="late", Body=b"l")[1] == 403
    a.delete_bucket_ownership_controls(Bucket="writers")
    a.put_bucket_acl(Bucket="writers", GrantWrite="id=%s" % bob)
    a.put_bucket_ownership_controls(Bucket="writers", OwnershipControls={
        "Rules": [{"ObjectOwnership": "BucketOwnerPreferred"}]})
    b.put_object(Bucket="writers", Key="late", Body=b"l", ACL="bucket-owner-full-control")
    assert owner("late") == ALICE_ID


def test_acl_of_a_version(oc):
    """?acl&versionId= reads and changes one version's ACL, and a read of
    that version is decided by it, not by the latest's."""
    a = who(oc, "alice")
    a.create_bucket(Bucket="vacl")
    a.put_bucket_versioning(Bucket="vacl", VersioningConfiguration={"Status": "Enabled"})
    old = a.put_object(Bucket="vacl", Key="k", Body=b"old")["VersionId"]
    new = a.put_object(Bucket="vacl", Key="k", Body=b"new")["VersionId"]
    a.put_object_acl(Bucket="vacl", Key="k", VersionId=old, ACL="public-read")
    grants = a.get_object_acl(Bucket="vacl", Key="k", VersionId=old)["Grants"]
    assert len(grants) == 2, grants
    assert len(a.get_object_acl(Bucket="vacl", Key="k", VersionId=new)["Grants"]) == 1
    assert len(a.get_object_acl(Bucket="vacl", Key="k")["Grants"]) == 1
    base = oc.url + "/s3/vacl/k"
    assert requests.get(base + "?versionId=" + old).content == b"old"
    assert requests.get(base + "?versionId=" + new).status_code == 403
    assert requests.get(base).status_code == 403
    assert a.get_object(Bucket="vacl", Key="k")["Body"].read() == b"new"   # bytes untouched
    assert a.get_object(Bucket="vacl", Key="k", VersionId=old)["Body"].read() == b"old"
    assert denied(a.get_object_acl, Bucket="vacl", Key="k", VersionId="0" * 16) == \
        ("NoSuchVersion", 404)
    assert denied(a.get_object_acl, Bucket="vacl", Key="k", VersionId="bad id")[1] == 400
    marker = a.delete_object(Bucket="vacl", Key="k")["VersionId"]
    assert denied(a.get_object_acl, Bucket="vacl", Key="k", VersionId=marker)[1] == 405
    assert requests.get(base + "?versionId=" + old).content == b"old"


def test_initiators_and_expected_owners(oc):
    """ListMultipartUploads names who started each upload; a request whose
    x-amz-expected-bucket-owner is not the bucket owner's ID is 403."""
    a, b = who(oc, "alice"), who(oc, "bob")
    a.create_bucket(Bucket="uploads")
    a.put_bucket_acl(Bucket="uploads", GrantWrite="id=%s" % default_id("bob"),
                     GrantFullControl="id=%s" % ALICE_ID)
    ub = b.create_multipart_upload(Bucket="uploads", Key="bobs")["UploadId"]
    ua = a.create_multipart_upload(Bucket="uploads", Key="alices")["UploadId"]
    ups = {u["Key"]: u for u in a.list_multipart_uploads(Bucket="uploads")["Uploads"]}
    assert ups["bobs"]["Initiator"]["ID"] == default_id("bob")
    assert ups["bobs"]["Initiator"]["DisplayName"] == "bob"
    assert ups["alices"]["Initiator"]["ID"] == ALICE_ID
    b.abort_multipart_upload(Bucket="uploads", Key="bobs", UploadId=ub)
    a.abort_multipart_upload(Bucket="uploads", Key="alices", UploadId=ua)
    a.list_objects_v2(Bucket="uploads", ExpectedBucketOwner=ALICE_ID)
    a.put_object(Bucket="uploads", Key="k", Body=b"x", ExpectedBucketOwner=ALICE_ID)
    assert denied(a.list_objects_v2, Bucket="uploads",
                  ExpectedBucketOwner=default_id("bob")) == ("AccessDenied", 403)
    assert denied(a.get_object, Bucket="uploads", Key="k",
                  ExpectedBucketOwner="123456789012") == ("AccessDenied", 403)
