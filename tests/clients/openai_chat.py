#!/usr/bin/env python3
"""Drives kgbox's OpenAI-compatible facade with the clients users hold: the
official `openai` package and LangChain's `ChatOpenAI`.

Usage: openai_chat.py BASE_URL   (e.g. http://127.0.0.1:8080/v1)

Asks the built-in demo bundle who directed Blade Runner, plain and streamed,
and checks that `models.list()` lists the served bundle. Exits 0 when every
check passes; otherwise prints what failed and exits 1 (2 for bad usage or a
missing package: run scripts/setup.sh --dev).
"""

import sys

from checklist import check, failures, run

QUESTION = "who directed [Blade Runner]"
EXPECTED = "Ridley Scott"
DEMO_MODEL = "demo-movies"


def main():
    if len(sys.argv) != 2:
        print("usage: openai_chat.py BASE_URL (e.g. http://127.0.0.1:8080/v1)", file=sys.stderr)
        return 2
    base = sys.argv[1].rstrip("/")
    try:
        import openai
        from langchain_openai import ChatOpenAI
    except ImportError as e:
        print(f"openai_chat.py: {e}; run scripts/setup.sh --dev to install the test clients", file=sys.stderr)
        return 2

    # The clients insist on a key; kgbox's public endpoints need none.
    client = openai.OpenAI(base_url=base, api_key="unused", max_retries=0, timeout=60)
    messages = [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": QUESTION},
    ]

    def models():
        ids = [m.id for m in client.models.list()]
        check(DEMO_MODEL in ids, f"models.list() lists {DEMO_MODEL!r} (got {ids})")

    def plain():
        r = client.chat.completions.create(model=DEMO_MODEL, messages=messages)
        content = r.choices[0].message.content or ""
        check(EXPECTED in content, f"openai chat: content names {EXPECTED!r} (got {content!r})")
        check(r.object == "chat.completion", f"openai chat: object (got {r.object!r})")
        check(r.id.startswith("chatcmpl-"), f"openai chat: id (got {r.id!r})")
        check(r.model == DEMO_MODEL, f"openai chat: model (got {r.model!r})")
        check(r.choices[0].finish_reason == "stop", "openai chat: finish_reason stop")
        check(r.usage is not None and r.usage.completion_tokens > 0, f"openai chat: usage (got {r.usage})")
        extra = (r.model_extra or {}).get("kgbox") or {}
        names = [a.get("name") for a in extra.get("answers", [])]
        check(EXPECTED in names, f"openai chat: kgbox provenance answers (got {names})")
        check(bool(extra.get("query")), f"openai chat: kgbox provenance query (got {extra.get('query')!r})")

    def streamed():
        parts, finish, role, provenance = [], None, None, None
        stream = client.chat.completions.create(model=DEMO_MODEL, messages=messages, stream=True)
        for chunk in stream:
            for choice in chunk.choices:
                role = role or choice.delta.role
                if choice.delta.content:
                    parts.append(choice.delta.content)
                finish = choice.finish_reason or finish
            provenance = (chunk.model_extra or {}).get("kgbox") or provenance
        content = "".join(parts)
        check(role == "assistant", f"openai stream: role assistant (got {role!r})")
        check(EXPECTED in content, f"openai stream: content names {EXPECTED!r} (got {content!r})")
        check(len(parts) > 1, f"openai stream: content in several chunks (got {len(parts)})")
        check(finish == "stop", f"openai stream: finish_reason stop (got {finish!r})")
        check(provenance is not None and "query" in provenance, "openai stream: kgbox provenance on a chunk")

    def no_user_message():
        try:
            client.chat.completions.create(
                model=DEMO_MODEL, messages=[{"role": "system", "content": "hello"}]
            )
            check(False, "openai error: a chat without a user message is refused")
        except openai.BadRequestError as e:
            body = e.body if isinstance(e.body, dict) else {}
            check(e.status_code == 400, f"openai error: status 400 (got {e.status_code})")
            check(body.get("code") == "no_user_message", f"openai error: code (got {body})")

    def langchain():
        llm = ChatOpenAI(model=DEMO_MODEL, base_url=base, api_key="unused", max_retries=0, timeout=60)
        reply = llm.invoke([("system", "Answer briefly."), ("human", QUESTION)])
        check(EXPECTED in reply.content, f"langchain invoke: names {EXPECTED!r} (got {reply.content!r})")
        streaming = ChatOpenAI(
            model=DEMO_MODEL, base_url=base, api_key="unused", max_retries=0, timeout=60, stream_usage=True
        )
        text, usage = "", None
        for chunk in streaming.stream(QUESTION):
            text += chunk.content if isinstance(chunk.content, str) else ""
            usage = chunk.usage_metadata or usage
        check(EXPECTED in text, f"langchain stream: names {EXPECTED!r} (got {text!r})")
        check(usage is not None and usage.get("output_tokens", 0) > 0, f"langchain stream: usage (got {usage})")

    for name, fn in [
        ("models", models),
        ("openai chat", plain),
        ("openai stream", streamed),
        ("openai error", no_user_message),
        ("langchain", langchain),
    ]:
        run(name, fn)

    if failures:
        print(f"openai_chat.py: {len(failures)} check(s) failed against {base}:", file=sys.stderr)
        for f in failures:
            print(f"  - {f}", file=sys.stderr)
        return 1
    print(f"openai_chat.py: all checks passed against {base}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
