// An MCP server over streamable HTTP behind OAuth, for air's tests: the SDK's own
// authorization server (dynamic registration, PKCE; its demo provider signs in
// without a person), with access tokens good for LIFE_SECONDS but said to expire in
// ADVERTISED_SECONDS (0: a client refreshes before each use), and refresh tokens
// that rotate (each is good once). It says on stdout when it listens and each time
// a token refreshes. PORT: where it listens (the MCP endpoint is /mcp, the issuer
// the origin).

import { randomUUID } from "node:crypto";
import express from "express";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { mcpAuthRouter, getOAuthProtectedResourceMetadataUrl } from "@modelcontextprotocol/sdk/server/auth/router.js";
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js";
import { DemoInMemoryAuthProvider } from "@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js";

const port = Number(process.env.PORT);
const life = Number(process.env.LIFE_SECONDS ?? "60");
const advertised = Number(process.env.ADVERTISED_SECONDS ?? String(life));
const base = `http://127.0.0.1:${port}`;
const resource = new URL(`${base}/mcp`);

class Provider extends DemoInMemoryAuthProvider {
  constructor() {
    super();
    this.refreshes = new Map();
  }

  issue(clientId, scopes) {
    const access = randomUUID();
    const refresh = randomUUID();
    this.tokens.set(access, {
      token: access,
      clientId,
      scopes,
      expiresAt: Date.now() + life * 1000,
      resource,
      type: "access",
    });
    this.refreshes.set(refresh, { clientId, scopes });
    return {
      access_token: access,
      refresh_token: refresh,
      token_type: "bearer",
      expires_in: advertised,
      scope: scopes.join(" "),
    };
  }

  async exchangeAuthorizationCode(client, code) {
    const data = this.codes.get(code);
    if (!data || data.client.client_id !== client.client_id) {
      throw new Error("unknown code");
    }
    this.codes.delete(code);
    return this.issue(client.client_id, data.params.scopes || []);
  }

  async exchangeRefreshToken(client, refreshToken) {
    const data = this.refreshes.get(refreshToken);
    if (!data || data.clientId !== client.client_id) {
      throw new Error("unknown refresh token");
    }
    // Rotated: the old one is good once.
    this.refreshes.delete(refreshToken);
    console.log("refreshed");
    return this.issue(client.client_id, data.scopes);
  }
}

const provider = new Provider();
const app = express();
app.use(
  mcpAuthRouter({
    provider,
    issuerUrl: new URL(base),
    resourceServerUrl: resource,
    scopesSupported: ["mcp:tools"],
  }),
);
const auth = requireBearerAuth({
  verifier: provider,
  requiredScopes: [],
  resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(resource),
});

function server() {
  const s = new McpServer({ name: "air-oauth-test", version: "1.0.0" });
  s.registerTool(
    "whoami",
    {
      description: "Says which OAuth client called.",
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    // A tool without an input schema is handed the request's context alone.
    async (extra) => ({
      content: [{ type: "text", text: `signed in as ${extra?.authInfo?.clientId ?? "nobody"}` }],
    }),
  );
  return s;
}

const transports = new Map();
app.all("/mcp", express.json(), auth, async (req, res) => {
  const id = req.headers["mcp-session-id"];
  let transport = id ? transports.get(id) : undefined;
  if (!transport) {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => transports.set(sid, transport),
    });
    await server().connect(transport);
  }
  await transport.handleRequest(req, res, req.body);
});

app.listen(port, "127.0.0.1", () => console.log(`listening on ${port}`));
