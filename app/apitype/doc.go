// Package apitype holds the types both sides of the engine's API use.
//
// The engine, the API server, the MCP server, the client and the CLI all
// read and write these: the requests, the replies and the records in
// them, the daemon's info file and where its socket is. It imports only
// the standard library and package backends (for the sandbox's rules),
// so that a client (the senclaw CLI) can decode the engine's answers
// without linking the engine. openapi.json documents each of them, and
// app/api's schema test keeps the two in step.
package apitype
