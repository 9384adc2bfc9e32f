"""A local OAuth 2.1 authorization server, as far as a resource server sees one: an OpenID
discovery document and a JWKS on 127.0.0.1, and the tokens it would issue.

Keys are generated with `cryptography` at start (one RSA key for RS256, one P-256 key for
ES256); `mint` signs JWTs with them, or with a `foreign` key the JWKS does not publish.
Every request is counted, so a test can see the server fetched the keys (and how often).

    with OAuthIssuer() as issuer:
        issuer.url                      # http://127.0.0.1:<port>  (the `iss`)
        issuer.mint(sub="ann", aud="http://127.0.0.1:8765/mcp")
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm


class OAuthIssuer:
    """Serves /.well-known/openid-configuration and /jwks.json until stopped."""

    def __init__(self) -> None:
        self.rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec_key = ec.generate_private_key(ec.SECP256R1())
        self.foreign_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.rotated: dict[str, rsa.RSAPrivateKey] = {}  # keys published later (rotation), by kid
        self.requests: Counter[str] = Counter()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, name="oauth-issuer", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/jwks.json"

    def rotate(self, kid: str) -> None:
        """Publish a new RS256 key under `kid` (tokens minted with that kid use it)."""
        self.rotated[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwks(self) -> dict[str, Any]:
        rsa_keys = {"rsa-1": self.rsa_key, **self.rotated}
        keys = [
            {**json.loads(RSAAlgorithm.to_jwk(key.public_key())), "kid": kid, "alg": "RS256", "use": "sig"}
            for kid, key in rsa_keys.items()
        ]
        ec_jwk = json.loads(ECAlgorithm.to_jwk(self.ec_key.public_key()))
        return {"keys": [*keys, {**ec_jwk, "kid": "ec-1", "alg": "ES256", "use": "sig"}]}

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "jwks_uri": self.jwks_url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "id_token_signing_alg_values_supported": ["RS256", "ES256"],
        }

    def mint(
        self,
        *,
        sub: str | None = "ann",
        aud: str | list[str] = "",
        iss: str | None = None,
        lifetime: float = 300,
        not_before: float | None = None,
        algorithm: str = "RS256",
        foreign: bool = False,
        kid: str | None = None,
        **claims: Any,
    ) -> str:
        """A signed JWT. `foreign`: signed by a key the JWKS does not publish (same kid)."""
        now = time.time()
        payload: dict[str, Any] = {"iss": iss or self.url, "aud": aud, "iat": int(now), "exp": int(now + lifetime)}
        if sub is not None:
            payload["sub"] = sub
        if not_before is not None:
            payload["nbf"] = int(now + not_before)
        payload.update(claims)
        key: Any
        if algorithm == "ES256":
            key, default_kid = self.ec_key, "ec-1"
        elif kid in self.rotated and not foreign:
            key, default_kid = self.rotated[kid], kid
        else:
            key, default_kid = (self.foreign_key if foreign else self.rsa_key), "rsa-1"
        return jwt.encode(payload, key, algorithm=algorithm, headers={"kid": kid or default_kid})

    def start(self) -> OAuthIssuer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def __enter__(self) -> OAuthIssuer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _handler(issuer: OAuthIssuer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            issuer.requests[self.path] += 1
            documents = {"/.well-known/openid-configuration": issuer.discovery, "/jwks.json": issuer.jwks}
            produce = documents.get(self.path)
            body = json.dumps(produce() if produce else {"error": "not_found"}).encode()
            self.send_response(200 if produce else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler
