"""Judges docs/clients/vectors with PyJWT (Debian's python3-jwt) and cryptography, independently of
the kit: prints one JSON object { tokens: {name: verdict}, manifests: {...}, devices: [...] }, where
a verdict is "valid" or the reason a token or signature is refused."""
import base64
import hashlib
import json
import os
import sys

import jwt

VARIANT_PREFIX = {"alpha": "alpha-device:", "beta": "beta-device:", "gamma": "gamma-device:"}

vectors = sys.argv[1]
index = json.load(open(os.path.join(vectors, "index.json")))
site = index["site"]


def read(name, mode="r"):
    with open(os.path.join(vectors, name), mode) as f:
        return f.read()


license_keys = {k["kid"]: read(k["publicPem"]) for k in index["keys"]["license"]}
release_keys = {k["kid"]: read(k["publicPem"]) for k in index["keys"]["release"]}


def judge_token(token, device_hash):
    try:
        header = jwt.get_unverified_header(token)
    except jwt.DecodeError:
        return "malformed"
    kid = header.get("kid")
    if kid not in license_keys:
        return "kid"
    try:
        claims = jwt.decode(token, license_keys[kid], algorithms=["ES256"], audience=site["aud"], issuer=site["iss"],
                            options={"require": ["exp", "iat", "nbf", "iss", "aud", "sub"]})
    except jwt.InvalidAlgorithmError:
        return "alg"
    except jwt.InvalidSignatureError:
        return "signature"
    except jwt.InvalidIssuerError:
        return "iss"
    except jwt.InvalidAudienceError:
        return "aud"
    except jwt.ExpiredSignatureError:
        return "exp"
    except jwt.ImmatureSignatureError:
        return "nbf"
    if header.get("typ") != site["typ"]:
        return "typ"
    if claims.get("dev") != device_hash:
        return "device"
    return "valid"


def judge_manifest(manifest_bytes, sig_text):
    head, empty, signature = sig_text.strip().split(".")
    if empty != "":
        return "malformed"
    header = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    kid = header.get("kid")
    if kid not in release_keys:
        return "kid"
    compact = head + "." + base64.urlsafe_b64encode(manifest_bytes).decode().rstrip("=") + "." + signature
    try:
        verified = jwt.PyJWS().decode_complete(compact, release_keys[kid], algorithms=["ES256"])
    except jwt.InvalidAlgorithmError:
        return "alg"
    except jwt.InvalidSignatureError:
        return "signature"
    if verified["header"].get("typ") != site["releaseTyp"]:
        return "typ"
    return "valid"


out = {
    "pyjwt": jwt.__version__,
    "tokens": {t["name"]: judge_token(t["token"], index["device"]["hash"]) for t in index["tokens"]},
    "manifests": {m["name"]: judge_manifest(read(m["manifest"], "rb"), read(m["signature"])) for m in index["manifests"]},
    "devices": [base64.urlsafe_b64encode(hashlib.sha256((VARIANT_PREFIX[d["variant"]] + d["id"]).encode()).digest()).decode().rstrip("=")
                for d in index["devices"]],
    # The terms tokens: each signature's verdict, and the upd and ent claims PyJWT reads (the
    # claims' own shape is the kit's check, not PyJWT's).
    "terms": {t["name"]: {"signature": judge_token(t["token"], index["device"]["hash"]),
                          "upd": jwt.decode(t["token"], options={"verify_signature": False}).get("upd"),
                          "ent": jwt.decode(t["token"], options={"verify_signature": False}).get("ent")}
              for t in index.get("terms", [])},
}
print(json.dumps(out))
