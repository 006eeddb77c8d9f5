#!/usr/bin/env python3
"""A loopback fake of the Anthropic Messages API, stdlib only, for capturing goldens.

It plays one of three scripts against the real Claude Code CLI (`claude -p`):

  text   every request is answered with one streamed text reply;
  tool   a request whose last user turn carries no tool_result is answered with a
         `Read` tool_use of the file named by --read; the next one (with the result)
         with a closing text;
  error  every request is answered with HTTP 401 and Anthropic's error body
         (`authentication_error`), as for an invalid key; no retries follow a 401;
  fallback  a request for the main model is answered with HTTP 529 (`overloaded_error`);
         one for the fallback model (`--fallback-model claude-fake-fallback`) with the text
         reply, in that model's name.

Replies stream Anthropic's SSE events in order: message_start, content_block_start,
content_block_delta, content_block_stop, message_delta, message_stop. A request without
`"stream": true` gets the same message as one JSON body. Every request line and body is
appended to --log (one JSON object per line) so a regeneration can show what the CLI sent.

The port is chosen by the kernel and written to --port-file once listening.
"""

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "claude-fake-model"
FALLBACK_MODEL = "claude-fake-fallback"
TEXT_ANSWER = "Hello from the fake model."
TOOL_CLOSING = "The file says: golden hello."
USAGE = {
    "input_tokens": 21,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 9,
}


def last_user_has_tool_result(body):
    messages = body.get("messages") or []
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            return any(
                isinstance(block, dict) and block.get("type") == "tool_result"
                for block in content
            )
        return False
    return False


def blocks_for(script, body, read_path, counter):
    """The content blocks and stop reason of the reply to `body`."""
    if script == "tool" and not last_user_has_tool_result(body) and body.get("tools"):
        return (
            [
                {
                    "type": "tool_use",
                    "id": "toolu_fake_%04d" % counter,
                    "name": "Read",
                    "input": {"file_path": read_path},
                }
            ],
            "tool_use",
        )
    text = TOOL_CLOSING if script == "tool" else TEXT_ANSWER
    return ([{"type": "text", "text": text}], "end_turn")


def sse(event, data):
    return ("event: %s\ndata: %s\n\n" % (event, json.dumps(data))).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, body):
        with open(self.server.log_path, "a") as log:
            log.write(json.dumps({"method": self.command, "path": self.path, "body": body}) + "\n")

    def send_json(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", "req_fake")
        self.end_headers()
        self.wfile.write(data)

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self):
        self.record(None)
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "not here"}})

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(min(length, 64 * 1024 * 1024))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        self.record(body)
        path = self.path.split("?", 1)[0]
        if self.server.script == "error":
            self.send_json(
                401,
                {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}},
            )
            return
        if path.endswith("/count_tokens"):
            self.send_json(200, {"input_tokens": 21})
            return
        if not path.endswith("/v1/messages"):
            self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "not here"}})
            return
        model = MODEL
        if self.server.script == "fallback":
            if body.get("model") != FALLBACK_MODEL:
                self.send_json(
                    529,
                    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
                )
                return
            model = FALLBACK_MODEL
        self.server.counter += 1
        counter = self.server.counter
        blocks, stop = blocks_for(self.server.script, body, self.server.read_path, counter)
        message_id = "msg_fake_%04d" % counter
        if not body.get("stream"):
            self.send_json(
                200,
                {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": blocks,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": USAGE,
                },
            )
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.send_header("request-id", "req_fake")
        self.end_headers()
        out = [
            sse(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": message_id,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": dict(USAGE, output_tokens=1),
                    },
                },
            )
        ]
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                out.append(sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))
                out.append(sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": block["text"]}}))
            else:
                start = dict(block, input={})
                out.append(sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
                out.append(sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}}))
            out.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        out.append(sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": USAGE["output_tokens"]}}))
        out.append(sse("message_stop", {"type": "message_stop"}))
        for piece in out:
            self.wfile.write(piece)
            self.wfile.flush()
        self.close_connection = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", choices=["text", "tool", "error", "fallback"], required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--read", default="", help="the file the tool script reads")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.script = args.script
    server.read_path = args.read
    server.log_path = args.log
    server.counter = 0
    with open(args.port_file, "w") as port_file:
        port_file.write(str(server.server_address[1]))
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
