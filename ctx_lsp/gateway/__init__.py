"""The gateway face: an OpenAI- and Anthropic-compatible HTTP proxy that puts the plan in the
request path of the assistants people already use (docs/gateway.md). It translates provider
bodies to the engine's terms and the engine's placement back into the body; the sessions engine
decides what is sent."""
