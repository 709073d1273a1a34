"""How bodies are stored (schema 0012): the three forms, each read back, and the dictionary frozen."""

from __future__ import annotations

import copy
import glob
import zlib
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_sktrace.store import vocabulary
from kubectl_sktrace.store.bodies import RAW_LIMIT, VersionDecoder, decode_body, encode_body, packed_body
from kubectl_sktrace.trace.files.format import dumps_object

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "simkube"

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "cart", "namespace": "shop", "labels": {"app": "cart"}},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "cart"}},
             "template": {"metadata": {"labels": {"app": "cart"}}, "spec": {"containers": [
                 {"name": "cart", "image": "registry.example.com/shop/cart:2.4.1", "imagePullPolicy": "IfNotPresent",
                  "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
                 "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler"}}},
    "status": {"replicas": 2, "readyReplicas": 2, "conditions": [{"type": "Available", "status": "True"}]},
}


def test_the_dictionary_is_frozen() -> None:
    """Caches hold bodies compressed with it, named by its id: changing one byte would make them unreadable."""
    assert vocabulary.ID == zlib.adler32(vocabulary.DICTIONARY) == 794192494
    assert len(vocabulary.DICTIONARY) < 8 * 1024  # within the bodies' 8 KiB window, all of it usable


def test_a_big_body_is_compressed_with_the_dictionary_and_a_small_one_kept_as_is() -> None:
    body, status = encode_body(DEPLOYMENT)
    assert body[0] == 0x58 and body[1] & 0x20 and int.from_bytes(body[2:6], "big") == vocabulary.ID  # deflate, 8 KiB window
    assert status is not None and len(dumps_object(DEPLOYMENT["status"])) <= RAW_LIMIT
    assert status == dumps_object(DEPLOYMENT["status"])  # the msgpack bytes as they are
    assert decode_body(body, status) == DEPLOYMENT
    assert packed_body(body) == dumps_object({k: v for k, v in DEPLOYMENT.items() if k != "status"})


def test_a_revision_body_is_stored_as_msgpack() -> None:
    revision = {"metadata": {"labels": {"app": "cart", "release": "2026-11"}, "annotations": {}, "ownerReferences": None}}
    body, status = encode_body(revision)
    assert status is None and body == dumps_object(revision) and body[0] & 0xF0 == 0x80
    assert decode_body(body) == revision


def test_bodies_written_before_0012_read_as_ever() -> None:
    rest = {k: v for k, v in DEPLOYMENT.items() if k != "status"}
    old_body, old_status = zlib.compress(dumps_object(rest), 1), zlib.compress(dumps_object(DEPLOYMENT["status"]), 1)
    assert decode_body(old_body, old_status) == DEPLOYMENT
    assert packed_body(old_body) == dumps_object(rest)


def test_a_body_of_an_unknown_dictionary_or_truncated_is_an_error_not_a_wrong_object() -> None:
    body, _ = encode_body(DEPLOYMENT)
    other = zlib.compressobj(1, zdict=b"another dictionary")
    foreign = other.compress(dumps_object(DEPLOYMENT)) + other.flush()
    with pytest.raises(zlib.error, match="dictionary"):
        decode_body(foreign)
    with pytest.raises(zlib.error):
        decode_body(body[: len(body) // 2])


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="SimKube's fixtures are not beside this checkout")
def test_the_dictionary_halves_the_bodies_of_real_traces() -> None:
    """Measured on objects of real clusters (SimKube's three trace fixtures), not on objects of ours: the dictionary
    holds only the API's words, so the gain is what a user's cache gets."""
    plain = with_dictionary = 0
    for path in sorted(glob.glob(str(FIXTURES / "*.sktrace"))):
        trace = msgpack.unpackb(Path(path).read_bytes(), raw=False, strict_map_key=False, use_list=False)
        for event in trace["events"]:
            for obj in list(event.get("applied_objs", ())) + list(event.get("deleted_objs", ())):
                rest = {k: v for k, v in obj.items() if k != "status"}
                plain += len(zlib.compress(dumps_object(rest), 1))
                with_dictionary += len(encode_body(rest)[0])
    assert plain > 10_000 and with_dictionary < 0.6 * plain


def test_a_body_compresses_as_zlib_would_with_the_dictionary() -> None:
    rest = {k: v for k, v in DEPLOYMENT.items() if k != "status"}
    fresh = zlib.compressobj(1, zlib.DEFLATED, 13, 4, zdict=vocabulary.DICTIONARY)
    assert encode_body(rest)[0] == fresh.compress(dumps_object(rest)) + fresh.flush()
    assert encode_body(rest)[0] == encode_body(rest)[0]  # the primed compressor is copied, never used up


_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["a", "b", "web:1", "web:2"]),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
                       max_leaves=12)
_BODIES = st.dictionaries(st.sampled_from(["metadata", "spec", "data", "x"]), _VALUES, max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(_BODIES, min_size=1, max_size=8))
def test_a_versions_decoder_reads_every_body_as_decode_body_does(versions: list[dict[str, Any]]) -> None:
    """Whatever the versions, in whichever forms they are stored (raw, compressed), equal members or not."""
    decode = VersionDecoder()
    for version in versions:
        body, _ = encode_body(version)
        assert decode(body) == decode_body(body) == version


def test_a_versions_decoder_shares_what_did_not_change_and_decodes_what_did() -> None:
    decode = VersionDecoder()
    bodies = []
    for replicas, image in ((2, "cart:1"), (3, "cart:1"), (3, "cart:2")):
        version = copy.deepcopy(DEPLOYMENT)
        version["spec"]["replicas"] = replicas
        version["spec"]["template"]["spec"]["containers"][0]["image"] = image
        bodies.append(decode(encode_body(version)[0]))
    first, scaled, reimaged = bodies
    assert (first["spec"]["replicas"], scaled["spec"]["replicas"], reimaged["spec"]["template"]["spec"]["containers"][0]["image"]) == (2, 3, "cart:2")
    assert scaled["metadata"] is first["metadata"] and scaled["spec"]["template"] is first["spec"]["template"]
    assert reimaged["spec"]["selector"] is first["spec"]["selector"] and reimaged["spec"]["template"] is not first["spec"]["template"]
    assert decode(encode_body(copy.deepcopy(DEPLOYMENT))[0]) == {k: v for k, v in DEPLOYMENT.items() if k != "status"}
