// Package mcpserver is the xpromo MCP (Model Context Protocol) server: one
// tool per operation of the REST API, named as in the API document
// (register_app, get_score, get_rate_card, get_network_stats,
// get_integration_guide, top_up, create_campaign, pause_campaign,
// resume_campaign, get_ledger, get_stats, request_payout), plus additive ones
// (list_campaigns, get_campaign, update_campaign, start_payout_onboarding,
// get_payout_account, the webhook tools). Each tool calls
// the REST API through the Go SDK client (sdk/xpromo), so the server fronts
// any conformant xpromo server.
//
// Input schemas mirror the operations' parameters and bodies (enums,
// minimums, formats, required fields) and output schemas their answers;
// mcp-go checks every answer against its output schema. The arguments go to
// the API as written (arguments.go), so a mistake gets the code and message
// the REST API gives for it. Every tool sets all four annotations. A failed
// call is a tool error (isError) whose one text content is the API's Error
// body, {"error": {"code", "message", "retry_after"}}, and no
// structuredContent (errors.go).
//
// Besides the tools: resources and templates over the API's readable
// documents (resources.go), prompts for the usual jobs (prompts.go), log
// records, resource updates and completions per session (session.go).
//
// Two transports:
//
//   - stdio (ServeStdio; the xpromo-mcp command): one user. The session's
//     API key is the SDK client's (XPROMO_API_KEY); with
//     WithIssuedKeyRemembered, register_app switches the session to the key
//     it issued.
//   - Streamable HTTP (HTTPHandler; the reference server mounts it at /mcp):
//     session ids, a Host/Origin guard against DNS rebinding, and each
//     request's Authorization header passed through to the REST call
//     unchanged.
//
// docs/mcp.md describes the tools for users.
package mcpserver
