"""The secure port as kube-scheduler's (issue 25 item 2): HTTPS, a TokenReview for who the caller
is and a SubjectAccessReview for what it may read, both answered by kubesim over HTTP through
kubernetes_asyncio and cached as upstream; the probes open; the answers in the shapes of the real
kube-scheduler's (captures 16g-16n)."""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from ksched_kubesim import KubeSim

from ksched.client.reviews import User
from ksched.config import default_config
from ksched.secureport.delegated import Authenticator, Authorizer, path_matcher
from ksched.secureport.selfsigned import self_signed, server_context
from ksched.service.http import HealthServer, forbidden_message
from ksched.service.options import SecureServing
from tests.fidelity import material, missing
from tests.fixtures.kubesim import fast_config


@pytest.fixture(scope="module")
async def sim() -> AsyncIterator[KubeSim]:
    """A kubesim of this module's own, so its review counts are this module's only."""
    async with KubeSim(fast_config()) as sim:
        yield sim


@pytest.fixture(scope="module")
def kubeconfig(sim: KubeSim, tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(sim.write_kubeconfig(tmp_path_factory.mktemp("secure") / "kubeconfig"))


@pytest.fixture
async def serve(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Callable[..., Any]]:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    started: list[HealthServer] = []

    async def start(kubeconfig: str | None, **secure: Any) -> int:
        server = HealthServer(
            "127.0.0.1",
            0,
            debug=lambda: {"pods": ["team-a/secret-project"]},
            secure=SecureServing(
                port=0,
                bind_address="127.0.0.1",
                authentication_kubeconfig=kubeconfig,
                authorization_kubeconfig=kubeconfig,
                **secure,
            ),
            config=default_config(),
        )
        started.append(server)
        await server.start()
        assert server.secure_port
        return server.secure_port

    yield start
    for server in started:
        await server.stop()


async def get(port: int, path: str, token: str | None = None) -> tuple[int, str, dict[str, str]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"https://127.0.0.1:{port}{path}", headers=headers, ssl=False) as resp,
    ):
        return resp.status, await resp.text(), dict(resp.headers)


def capture(name: str) -> Any:
    """A real kube-apiserver 1.36.2 / kube-scheduler capture of ../shared/apiserver-1.36."""
    captures = material("apiserver-1.36")
    path = next(captures.glob(f"{name}-*.json"), None)
    if path is None:
        missing(captures / f"{name}-*.json")
    return json.loads(path.read_text())


async def test_the_probes_are_open_and_the_rest_needs_the_api_servers_word(
    sim: KubeSim, kubeconfig: str, serve: Callable[..., Any]
) -> None:
    port = await serve(kubeconfig)
    for probe in ("/healthz", "/livez", "/readyz"):
        assert (await get(port, probe))[0] == 200, probe
    status, body, headers = await get(port, "/metrics")
    assert status == 403
    assert json.loads(body) == capture("16h")["body"]
    assert headers["X-Content-Type-Options"] == "nosniff"

    status, body, _ = await get(port, "/metrics", "not-a-token")
    assert status == 401
    assert json.loads(body) == capture("16i")["body"]

    token = sim.access.service_account_token("auth", "prometheus")
    status, body, _ = await get(port, "/metrics", token)
    assert status == 403
    assert json.loads(body) == capture("16j")["body"]
    assert (await get(port, "/debug", token))[0] == 403

    allowed = sim.access.service_account_token("auth", "scraper")
    sim.access.grant("ServiceAccount", "auth/scraper", ["/metrics"])
    status, body, _ = await get(port, "/metrics", allowed)
    assert status == 200
    assert "# TYPE" in body
    assert (await get(port, "/debug", allowed))[0] == 403  # /metrics only


async def test_configz_is_the_effective_configuration_in_upstreams_shape(
    sim: KubeSim, kubeconfig: str, serve: Callable[..., Any]
) -> None:
    port = await serve(kubeconfig)
    token = sim.access.service_account_token("auth", "reader")
    sim.access.grant("ServiceAccount", "auth/reader", ["/configz", "/debug"])
    status, body, headers = await get(port, "/configz", token)
    assert status == 200
    assert headers["Content-Type"].startswith("application/json")
    ours = json.loads(body)["componentconfig"]
    theirs = capture("16n")["body"]["componentconfig"]
    assert list(ours)[:2] == ["kind", "apiVersion"]
    assert ours["kind"] == theirs["kind"] and ours["apiVersion"] == theirs["apiVersion"]
    for key in (
        "parallelism",
        "podInitialBackoffSeconds",
        "podMaxBackoffSeconds",
        "percentageOfNodesToScore",
    ):
        assert ours[key] == theirs[key], key
    assert set(ours["leaderElection"]) == set(theirs["leaderElection"])
    assert [p["schedulerName"] for p in ours["profiles"]] == ["default-scheduler"]
    assert (await get(port, "/debug", token))[0] == 200


async def test_answers_are_cached_for_their_ttl(
    sim: KubeSim, kubeconfig: str, serve: Callable[..., Any]
) -> None:
    port = await serve(kubeconfig)
    token = sim.access.service_account_token("auth", "cached")
    sim.access.grant("ServiceAccount", "auth/cached", ["/metrics"])
    before = dict(sim.access.reviews)
    assert (await get(port, "/metrics", token))[0] == 200
    assert (await get(port, "/metrics", token))[0] == 200
    assert (await get(port, "/metrics", "bad"))[0] == 401
    assert (await get(port, "/metrics", "bad"))[0] == 401
    reviews = {k: v - before.get(k, 0) for k, v in sim.access.reviews.items()}
    assert reviews == {"tokenreviews": 2, "subjectaccessreviews": 1}


async def test_without_an_api_server_every_caller_is_anonymous(serve: Callable[..., Any]) -> None:
    port = await serve(None)
    assert (await get(port, "/healthz", "whatever"))[0] == 200
    status, body, _ = await get(port, "/metrics", "whatever")
    assert status == 403
    assert "system:anonymous" in json.loads(body)["message"]


async def test_the_always_allow_paths_are_configurable(
    sim: KubeSim, kubeconfig: str, serve: Callable[..., Any]
) -> None:
    port = await serve(kubeconfig, always_allow_paths=("/metrics",))
    assert (await get(port, "/metrics"))[0] == 200
    assert (await get(port, "/healthz"))[0] == 403


async def test_the_plain_loopback_port_keeps_serving_locally(kubeconfig: str) -> None:
    server = HealthServer(
        "127.0.0.1",
        0,
        secure=SecureServing(port=0, bind_address="127.0.0.1", authentication_kubeconfig=kubeconfig),
        config=default_config(),
    )
    port = await server.start()
    try:
        async with aiohttp.ClientSession() as http:
            for path in ("/metrics", "/configz", "/debug", "/healthz"):
                async with http.get(f"http://127.0.0.1:{port}{path}") as resp:
                    assert resp.status == 200, path
            async with http.get(f"https://127.0.0.1:{server.secure_port}/configz", ssl=False) as resp:
                assert resp.status == 403
    finally:
        await server.stop()


async def test_caches_expire() -> None:
    now = [0.0]
    calls: list[str] = []

    async def token_review(token: str) -> User | None:
        calls.append(token)
        return User("u") if token == "good" else None

    async def access_review(user: User, path: str, verb: str) -> tuple[bool, str]:
        calls.append(path)
        return path == "/metrics", ""

    authn = Authenticator(token_review, clock=lambda: now[0])
    authz = Authorizer(access_review, clock=lambda: now[0])
    user = await authn.authenticate("Bearer good")
    assert user.name == "u"
    assert await authz.authorize(user, "/metrics", "get") == (True, "")
    assert await authz.authorize(user, "/debug", "get") == (False, "")
    now[0] = 9.9
    await authn.authenticate("Bearer good")
    await authz.authorize(user, "/metrics", "get")
    await authz.authorize(user, "/debug", "get")
    assert calls == ["good", "/metrics", "/debug"]
    now[0] = 10.0
    await authn.authenticate("Bearer good")
    await authz.authorize(user, "/metrics", "get")
    await authz.authorize(user, "/debug", "get")
    assert calls == ["good", "/metrics", "/debug"] * 2
    assert (await authn.authenticate(None)).name == "system:anonymous"
    assert (await authn.authenticate("Basic x")).name == "system:anonymous"


def test_always_allow_paths_match_as_upstreams_path_authorizer() -> None:
    allowed = path_matcher(["/healthz", "/debug/*", "/"])
    assert allowed("/healthz") and allowed("/debug/pprof") and allowed("/")
    assert not allowed("/healthz/extra") and not allowed("/metrics")
    with pytest.raises(ValueError, match=r"only trailing \* allowed"):
        path_matcher(["/a*b"])


def test_the_self_signed_certificate_is_for_localhost_and_chains_to_its_ca(tmp_path: Path) -> None:
    from cryptography import x509

    chain, key, ca_pem = self_signed("10.1.2.3")
    certs = x509.load_pem_x509_certificates(chain)
    assert len(certs) == 2
    leaf, ca = certs
    assert x509.load_pem_x509_certificate(ca_pem) == ca
    assert leaf.issuer == ca.subject
    assert leaf.subject.rfc4514_string().startswith("CN=localhost@")
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert {str(ip) for ip in names.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "10.1.2.3"}
    client = ssl.create_default_context(cadata=ca.public_bytes(_pem()).decode())
    assert client.verify_mode == ssl.CERT_REQUIRED
    assert isinstance(server_context(None, None, "0.0.0.0"), ssl.SSLContext)
    cert_file, key_file = tmp_path / "c.pem", tmp_path / "k.pem"
    cert_file.write_bytes(chain)
    key_file.write_bytes(key)
    assert isinstance(server_context(str(cert_file), str(key_file), "0.0.0.0"), ssl.SSLContext)


@pytest.mark.parametrize(
    ("host", "dns", "ips"),
    [
        ("0.0.0.0", ["localhost"], {"127.0.0.1"}),
        ("::", ["localhost"], {"127.0.0.1"}),
        ("127.0.0.1", ["localhost"], {"127.0.0.1"}),
        ("localhost", ["localhost"], {"127.0.0.1"}),
        ("::1", ["localhost"], {"127.0.0.1", "::1"}),
        ("kubesim.test", ["localhost", "kubesim.test"], {"127.0.0.1"}),  # kubesim --host NAME --tls
    ],
)
def test_the_self_signed_certificate_names_a_specific_host(host: str, dns: list[str], ips: set[str]) -> None:
    from cryptography import x509

    leaf = x509.load_pem_x509_certificates(self_signed(host).chain)[0]
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == dns
    assert {str(ip) for ip in names.get_values_for_type(x509.IPAddress)} == ips


def _pem() -> Any:
    from cryptography.hazmat.primitives.serialization import Encoding

    return Encoding.PEM


def test_the_forbidden_message_is_the_api_servers() -> None:
    assert forbidden_message("system:anonymous", "get", "/metrics", "") == (
        'forbidden: User "system:anonymous" cannot get path "/metrics"'
    )
    assert forbidden_message("a<b>&c", "get", "/x", "no RBAC") == (
        'forbidden: User "a&lt;b&gt;&amp;c" cannot get path "/x": no RBAC'
    )
