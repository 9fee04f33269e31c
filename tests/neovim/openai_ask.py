"""An assistant's request, as the Neovim tests send it through the gateway: the openai SDK's
chat.completions.create with the messages given as JSON on stdin.

    python tests/neovim/openai_ask.py BASE_URL MODEL < messages.json

Prints one JSON line: {"ok": true, "content": "..."} or {"ok": false, "status": 400, "message": "..."}
(exit status 0 and 3); anything else fails with a traceback.
"""

from __future__ import annotations

import json
import sys

from openai import APIStatusError, OpenAI

KEY = "sk-test-neovim-0000"


def main() -> int:
    base_url, model = sys.argv[1], sys.argv[2]
    messages = json.load(sys.stdin)
    with OpenAI(base_url=base_url, api_key=KEY, max_retries=0, timeout=60) as client:
        try:
            reply = client.chat.completions.create(model=model, messages=messages)
        except APIStatusError as err:
            print(json.dumps({"ok": False, "status": err.status_code, "message": err.message}), flush=True)
            return 3
    print(json.dumps({"ok": True, "content": reply.choices[0].message.content}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
