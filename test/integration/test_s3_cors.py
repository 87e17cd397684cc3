"""Bucket CORS rules (PutBucketCors, GetBucketCors, DeleteBucketCors) and
the answers a browser gets from them: a preflight (OPTIONS, never signed)
is 200 with the Access-Control-* headers of the first matching rule or
403 CORSResponse, and an actual request with an Origin carries the same
headers whatever its own answer; on a proxy and on a target's S3 root."""
import random

import botocore
import pytest
import requests

from test_s3 import client, err, s3, s3c, signed  # noqa: F401 (fixtures)

RULES = [
    {"ID": "app", "AllowedOrigins": ["https://app.example.org", "https://*.cdn.example.org"],
     "AllowedMethods": ["GET", "PUT", "HEAD"], "AllowedHeaders": ["x-amz-*", "content-type"],
     "ExposeHeaders": ["ETag", "x-amz-version-id"], "MaxAgeSeconds": 600},
    {"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]},
]


@pytest.fixture
def cb(s3):
    name = "cors%06d" % random.randrange(10**6)
    s3.create_bucket(Bucket=name)
    s3.put_object(Bucket=name, Key="k", Body=b"cors body")
    yield name
    for o in s3.list_objects_v2(Bucket=name).get("Contents", []):
        s3.delete_object(Bucket=name, Key=o["Key"])
    s3.delete_bucket(Bucket=name)


def preflight(url, origin, method, headers=None):
    h = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers:
        h["Access-Control-Request-Headers"] = headers
    return requests.options(url, headers=h, allow_redirects=False)


def test_rules_round_trip_and_removal(s3c, s3, cb):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_bucket_cors(Bucket=cb)
    assert err(e) == ("NoSuchCORSConfiguration", 404)
    s3.put_bucket_cors(Bucket=cb, CORSConfiguration={"CORSRules": RULES})
    got = s3.get_bucket_cors(Bucket=cb)["CORSRules"]
    assert got == RULES, got
    # the same rules are the bucket's "cors" property on the native API
    props = s3c.http.get(s3c.url + "/v1/buckets/" + cb).json()
    cors = props.get("props", props).get("cors")
    assert cors and cors[0]["origins"] == RULES[0]["AllowedOrigins"], props
    assert cors[0]["max_age"] == 600 and cors[1]["methods"] == ["GET"], props
    s3.delete_bucket_cors(Bucket=cb)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_bucket_cors(Bucket=cb)
    assert err(e) == ("NoSuchCORSConfiguration", 404)
    s3.delete_bucket_cors(Bucket=cb)        # removing none is no error
    assert s3.get_object(Bucket=cb, Key="k")["Body"].read() == b"cors body"


def test_preflights(s3c, s3, cb):
    url = "%s/s3/%s/k" % (s3c.url, cb)
    r = preflight(url, "https://app.example.org", "PUT")
    assert r.status_code == 403 and "<Code>CORSResponse</Code>" in r.text, r.text
    s3.put_bucket_cors(Bucket=cb, CORSConfiguration={"CORSRules": RULES})
    r = preflight(url, "https://app.example.org", "PUT", "X-Amz-Meta-A, Content-Type")
    assert r.status_code == 200, r.text
    h = r.headers
    assert h["Access-Control-Allow-Origin"] == "https://app.example.org"
    assert set(h["Access-Control-Allow-Methods"].replace(" ", "").split(",")) == \
        {"GET", "PUT", "HEAD"}
    assert h["Access-Control-Max-Age"] == "600"
    assert "x-amz-meta-a" in h["Access-Control-Allow-Headers"].lower()
    assert "Origin" in h.get("Vary", "")
    # a wildcard inside an origin
    r = preflight(url, "https://eu.cdn.example.org", "GET")
    assert r.status_code == 200 and \
        r.headers["Access-Control-Allow-Origin"] == "https://eu.cdn.example.org"
    # a header no rule allows; a method only the first rule allows from elsewhere
    r = preflight(url, "https://app.example.org", "PUT", "x-secret")
    assert r.status_code == 403 and "<Code>CORSResponse</Code>" in r.text, r.text
    r = preflight(url, "https://other.example.com", "PUT")
    assert r.status_code == 403, r.text
    # any origin may GET: "*" answers "*"
    r = preflight(url, "https://other.example.com", "GET")
    assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == "*", r.headers
    # a method no rule knows, and the bucket level
    assert preflight(url, "https://app.example.org", "DELETE").status_code == 403
    r = preflight("%s/s3/%s" % (s3c.url, cb), "https://app.example.org", "GET")
    assert r.status_code == 200, r.text
    # a target's S3 root answers from the same rules
    for t in s3c.target_names():
        r = preflight("%s/%s/k" % (s3c.node_url(t), cb), "https://app.example.org", "PUT")
        assert r.status_code == 200, r.text
        assert r.headers["Access-Control-Allow-Origin"] == "https://app.example.org"
        r = preflight("%s/%s/k" % (s3c.node_url(t), cb), "https://other.example.com", "PUT")
        assert r.status_code == 403 and "<Code>CORSResponse</Code>" in r.text, r.text


def test_actual_requests_carry_the_headers(s3c, s3, cb):
    s3.put_bucket_cors(Bucket=cb, CORSConfiguration={"CORSRules": RULES})
    url = "%s/s3/%s/k" % (s3c.url, cb)
    r = requests.get(url, headers=signed("GET", url, b"", {"Origin": "https://app.example.org"}))
    assert r.status_code == 200 and r.content == b"cors body"
    assert r.headers["Access-Control-Allow-Origin"] == "https://app.example.org", r.headers
    assert "etag" in r.headers["Access-Control-Expose-Headers"].lower()
    r = requests.put(url, data=b"new",
                     headers=signed("PUT", url, b"new", {"Origin": "https://app.example.org"}))
    assert r.status_code == 200 and \
        r.headers["Access-Control-Allow-Origin"] == "https://app.example.org", r.headers
    # an error answer carries them too; an origin no rule allows gets none
    miss = url + "-missing"
    r = requests.get(miss, headers=signed("GET", miss, b"", {"Origin": "https://app.example.org"}))
    assert r.status_code == 404 and "Access-Control-Allow-Origin" in r.headers
    r = requests.put(url, data=b"x",
                     headers=signed("PUT", url, b"x", {"Origin": "https://other.example.com"}))
    assert r.status_code == 200 and "Access-Control-Allow-Origin" not in r.headers
    r = requests.get(url, headers=signed("GET", url))
    assert "Access-Control-Allow-Origin" not in r.headers
    assert s3.get_object(Bucket=cb, Key="k")["Body"].read() == b"x"


BAD = [
    b"<CORSConfiguration/>",                                   # no rule
    b"<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule>"
    b"</CORSConfiguration>",                                   # no origin
    b"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
    b"<AllowedMethod>PATCH</AllowedMethod></CORSRule></CORSConfiguration>",  # no such method
    b"<CORSConfiguration><CORSRule><AllowedOrigin>https://*.*.org</AllowedOrigin>"
    b"<AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>",    # two wildcards
    b"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
    b"<AllowedMethod>GET</AllowedMethod><MaxAgeSeconds>soon</MaxAgeSeconds></CORSRule>"
    b"</CORSConfiguration>",
    b"<CORSConfiguration><CORSRule>",                          # cut
]


def test_bad_rules(s3c, s3, cb):
    url = "%s/s3/%s?cors" % (s3c.url, cb)
    for body in BAD:
        r = requests.put(url, data=body, headers=signed("PUT", url, body))
        assert r.status_code == 400, (body, r.status_code, r.text)
        assert "<Code>" in r.text and "<Code>InternalError" not in r.text, r.text
    many = b"<CORSConfiguration>" + b"".join(
        b"<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"
        b"</CORSRule>" for _ in range(101)) + b"</CORSConfiguration>"
    r = requests.put(url, data=many, headers=signed("PUT", url, many))
    assert r.status_code == 400, r.text
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_bucket_cors(Bucket=cb)
    assert err(e) == ("NoSuchCORSConfiguration", 404)   # nothing half-set
    # an object has no CORS rules of its own
    r = requests.get(url.replace("?cors", "/k?cors"),
                     headers=signed("GET", url.replace("?cors", "/k?cors")))
    assert r.status_code in (400, 405, 501) and "<Code>" in r.text, r.text


def test_native_property(s3c, s3, cb):
    """PATCH {"cors": [{"origins", "methods", "headers", "expose", "id",
    "max_age"}]} is checked as strictly as the XML; a null in
    the patch removes the property (JSON merge patch)."""
    u = s3c.url + "/v1/buckets/" + cb
    for bad in ("everything", [{"origins": ["*"]}], [{"origins": [], "methods": ["GET"]}],
                [{"origins": ["*"], "methods": ["BREW"]}], [{"origins": ["*"],
                 "methods": ["GET"], "max_age": -1}], [{"origins": ["*"], "methods": ["GET"],
                                                        "AllowedHeaders": ["*"]}]):
        r = s3c.http.patch(u, json={"cors": bad})
        assert r.status_code == 400, (bad, r.text)
    r = s3c.http.patch(u, json={"cors": [{"origins": ["*"], "methods": ["GET"]}]})
    assert r.status_code in (200, 204), r.text
    assert s3.get_bucket_cors(Bucket=cb)["CORSRules"] == \
        [{"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]}]
    r = s3c.http.patch(u, json={"cors": None})
    assert r.status_code in (200, 204), r.text
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_bucket_cors(Bucket=cb)
    assert err(e) == ("NoSuchCORSConfiguration", 404)
