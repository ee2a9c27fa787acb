"""The test MCP server (``tests/mcp/server.py``) on streamable HTTP behind OAuth, with its own authorization server.

    python -m tests.mcp.oauth_server      # 127.0.0.1:<free port>; prints "PORT <n>" when listening

Built from the ``mcp`` SDK's server-side auth: ``/mcp`` answers 401 with ``WWW-Authenticate`` naming its
protected-resource metadata; the authorization server (same origin) has metadata, dynamic client
registration, ``/authorize`` (approves at once: redirects to the client's ``redirect_uri`` with a code),
``/token`` (authorization code with PKCE, refresh token; both rotate) and revocation. For the tests:
``POST /test/expire`` makes every access token issued so far invalid (as an expired one), ``GET /test/stats``
says what happened (JSON: registrations, authorizations, code exchanges, refreshes, tool calls).
``MCP_TEST_TOKEN_TTL`` sets the access tokens' lifetime in seconds (default 3600); ``MCP_TEST_DENY=1`` makes
``/authorize`` refuse (``access_denied``, as a user who says no).
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from typing import Any

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    ProviderTokenVerifier,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

STATS = {"registrations": 0, "authorizations": 0, "code_exchanges": 0, "refreshes": 0, "tool_calls": 0}


class Provider:
    """An in-memory authorization server that approves every request."""

    def __init__(self, ttl: int) -> None:
        self.ttl = ttl
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        STATS["registrations"] += 1
        self.clients[client_info.client_id or ""] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        STATS["authorizations"] += 1
        if os.environ.get("MCP_TEST_DENY") == "1":
            from mcp.server.auth.provider import AuthorizeError

            raise AuthorizeError(error="access_denied", error_description="the user said no")
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client.client_id or "",
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        found = self.codes.get(code)
        return found if found is not None and found.client_id == client.client_id else None

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = "at-" + secrets.token_urlsafe(24), "rt-" + secrets.token_urlsafe(24)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + self.ttl, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, expires_in=self.ttl, refresh_token=refresh,
                          scope=" ".join(scopes) or None)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        STATS["code_exchanges"] += 1
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id or "", authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        STATS["refreshes"] += 1
        self.refresh.pop(refresh_token.token, None)
        return self._issue(client.client_id or "", scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def expire(self) -> None:
        for token in self.access.values():
            token.expires_at = 0


def main() -> None:
    import uvicorn
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from tests.mcp import server as test_server

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    provider = Provider(int(os.environ.get("MCP_TEST_TOKEN_TTL", "3600")))

    async def expire(_request: Request) -> JSONResponse:
        provider.expire()
        return JSONResponse({"ok": True})

    async def stats(_request: Request) -> JSONResponse:
        return JSONResponse(STATS)

    original = test_server.call_tool

    async def counting_call_tool(ctx: Any, params: Any) -> Any:
        STATS["tool_calls"] += 1
        return await original(ctx, params)

    test_server.call_tool = counting_call_tool
    server = test_server.make_server("oauth-test-server")
    auth = AuthSettings(issuer_url=base, resource_server_url=f"{base}/mcp", validate_token_resource=False,
                        client_registration_options=ClientRegistrationOptions(enabled=True),
                        revocation_options=RevocationOptions(enabled=True))
    app = server.streamable_http_app(
        host="127.0.0.1", auth=auth, token_verifier=ProviderTokenVerifier(provider), auth_server_provider=provider,
        custom_starlette_routes=[Route("/test/expire", expire, methods=["POST"]),
                                 Route("/test/stats", stats, methods=["GET"])])
    print(f"PORT {port}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[sock])


if __name__ == "__main__":
    main()
