"""An OpenAI- and Anthropic-compatible HTTP server on respc's wire formats, driven by a stand-in model.

    pip install '.[serve]'     # in respc's checkout, or pip install starlette uvicorn
    python examples/server.py --preset qwen3_5 --replay examples/server_replay.jsonl [--host 127.0.0.1] [--port 8000]

`respc serve`, which takes `--preset NAME`, `--template FILE` or `--model DIR` as `respc parse` does:
`POST /v1/chat/completions`, `/v1/responses` and `/v1/messages`, with `"stream": true` (server-sent
events) or false (one JSON body), and `GET /v1/models`, for the official `openai` and `anthropic`
clients. The stand-in model ignores the conversation: it replays the
generations stored in the JSONL file (a "response" and an optional "prompt", the text the model
continued, per line) in turn, cycling, in token-sized pieces. `--port 0` picks a free port; the first
line printed is the address served.

The app is `respc.serving.app.create_app(parser_module, model)`: to serve a real engine, give it any
object whose `generate(request)` returns a `Generation` (see docs/serving.md) and run it with uvicorn:

    from respc.serving.app import Generation, create_app
    app = create_app(respc.load_preset("qwen3_5"), MyEngine())
"""

from __future__ import annotations

import sys

from respc.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
