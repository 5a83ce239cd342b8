"""The fixtures the MCP conformance suite's server scenarios read that a gateway relays: resources,
a resource template, prompts (one that needs the user's input first, 2026-07-28), completions and logging, with the
names and contents the scenarios expect (`npx @modelcontextprotocol/conformance list`). toolscout is judged in front of it
(benchmarks/conformance.sh). Run as a stdio subprocess."""

from __future__ import annotations

import base64
import json

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("conformance", instructions="Fixtures of the MCP conformance suite.")
# A 1x1 transparent PNG.
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)).decode()


@server.resource("test://static-text", name="static-text", description="A static text resource.", mime_type="text/plain")
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", description="A static PNG.", mime_type="image/png")
def static_binary() -> bytes:
    return base64.b64decode(PNG)


@server.resource("test://watched-resource", name="watched-resource", description="A resource to subscribe to.",
                 mime_type="text/plain")
def watched() -> str:
    return "Watched resource content."


@server.resource("test://template/{id}/data", name="template-data", description="Data by id.",
                 mime_type="application/json")
def template_data(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.prompt(name="test_simple_prompt", description="A simple prompt without arguments.")
def simple_prompt() -> str:
    return "This is a simple prompt for testing."


@server.prompt(name="test_prompt_with_arguments", description="A prompt with two arguments.")
def prompt_with_arguments(arg1: str, arg2: str) -> str:
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt(name="test_prompt_with_embedded_resource", description="A prompt embedding a resource.")
def prompt_with_embedded_resource(resourceUri: str) -> list[types.ContentBlock]:  # noqa: N803 - the suite's name
    return [
        types.EmbeddedResource(resource=types.TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
        )),
        types.TextContent(text="Please process the embedded resource above."),
    ]


@server.prompt(name="test_prompt_with_image", description="A prompt with an image.")
def prompt_with_image() -> list[types.ContentBlock]:
    return [
        types.ImageContent(data=PNG, mime_type="image/png"),
        types.TextContent(text="Please analyze the image above."),
    ]


@server.prompt(name="test_input_required_result_prompt", description="A prompt that first asks the user for context.")
def input_required_prompt(ctx: Context) -> str | types.InputRequiredResult:
    if not ctx.input_responses:
        return types.InputRequiredResult(input_requests={"user_context": types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message="What context should the prompt use?",
                requested_schema={"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]},
            )
        )})
    answer = ctx.input_responses["user_context"]
    context = (getattr(answer, "content", None) or {}).get("context", "")
    return f"Use this context: {context}"


@server.completion()
async def complete(ref: object, argument: types.CompletionArgument, context: object) -> types.Completion:
    words = ["paris", "park", "party"]
    return types.Completion(values=[w for w in words if w.startswith(argument.value)], total=len(words), has_more=False)


async def set_level(ctx: object, params: types.SetLevelRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


async def subscription(ctx: object, params: object) -> types.EmptyResult:
    return types.EmptyResult()


server._lowlevel_server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
server._lowlevel_server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscription)
server._lowlevel_server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, subscription)

if __name__ == "__main__":
    server.run()
