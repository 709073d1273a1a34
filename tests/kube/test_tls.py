"""TLS credentials held in memory (``kube/tls.py``), against the emulator over mutual TLS with the real client.

The emulator requires a client certificate signed by its client CA and takes the user from its common name, so a
request that succeeds proves the certificate was presented and verified, and a 403 naming the user proves whose it was.
The system temp directory is pointed at an empty directory of the test: the ``kubernetes`` loader writes every
``*-data`` field there (and an exec plugin's certificate and key), so after each load, reload and request it must
still be empty, and the loader's own list of temp files must not have grown.
"""

from __future__ import annotations

import base64
import json
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from kubectl_sktrace.errors import ForbiddenError, KubeError, TransientError
from kubectl_sktrace.kube.client import Kube
from kubectl_sktrace.kube.discovery import Resource
from kubectl_sktrace.kube.kubeconfig import resolve_target
from kubectl_sktrace.model import POD

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60),
              pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")]

PODS = Resource(gvk=POD, plural="pods", namespaced=True, verbs=frozenset({"get", "list", "watch"}))
Pair = tuple[bytes, bytes]


@pytest.fixture(scope="module")
def pki() -> dict[str, Any]:
    from sktrace_emulator import pki

    ca, other_ca = pki.self_signed("clients"), pki.self_signed("another-cluster's-clients")
    return {"ca": ca, "alice": pki.client_certificate(ca, "alice"), "bob": pki.client_certificate(ca, "bob"),
            "stranger": pki.client_certificate(other_ca, "alice")}


@pytest.fixture
def server(pki: dict[str, Any]) -> Iterator[Any]:
    from sktrace_emulator import Emulator

    with Emulator(token="unused", client_ca=pki["ca"][0]) as emu:
        yield emu


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system temp directory of this process, empty: where the loader would write the credentials."""
    from kubernetes.config import kube_config

    directory = tmp_path / "system-tmp"
    directory.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    monkeypatch.setattr(kube_config, "_temp_files", {})
    return directory


def left_in(directory: Path) -> list[str]:
    from kubernetes.config import kube_config

    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*")) + sorted(kube_config._temp_files.values())


def connect(path: Path | str) -> Kube:
    return Kube.connect(resolve_target(kubeconfig=str(path), context=None, environ={}))


def kubeconfig(server: Any, path: Path, client: Pair, **user: Any) -> Path:
    server.write_kubeconfig(path, client_certificate=client)
    if user:
        doc = yaml.safe_load(path.read_text())
        doc["users"][0]["user"] = user
        path.write_text(yaml.safe_dump(doc))
    return path


def test_client_certificate_data_is_presented_from_memory(tmp_path, server, pki, temp_dir):
    kube = connect(kubeconfig(server, tmp_path / "config", pki["alice"]))
    assert kube.cluster_identity() == (server.url, server.cluster_uid)
    server.grant_view(["shop"])
    with pytest.raises(ForbiddenError) as info:
        kube.list_page(PODS, namespace=None)
    assert info.value.user == "alice", "the server knew the user from the certificate"
    assert kube.list_page(PODS, namespace="shop")["items"] == []
    assert left_in(temp_dir) == []


def test_a_401_reloads_the_certificate_into_a_new_context(tmp_path, server, pki, temp_dir):
    kube = connect(kubeconfig(server, tmp_path / "config", pki["alice"]))
    first = kube._api.rest_client.pool_manager.connection_pool_kw["ssl_context"]
    server.fail(None, 401)
    assert kube.list_page(PODS, namespace=None)["items"] == []
    second = kube._api.rest_client.pool_manager.connection_pool_kw["ssl_context"]
    assert second is not first, "the credentials were loaded again"
    assert server.unauthorized == 0 and left_in(temp_dir) == []


def test_the_users_own_key_file_is_read_where_it_is_and_kept(tmp_path, server, pki, temp_dir):
    """A certificate in the kubeconfig with its key in a file of the user's (and the CA in another): the data is held
    in memory, the files are read where they are, at each load, and left as they were."""
    key, ca = tmp_path / "alice.key", tmp_path / "ca.crt"
    key.write_bytes(pki["alice"][1])
    ca.write_bytes(server.ca_pem)
    user = {"client-certificate-data": base64.b64encode(pki["alice"][0]).decode(), "client-key": str(key)}
    path = kubeconfig(server, tmp_path / "config", pki["alice"], **user)
    doc = yaml.safe_load(path.read_text())
    doc["clusters"][0]["cluster"] = {"server": server.url, "certificate-authority": str(ca)}
    path.write_text(yaml.safe_dump(doc))
    kube = connect(path)
    server.fail(None, 401)
    assert kube.list_page(PODS, namespace=None)["items"] == []
    assert (key.read_bytes(), ca.read_bytes()) == (pki["alice"][1], server.ca_pem)
    assert left_in(temp_dir) == []


def test_a_key_of_another_certificate_is_one_line(tmp_path, server, pki, temp_dir):
    with pytest.raises(KubeError) as info:
        connect(kubeconfig(server, tmp_path / "config", (pki["alice"][0], pki["bob"][1])))
    assert str(info.value) == ("cannot use the client certificate of context 'emulator' ([X509: KEY_VALUES_MISMATCH] key "
                               "values mismatch); check client-certificate and client-key of its user in your kubeconfig "
                               "(or what its exec plugin prints)")
    assert left_in(temp_dir) == []


def test_a_certificate_the_server_does_not_trust_is_one_line_and_not_retried(tmp_path, server, pki, temp_dir):
    kube = connect(kubeconfig(server, tmp_path / "config", pki["stranger"]))
    with pytest.raises(KubeError) as info:
        kube.list_page(PODS, namespace=None)
    assert not isinstance(info.value, TransientError)
    message = str(info.value)
    assert message.startswith(f"the API server at {server.url} refused the TLS handshake ("), message
    assert "alert unknown ca" in message and "\n" not in message and "_ssl.c" not in message, message
    assert message.endswith("): it does not accept the client certificate of context 'emulator'; check client-certificate "
                            "and client-key of its user in your kubeconfig (or what its exec plugin prints)"), message


def test_an_encrypted_key_is_one_line_and_asks_for_no_passphrase(tmp_path, server, pki, temp_dir):
    import subprocess

    encrypted = subprocess.run(["openssl", "pkey", "-aes256", "-passout", "pass:secret"], input=pki["alice"][1],
                               capture_output=True, check=True).stdout
    with pytest.raises(KubeError) as info:
        connect(kubeconfig(server, tmp_path / "config", (pki["alice"][0], encrypted)))
    assert str(info.value).startswith("cannot use the client certificate of context 'emulator' (the client key is "
                                      "encrypted; a kubeconfig's key must be unencrypted); ")


EXEC_CERT_PLUGIN = """#!{python}
import json, pathlib
counter = pathlib.Path({counter!r})
n = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(n))
status = {{"clientCertificateData": {cert!r}, "clientKeyData": {key!r}}}
if {expires!r}:
    status["expirationTimestamp"] = {expires!r}
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status}}))
"""


def exec_user(tmp_path: Path, client: Pair, *, expires: str = "") -> dict[str, Any]:
    plugin = tmp_path / "cert-plugin"
    plugin.write_text(EXEC_CERT_PLUGIN.format(python=sys.executable, counter=str(tmp_path / "runs"), cert=client[0].decode(),
                                              key=client[1].decode(), expires=expires))
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "interactiveMode": "Never"}}


def runs(tmp_path: Path) -> int:
    return int((tmp_path / "runs").read_text())


def test_an_exec_plugins_certificate_is_held_in_memory_and_renewed_after_a_401(tmp_path, server, pki, temp_dir):
    kube = connect(kubeconfig(server, tmp_path / "config", pki["alice"], **exec_user(tmp_path, pki["alice"])))
    server.grant_view(["shop"])
    with pytest.raises(ForbiddenError) as info:
        kube.list_page(PODS, namespace=None)
    assert info.value.user == "alice"
    server.fail(None, 401)
    assert kube.list_page(PODS, namespace="shop")["items"] == []
    assert runs(tmp_path) == 2, "the 401 ran the plugin again"
    assert left_in(temp_dir) == []


@pytest.mark.parametrize(("expires", "expected_runs"), [("2000-01-01T00:00:00Z", 3), ("2999-01-01T00:00:00Z", 1)],
                         ids=["expired", "valid"])
def test_an_exec_plugins_expired_certificate_is_renewed_before_a_request(tmp_path, server, pki, temp_dir, expires,
                                                                         expected_runs):
    kube = connect(kubeconfig(server, tmp_path / "config", pki["alice"],
                              **exec_user(tmp_path, pki["alice"], expires=expires)))
    kube.list_page(PODS, namespace=None)
    kube.list_page(PODS, namespace=None)
    assert runs(tmp_path) == expected_runs
    assert left_in(temp_dir) == []


def test_certificate_authority_data_that_is_no_certificate_is_one_line(tmp_path, server, pki, temp_dir):
    path = kubeconfig(server, tmp_path / "config", pki["alice"])
    doc = json.loads(path.read_text())
    doc["clusters"][0]["cluster"]["certificate-authority-data"] = base64.b64encode(b"not a certificate").decode()
    path.write_text(json.dumps(doc))
    with pytest.raises(KubeError) as info:
        connect(path)
    assert str(info.value) == (f"TLS certificate check failed for {server.url} ([X509: NO_CERTIFICATE_OR_CRL_FOUND] no "
                               "certificate or crl found); check certificate-authority of the cluster of context "
                               "'emulator' in your kubeconfig, or the server's certificate")
    assert left_in(temp_dir) == []


@pytest.mark.parametrize(("server_name", "error"), [
    ("localhost", None),
    ("cluster.example", "TLS certificate check failed for {url} (certificate verify failed: Hostname mismatch, certificate "
                        "is not valid for 'cluster.example'.); check certificate-authority of the cluster of context "
                        "'emulator' in your kubeconfig, or the server's certificate"),
], ids=["a-name-of-the-certificate", "another-name"])
def test_tls_server_name_is_the_name_checked(tmp_path, server, pki, temp_dir, server_name, error):
    """``tls-server-name``: the name sent (SNI) and checked against the server's certificate instead of the URL's host."""
    path = kubeconfig(server, tmp_path / "config", pki["alice"])
    doc = json.loads(path.read_text())
    doc["clusters"][0]["cluster"]["tls-server-name"] = server_name
    path.write_text(json.dumps(doc))
    kube = connect(path)
    if error is None:
        assert kube.list_page(PODS, namespace=None)["items"] == []
    else:
        with pytest.raises(KubeError) as info:
            kube.list_page(PODS, namespace=None)
        assert str(info.value) == error.format(url=server.url)
    assert left_in(temp_dir) == []


def test_key_data_that_is_not_base64_is_one_line(tmp_path, server, pki, temp_dir):
    path = kubeconfig(server, tmp_path / "config", pki["alice"])
    doc = json.loads(path.read_text())
    doc["users"][0]["user"]["client-key-data"] = "abc"
    path.write_text(json.dumps(doc))
    with pytest.raises(KubeError) as info:
        connect(path)
    assert str(info.value) == ("cannot load the credentials of context 'emulator': client-key-data is not base64: "
                               "Incorrect padding; fix the user and cluster entries in your kubeconfig")
    assert left_in(temp_dir) == []
